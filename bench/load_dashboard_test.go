package bench_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/server"
)

// TestLoadToolDashboardMix runs the dashboard mix (every read the project
// dashboard, 30% writes changing priorities) for a bounded number of
// requests on both databases: every read is the dashboard, nothing fails,
// writes verify; over REST the mix is refused, and a server answering the
// dashboard with more procedures than asked fails the run's check.
func TestLoadToolDashboardMix(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			db := dbtest.Open(t, dialect)
			seeded, err := bench.Seed(context.Background(), db.Client, "Load", "LOD", bench.Shape{Procedures: 300, Projects: 25, Categories: 3, Members: 4, MaxComments: 7}, 7)
			if err != nil {
				t.Fatal(err)
			}
			h := server.NewHandler(server.Deps{DB: db, Service: core.New(db.Client),
				Log: slog.New(slog.NewTextHandler(io.Discard, nil)), ResponseCacheBytes: 0})
			var dashboards atomic.Int64
			var corrupt atomic.Bool
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/graphql" {
					raw, _ := io.ReadAll(r.Body)
					r.Body = io.NopCloser(bytes.NewReader(raw))
					if bytes.Contains(raw, []byte("query Dashboard")) {
						dashboards.Add(1)
						if corrupt.Load() {
							w.Header().Set("Content-Type", "application/json")
							_, _ = w.Write([]byte(`{"data":{"projects":{"totalCount":1,"nodes":[{"procedures":{"totalCount":11,"nodes":[{},{},{},{},{},{},{},{},{},{},{}]}}]}}}`))
							return
						}
					}
				}
				h.ServeHTTP(w, r)
			}))
			defer ts.Close()
			cfg := bench.LoadConfig{URL: ts.URL, Token: seeded.AdminToken, Clients: 4, Duration: time.Minute,
				MaxRequests: 80, API: "graphql", Mix: bench.MixDashboard, WriteRatio: 0.3, Pool: 60}
			rep, err := bench.Load(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			rep.Print(&out, cfg)
			t.Log(out.String())
			if rep.Requests != 80 || len(rep.Errors) != 0 || rep.Reads < 30 || rep.Writes < 10 || !rep.Verified {
				t.Fatalf("requests %d (%d reads, %d writes), errors %v, verified %v", rep.Requests, rep.Reads, rep.Writes, rep.Errors, rep.Verified)
			}
			// Every read is a dashboard, plus the check before the run.
			if got := dashboards.Load(); got != int64(rep.Reads)+1 {
				t.Fatalf("%d dashboards for %d reads", got, rep.Reads)
			}
			if !strings.Contains(out.String(), "mix=dashboard pool=60") {
				t.Fatalf("report:\n%s", out.String())
			}
			if _, err := bench.Load(context.Background(), bench.LoadConfig{URL: ts.URL, Token: seeded.AdminToken, Clients: 1,
				Duration: time.Second, MaxRequests: 1, API: "rest", Mix: bench.MixDashboard}); err == nil {
				t.Fatal("the dashboard mix ran over REST")
			}
			corrupt.Store(true)
			if _, err := bench.Load(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "dashboard") {
				t.Fatalf("a wrong dashboard was not caught: %v", err)
			}
		})
	}
}
