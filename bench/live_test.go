package bench_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/graph/live"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/events"
	"github.com/procsvc/procsvc/internal/server"
)

// TestLiveToolDeliversEveryEvent runs the live tool briefly on each
// transport against a real server on SQLite: every event of every
// acknowledged write reaches every subscriber, without errors.
func TestLiveToolDeliversEveryEvent(t *testing.T) {
	for _, transport := range []string{bench.TransportSSE, bench.TransportWS} {
		t.Run(transport, func(t *testing.T) {
			db := dbtest.Open(t, "sqlite")
			seeded, err := bench.Seed(context.Background(), db.Client, "Live", "LIV", bench.Shape{Procedures: 30, Projects: 2, Categories: 2, Members: 2, MaxComments: 1}, 7)
			if err != nil {
				t.Fatal(err)
			}
			hub := events.NewHub(events.HubOptions{})
			svc := core.New(db.Client, core.WithAnnouncer(server.Announcer(db, hub)), core.WithLockPolicy(core.LockPolicyFor(db.Dialect)))
			ts := httptest.NewServer(server.NewHandler(server.Deps{DB: db, Service: svc, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
				Hub: hub, Live: live.Options{MaxPerToken: 50, WebSocketsPerToken: 50}}))
			t.Cleanup(ts.Close)
			// Before the server closes (cleanups run last first): ends the streams.
			t.Cleanup(hub.Close)
			cfg := bench.LiveConfig{URL: ts.URL, Token: seeded.AdminToken, Subscribers: 50, WriteRate: 10,
				Duration: 1500 * time.Millisecond, Transport: transport, Sample: 20}
			rep, err := bench.Live(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			rep.Print(&out, cfg)
			t.Log(out.String())
			if rep.Acked == 0 || rep.Acked != rep.Writes || len(rep.Errors) != 0 {
				t.Fatalf("writes %d, acked %d, errors %v", rep.Writes, rep.Acked, rep.Errors)
			}
			if rep.Expected != rep.Acked*50 || rep.Received != rep.Expected || rep.Missed != 0 || rep.Extra != 0 {
				t.Fatalf("events not all delivered:\n%s", out.String())
			}
			if rep.P50 <= 0 || rep.Max < rep.P99 || rep.WriteP50 <= 0 {
				t.Fatalf("latencies not measured:\n%s", out.String())
			}
		})
	}
}
