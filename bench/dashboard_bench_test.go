package bench_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/server"
)

// The project dashboard (bench.DashboardQuery: 20 projects × their newest
// 10 procedures × each one's oldest 5 comments, with totals at both nested
// levels) computed afresh on every iteration, the response cache off, over
// the list benchmarks' workspace (10 000 procedures in 50 projects plus a
// noise workspace). They report what benchmarkUncached does; stmts/op must
// not grow with the counts.

// BenchmarkDashboardUncached reads the dashboard again and again with
// nothing written in between: the core's totals stay cached for the
// workspace's version, so it is the dashboard's cost when reads dominate.
func BenchmarkDashboardUncached(b *testing.B) { benchmarkDashboard(b, false) }

// BenchmarkDashboardUncachedWithWrites changes the priority of one procedure
// the dashboard shows (updateProcedure, through the handler) before every
// read, so that every read follows a write: the workspace's version has
// moved, and totals and every cache keyed by it are cold. Only the reads are
// measured: ns/op, cpu-ns/op, B/op, allocs/op and stmts/op are the read's.
func BenchmarkDashboardUncachedWithWrites(b *testing.B) { benchmarkDashboard(b, true) }

func benchmarkDashboard(b *testing.B, writes bool) {
	for _, dialect := range dbtest.Dialects(b) {
		b.Run(dialect, func(b *testing.B) {
			h := apitest.NewLists(b, dialect, bench.Shape{Procedures: 10_000, Projects: 50, Categories: 30, Members: 20, MaxComments: 3},
				server.Deps{ResponseCacheBytes: 0})
			// Warm up as benchmarkUncached does; the answer also names
			// the procedures the writes change.
			var rec *httptest.ResponseRecorder
			for range 2 {
				rec = serve(b, h, dashboardRequest(h))
			}
			if err := bench.CheckDashboard(rec.Body.Bytes()); err != nil {
				b.Fatal(err)
			}
			w := newPriorityWriter(b, rec.Body.Bytes())
			var statements int64
			var cpu time.Duration
			cpuOK := true
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if writes {
					b.StopTimer()
					w.write(b, h, i)
					b.StartTimer()
				}
				before := h.DB.Statements()
				cpuStart, ok1 := processCPU()
				rec = serve(b, h, dashboardRequest(h))
				cpuEnd, ok2 := processCPU()
				statements += h.DB.Statements() - before
				cpu += cpuEnd - cpuStart
				cpuOK = cpuOK && ok1 && ok2
				if writes {
					// Every answer after a write is checked, outside
					// the measurement.
					b.StopTimer()
					if err := bench.CheckDashboard(rec.Body.Bytes()); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			}
			b.StopTimer()
			if err := bench.CheckDashboard(rec.Body.Bytes()); err != nil {
				b.Fatal(err)
			}
			if cpuOK {
				b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
			}
			b.ReportMetric(float64(statements)/float64(b.N), "stmts/op")
		})
	}
}

// dashboardRequest is a POST /graphql of bench.DashboardQuery.
func dashboardRequest(h *apitest.Lists) *http.Request {
	body, _ := json.Marshal(map[string]any{"query": bench.DashboardQuery})
	return graphQLPost(h, body)
}

func graphQLPost(h *apitest.Lists, body []byte) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+h.Token)
	return req
}

// serve runs req through the handler and fails b unless it answered 200,
// without errors, and not from the response cache.
func serve(b testing.TB, h *apitest.Lists, req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.Handler.ServeHTTP(rec, req)
	// gqlgen writes "errors" first when there are any.
	if rec.Code != http.StatusOK || rec.Header().Get("X-Cache") != "" || strings.HasPrefix(rec.Body.String(), `{"errors"`) {
		b.Fatalf("status %d, X-Cache %q: %.500s", rec.Code, rec.Header().Get("X-Cache"), rec.Body.String())
	}
	return rec
}

// priorityWriter changes the priority of the procedures a dashboard answer
// shows, in turn, each write to a priority other than the one before.
type priorityWriter struct{ shortIDs []string }

// rotation is the priorities a procedure takes in turn: starting from LOW
// (set by newPriorityWriter), every write changes it.
var rotation = []string{"MEDIUM", "HIGH", "LOW"}

func newPriorityWriter(b testing.TB, dashboard []byte) *priorityWriter {
	var out struct {
		Data struct {
			Projects struct {
				Nodes []struct {
					Procedures struct{ Nodes []struct{ ShortID string } }
				}
			}
		}
	}
	if err := json.Unmarshal(dashboard, &out); err != nil {
		b.Fatal(err)
	}
	w := &priorityWriter{}
	for _, p := range out.Data.Projects.Nodes {
		for _, pr := range p.Procedures.Nodes {
			w.shortIDs = append(w.shortIDs, pr.ShortID)
		}
	}
	if len(w.shortIDs) == 0 {
		b.Fatal("the dashboard shows no procedures")
	}
	return w
}

// setup sets every procedure's priority to LOW, the rotation's start.
func (w *priorityWriter) setup(b testing.TB, h *apitest.Lists) {
	for _, id := range w.shortIDs {
		w.update(b, h, id, "LOW")
	}
}

// write changes the priority of procedure i mod n, to the next of rotation
// (the first round starting from what setup left).
func (w *priorityWriter) write(b testing.TB, h *apitest.Lists, i int) {
	if i == 0 {
		w.setup(b, h)
	}
	n := len(w.shortIDs)
	w.update(b, h, w.shortIDs[i%n], rotation[(i/n)%len(rotation)])
}

func (w *priorityWriter) update(b testing.TB, h *apitest.Lists, shortID, priority string) {
	body, _ := json.Marshal(map[string]any{
		"query":     `mutation U($id: ID!, $in: UpdateProcedureInput!) { updateProcedure(id: $id, input: $in) { priority } }`,
		"variables": map[string]any{"id": shortID, "in": map[string]any{"priority": priority}},
	})
	rec := serve(b, h, graphQLPost(h, body))
	if !strings.Contains(rec.Body.String(), `"priority":"`+priority+`"`) {
		b.Fatalf("update %s to %s: %s", shortID, priority, rec.Body.String())
	}
}
