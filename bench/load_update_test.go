package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/server"
)

// shapes records the distinct list reads the load tool sends (REST query
// strings, GraphQL LoadShape variables) and, with swallow, answers every
// priority update as done without running it.
type shapes struct {
	next    http.Handler
	swallow bool
	mu      sync.Mutex
	seen    map[string]bool
}

func (s *shapes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Query     string
		Variables map[string]json.RawMessage
	}
	if r.URL.Path == "/graphql" {
		raw, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(raw))
		_ = json.Unmarshal(raw, &body)
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/procedures" && !strings.Contains(r.URL.RawQuery, "limit=100"):
		s.record("rest " + r.URL.RawQuery)
	case strings.Contains(body.Query, "query LoadShape"):
		delete(body.Variables, "first")
		v, _ := json.Marshal(body.Variables)
		s.record("graphql " + string(v))
	case s.swallow && r.Method == http.MethodPut:
		var in map[string]any
		_ = json.NewDecoder(r.Body).Decode(&in)
		_ = json.NewEncoder(w).Encode(map[string]any{"priority": in["priority"]})
		return
	case s.swallow && strings.Contains(body.Query, "updateProcedure"):
		var in struct{ Priority string }
		_ = json.Unmarshal(body.Variables["in"], &in)
		_ = json.NewEncoder(w).Encode(map[string]any{"data": map[string]any{"updateProcedure": map[string]any{"priority": in.Priority}}})
		return
	}
	s.next.ServeHTTP(w, r)
}

func (s *shapes) record(k string) {
	s.mu.Lock()
	s.seen[k] = true
	s.mu.Unlock()
}

// TestLoadToolUpdateMix runs the realistic mix (reads over five list shapes,
// 30% writes changing the priority of existing procedures) for a bounded
// number of requests on both databases and both APIs: reads of all five
// shapes and writes both happen, nothing fails, and every updated
// procedure reads back with its last acknowledged priority. Then the same
// run against a server that acknowledges updates without running them must
// fail verification.
func TestLoadToolUpdateMix(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		for _, api := range []string{"rest", "graphql"} {
			t.Run(dialect+"/"+api, func(t *testing.T) {
				db := dbtest.Open(t, dialect)
				seeded, err := bench.Seed(context.Background(), db.Client, "Load", "LOD", bench.Shape{Procedures: 150, Projects: 3, Categories: 2, Members: 3, MaxComments: 2}, 7)
				if err != nil {
					t.Fatal(err)
				}
				rec := &shapes{seen: map[string]bool{}, next: server.NewHandler(server.Deps{DB: db, Service: core.New(db.Client),
					Log: slog.New(slog.NewTextHandler(io.Discard, nil)), ResponseCacheBytes: 16 << 20})}
				ts := httptest.NewServer(rec)
				defer ts.Close()
				cfg := bench.LoadConfig{URL: ts.URL, Token: seeded.AdminToken, Clients: 4, Duration: time.Minute,
					MaxRequests: 160, API: api, Mix: bench.MixUpdate, WriteRatio: 0.3, Pool: 120,
					// keys on one API: updates carry an Idempotency-Key too
					IdempotencyKeys: api == "graphql", Retries: 2}
				rep, err := bench.Load(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				var out bytes.Buffer
				rep.Print(&out, cfg)
				t.Log(out.String())
				if rep.Requests != 160 || rep.Reads+rep.Writes != 160 || len(rep.Errors) != 0 {
					t.Fatalf("requests %d (%d reads, %d writes), errors %v", rep.Requests, rep.Reads, rep.Writes, rep.Errors)
				}
				if rep.PoolSize != 120 || rep.Reads < 60 || rep.Writes < 20 || rep.Updated != rep.Writes || rep.Checked == 0 {
					t.Fatalf("mix not exercised: pool %d, %d reads, %d writes, %d acknowledged, %d checked", rep.PoolSize, rep.Reads, rep.Writes, rep.Updated, rep.Checked)
				}
				if len(rec.seen) != 5 {
					t.Fatalf("want reads of 5 list shapes, got %d: %v", len(rec.seen), rec.seen)
				}
				for _, line := range []string{"mix=update pool=120", "reads/s=", "read_p99=", "writes/s=", "write_p99=", "errors: none", "uncertain=0 verification=OK"} {
					if !strings.Contains(out.String(), line) {
						t.Fatalf("report lacks %q:\n%s", line, out.String())
					}
				}
				if !rep.Verified {
					t.Fatalf("verification failed:\n%s", out.String())
				}

				// Updates acknowledged but never run are caught.
				rec.swallow = true
				cfg.MaxRequests = 40
				rep, err = bench.Load(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				out.Reset()
				rep.Print(&out, cfg)
				if rep.Verified || rep.Checked == 0 || len(rep.VerifyNotes) == 0 || !strings.Contains(out.String(), "verification=FAILED") {
					t.Fatalf("lost updates not caught:\n%s", out.String())
				}
			})
		}
	}
}
