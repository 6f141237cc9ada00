package rest_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/ratelimit"
	"github.com/procsvc/procsvc/internal/server"
)

// TestRateLimitedAnswers: with the per-token rate limit on, every REST
// answer carries the RateLimit headers, a token over its limit gets
// 429 rate_limited with Retry-After and nothing runs, and both the
// successes and the refusal match the OpenAPI document (send checks every
// exchange against it).
func TestRateLimitedAnswers(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		lim, err := ratelimit.New(ratelimit.Config{Limit: ratelimit.Limit{Rate: 0.5, Burst: 2}}, ratelimit.WithClock(func() time.Time { return now }))
		if err != nil {
			t.Fatal(err)
		}
		svc := core.New(db.Client)
		ts := httptest.NewServer(server.NewHandler(server.Deps{DB: db, Service: svc, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), RateLimit: lim}))
		t.Cleanup(ts.Close)
		srv := &apitest.Server{URL: ts.URL, DB: db, Service: svc, HTTP: ts.Client()}
		e := &env{srv: srv, ws: srv.NewWorkspace(t, "Rate", "RAT")}

		wantOK(t, e.do(t, "GET", "/procedures", e.ws.MemberToken, nil))
		r := e.do(t, "POST", "/categories", e.ws.MemberToken, map[string]any{"name": "Allowed"})
		wantOK(t, r)
		// A bucket of 2 refilled at 0.5 a second: empty, it is full in 4 s.
		if r.Header.Get("RateLimit-Limit") != "2" || r.Header.Get("RateLimit-Remaining") != "0" || r.Header.Get("RateLimit-Reset") != "4" ||
			r.Header.Get("RateLimit-Policy") != "2;w=4" {
			t.Fatalf("headers of the second request: %v", r.Header)
		}
		count := func() (n int) {
			if err := db.SQL.QueryRow("SELECT count(*) FROM categories").Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		before := count()
		r = e.do(t, "POST", "/categories", e.ws.MemberToken, map[string]any{"name": "Refused"})
		wantError(t, r, http.StatusTooManyRequests, "rate_limited", "")
		// One token comes in 2 s at 0.5 per second.
		if r.Header.Get("Retry-After") != "2" || r.Header.Get("RateLimit-Remaining") != "0" || r.Header.Get("RateLimit-Policy") != "2;w=4" {
			t.Fatalf("refusal headers: %v", r.Header)
		}
		if count() != before {
			t.Fatal("a refused write changed the database")
		}
		// Errors of tokens within their limit carry the headers too.
		r = e.do(t, "GET", "/procedures/RAT-404", e.ws.ViewToken, nil)
		wantError(t, r, http.StatusNotFound, "not_found", "")
		if r.Header.Get("RateLimit-Remaining") != "1" {
			t.Fatalf("a 404's headers: %v", r.Header)
		}
	})
}
