package webhooks_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/webhooks"
)

// BenchmarkFanOut: b.N events, appended to the log as writes append them
// (one transaction each, bumping the workspace's version), at
// PROCSVC_BENCH_RATE events per second (default 1000), each to be sent to
// 10 endpoints on local receivers. It reports the deliveries per second
// from the first event's commit to the last receipt, and the latency from
// each event's commit (its created_at) to its receipt: p50 and p99. The
// issue's goal: 1000 events/s to 10 endpoints, p99 under 1 s.
//
//	go test ./internal/webhooks -run '^$' -bench FanOut -benchtime 10000x
func BenchmarkFanOut(b *testing.B) {
	rate := 1000.0
	if s := os.Getenv("PROCSVC_BENCH_RATE"); s != "" {
		var err error
		if rate, err = strconv.ParseFloat(s, 64); err != nil || rate <= 0 {
			b.Fatalf("PROCSVC_BENCH_RATE=%q: want events per second", s)
		}
	}
	for _, dialect := range dbtest.Dialects(b) {
		b.Run(dialect, func(b *testing.B) { benchFanOut(b, dialect, rate) })
	}
}

func benchFanOut(b *testing.B, dialect string, rate float64) {
	const endpoints = 10
	db := dbtest.Open(b, dialect)
	f := setup(b, db)
	var (
		committed sync.Map // event id → created_at
		mu        sync.Mutex
		latencies []time.Duration
		received  atomic.Int64
		last      atomic.Int64 // unix nanos of the last receipt
		done      = make(chan struct{})
		want      = int64(b.N * endpoints)
		seen      sync.Map // endpoint+event → true
		dupes     atomic.Int64
	)
	handler := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id := r.Header.Get(webhooks.HeaderEventID)
			now := time.Now()
			if _, dup := seen.LoadOrStore(name+id, true); dup {
				dupes.Add(1)
				w.WriteHeader(http.StatusOK)
				return
			}
			if at, ok := committed.Load(id); ok {
				mu.Lock()
				latencies = append(latencies, now.Sub(at.(time.Time)))
				mu.Unlock()
			}
			last.Store(now.UnixNano())
			if received.Add(1) == want {
				close(done)
			}
			w.WriteHeader(http.StatusOK)
		})
	}
	for i := range endpoints {
		srv := httptest.NewServer(handler(strconv.Itoa(i)))
		b.Cleanup(srv.Close)
		f.endpoint(b, srv.URL, endpointOpts{})
	}
	d := webhooks.New(db.Client, db.Dialect, webhooks.Options{AllowPrivate: true})
	d.Start()
	b.Cleanup(d.Close)

	ws := f.boot.Workspace.ID
	b.ResetTimer()
	begin := time.Now()
	const producers = 4
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := p; i < b.N; i += producers {
				if wait := time.Until(begin.Add(time.Duration(float64(i) / rate * float64(time.Second)))); wait > 0 {
					time.Sleep(wait)
				}
				id, at := ids.New(ids.KindEvent), time.Now().UTC().Truncate(time.Microsecond)
				committed.Store(id.String(), at) // before its commit: a receipt may come before Store returns
				if err := appendEvent(db, ws, id, at); err != nil {
					b.Error(err)
					return
				}
				d.Notify()
			}
		}()
	}
	wg.Wait()
	produced := time.Since(begin)
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("%d of %d deliveries received after 5 minutes", received.Load(), want)
	}
	elapsed := time.Unix(0, last.Load()).Sub(begin)
	b.StopTimer()
	slices.Sort(latencies)
	pct := func(p float64) float64 {
		return latencies[min(len(latencies)-1, int(p*float64(len(latencies))))].Seconds() * 1000
	}
	b.ReportMetric(float64(b.N)/produced.Seconds(), "events/s")
	b.ReportMetric(float64(want)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(pct(0.5), "p50_ms")
	b.ReportMetric(pct(0.99), "p99_ms")
	b.ReportMetric(float64(dupes.Load()), "duplicates")
}

// appendEvent appends one event as a write does: its workspace's version
// bumped and the event logged at it, in one transaction (on PostgreSQL
// one statement, as the core's field updates do it).
func appendEvent(db *database.DB, ws, id uuid.UUID, at time.Time) error {
	ctx := context.Background()
	args := []any{ws, id, string(core.EventProcedureUpdated), ids.New(ids.KindProcedure), at, `[{"field":"priority","before":"LOW","after":"HIGH"}]`}
	if db.Dialect == "postgres" {
		_, err := db.SQL.ExecContext(ctx, `WITH "b" AS (UPDATE "workspaces" SET "version" = "version" + 1 WHERE "id" = $1 RETURNING "version")
INSERT INTO "events" ("id", "workspace_id", "version", "kind", "entity_id", "created_at", "changes") SELECT $2, $1, "b"."version", $3, $4, $5, $6 FROM "b"`, args...)
		return err
	}
	tx, err := db.SQL.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	var version int64
	if err = tx.QueryRowContext(ctx, `UPDATE "workspaces" SET "version" = "version" + 1 WHERE "id" = ? RETURNING "version"`, ws).Scan(&version); err == nil {
		_, err = tx.ExecContext(ctx, `INSERT INTO "events" ("id", "workspace_id", "version", "kind", "entity_id", "created_at", "changes") VALUES (?, ?, ?, ?, ?, ?, ?)`,
			id, ws, version, args[2], args[3], at, args[5])
	}
	if err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
