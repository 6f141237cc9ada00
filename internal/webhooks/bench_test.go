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
// (bumping the workspace's version; the events of each 10 ms in one
// transaction), at PROCSVC_BENCH_RATE events per second (default 1000),
// each to be sent to
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
	// Every tick, the events due by then are appended in one
	// transaction: one workspace's commits, one event each, top out near
	// 1000/s on this machine's PostgreSQL alone (each waits for the
	// workspace row and the WAL flush), and it is the dispatcher that is
	// measured.
	const tick = 10 * time.Millisecond
	for next := 0; next < b.N; {
		due := min(b.N, int(time.Since(begin).Seconds()*rate)+1)
		if due > next {
			batch := make([]uuid.UUID, due-next)
			at := time.Now().UTC().Truncate(time.Microsecond)
			for i := range batch {
				batch[i] = ids.New(ids.KindEvent)
				committed.Store(batch[i].String(), at) // before its commit: a receipt may come first
			}
			if err := appendEvents(db, ws, batch, at); err != nil {
				b.Fatal(err)
			}
			d.Notify()
			next = due
		}
		time.Sleep(tick)
	}
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

// appendEvents appends events as writes do, in one transaction: the
// workspace's version bumped by their number, each logged at its version.
func appendEvents(db *database.DB, ws uuid.UUID, events []uuid.UUID, at time.Time) error {
	ctx := context.Background()
	tx, err := db.SQL.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	q := `UPDATE "workspaces" SET "version" = "version" + ? WHERE "id" = ? RETURNING "version"`
	insert := `INSERT INTO "events" ("id", "workspace_id", "version", "kind", "entity_id", "created_at", "changes") VALUES (?, ?, ?, ?, ?, ?, ?)`
	if db.Dialect == "postgres" {
		q = `UPDATE "workspaces" SET "version" = "version" + $1 WHERE "id" = $2 RETURNING "version"`
		insert = `INSERT INTO "events" ("id", "workspace_id", "version", "kind", "entity_id", "created_at", "changes") VALUES ($1, $2, $3, $4, $5, $6, $7)`
	}
	var version int64
	err = tx.QueryRowContext(ctx, q, len(events), ws).Scan(&version)
	for i, id := range events {
		if err != nil {
			break
		}
		_, err = tx.ExecContext(ctx, insert, id, ws, version-int64(len(events)-1-i), string(core.EventProcedureUpdated),
			ids.New(ids.KindProcedure), at, `[{"field":"priority","before":"LOW","after":"HIGH"}]`)
	}
	if err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
