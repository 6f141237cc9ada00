package webhooks_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent/webhookdelivery"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/webhooks"
)

// BenchmarkNeighbourLag: the review's case of one workspace's webhooks
// delaying another's. Workspace B has 50 endpoints that never answer (each
// attempt ends at the default 10 s timeout) and PROCSVC_BENCH_QUEUED
// deliveries queued for them (default 1000); workspace A has one endpoint
// that answers at once. Each of b.N rounds commits one event of A and
// measures the time from its commit to its receipt (the lag). The
// dispatcher runs with the default options (32 workers).
//
//	go test ./internal/webhooks -run '^$' -bench NeighbourLag -benchtime 5x
func BenchmarkNeighbourLag(b *testing.B) {
	queued := 1000
	if s := os.Getenv("PROCSVC_BENCH_QUEUED"); s != "" {
		var err error
		if queued, err = strconv.Atoi(s); err != nil || queued < 50 {
			b.Fatalf("PROCSVC_BENCH_QUEUED=%q: want deliveries (at least 50)", s)
		}
	}
	for _, dialect := range dbtest.Dialects(b) {
		b.Run(fmt.Sprintf("%s/queued=%d", dialect, queued), func(b *testing.B) {
			const endpoints = 50
			db := dbtest.Open(b, dialect)
			a, bb := setup(b, db), setupKey(b, db, "Neighbour", "NB")
			var hanging, arrived atomic.Int64
			stop := make(chan struct{})
			hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hanging.Add(1)
				defer hanging.Add(-1)
				select {
				case <-r.Context().Done():
				case <-stop:
				}
			}))
			b.Cleanup(hang.Close)
			b.Cleanup(func() { close(stop) })
			got := make(chan time.Time, 1)
			fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				arrived.Add(1)
				got <- time.Now()
			}))
			b.Cleanup(fast.Close)
			for i := range endpoints {
				bb.endpoint(b, fmt.Sprintf("%s/%d", hang.URL, i), endpointOpts{})
			}
			a.endpoint(b, fast.URL, endpointOpts{})
			batch := make([]uuid.UUID, queued/endpoints)
			for i := range batch {
				batch[i] = ids.New(ids.KindEvent)
			}
			if err := appendEvents(db, bb.boot.Workspace.ID, batch, time.Now().UTC().Truncate(time.Microsecond)); err != nil {
				b.Fatal(err)
			}
			d := webhooks.New(db.Client, db.Dialect, webhooks.Options{AllowPrivate: true})
			d.Start()
			b.Cleanup(d.Close)
			d.Notify()
			eventually(b, "B's deliveries queued and its endpoints hanging", func() bool {
				n, err := db.Client.WebhookDelivery.Query().Where(webhookdelivery.WorkspaceID(bb.boot.Workspace.ID)).Count(sys())
				return err == nil && n == len(batch)*endpoints && hanging.Load() >= 16
			})
			var lags []time.Duration
			b.ResetTimer()
			for range b.N {
				at := time.Now().UTC().Truncate(time.Microsecond)
				if err := appendEvents(db, a.boot.Workspace.ID, []uuid.UUID{ids.New(ids.KindEvent)}, at); err != nil {
					b.Fatal(err)
				}
				d.Notify()
				select {
				case t := <-got:
					lags = append(lags, t.Sub(at))
				case <-time.After(5 * time.Minute):
					b.Fatal("A's delivery did not arrive within 5 minutes")
				}
			}
			b.StopTimer()
			slices.Sort(lags)
			var sum time.Duration
			for _, l := range lags {
				sum += l
			}
			b.ReportMetric(float64(sum.Milliseconds())/float64(len(lags)), "mean_lag_ms")
			b.ReportMetric(float64(lags[len(lags)-1].Milliseconds()), "max_lag_ms")
			b.ReportMetric(float64(hanging.Load()), "B_hanging")
		})
	}
}
