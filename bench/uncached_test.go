package bench_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/server"
)

// Under writes every read misses the response cache (each write bumps the
// workspace version its entries are keyed by), so what a list page costs to
// compute afresh is what write-heavy workloads pay per read. These
// benchmarks pin that cost with the cache configured off, as
// --response-cache-mb 0 does, and fail if a response was a replay. Besides
// ns/op they report cpu-ns/op, the process's CPU time per page, which is the
// figure to compare on a machine busy with other work.

// BenchmarkProcedureListRESTUncached computes GET /procedures?limit=50 with
// every nested edge on every iteration.
func BenchmarkProcedureListRESTUncached(b *testing.B) {
	benchmarkUncached(b, func(h *apitest.Lists) *http.Request { return h.RESTRequest(50) })
}

// BenchmarkProcedureListGraphQLUncached computes apitest.ListQuery's page of 50 on
// every iteration.
func BenchmarkProcedureListGraphQLUncached(b *testing.B) {
	benchmarkUncached(b, func(h *apitest.Lists) *http.Request { return h.GraphQLRequest(apitest.ListQuery, 50) })
}

func benchmarkUncached(b *testing.B, request func(*apitest.Lists) *http.Request) {
	for _, dialect := range dbtest.Dialects(b) {
		b.Run(dialect, func(b *testing.B) {
			h := apitest.NewLists(b, dialect, bench.Shape{Procedures: 10_000, Projects: 50, Categories: 30, Members: 20, MaxComments: 3},
				server.Deps{ResponseCacheBytes: 0})
			// Warm up: the token's first use records lastUsedAt, the
			// second fills the core's totals cache for this version.
			for range 2 {
				h.Handler.ServeHTTP(httptest.NewRecorder(), request(h))
			}
			start := h.DB.Statements()
			cpuStart, cpuOK := processCPU()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.Handler.ServeHTTP(rec, request(h))
				if rec.Code != http.StatusOK || rec.Header().Get("X-Cache") != "" {
					b.Fatalf("status %d, X-Cache %q: %s", rec.Code, rec.Header().Get("X-Cache"), rec.Body.String())
				}
			}
			b.StopTimer()
			if cpuEnd, ok := processCPU(); ok && cpuOK {
				b.ReportMetric(float64(cpuEnd-cpuStart)/float64(b.N), "cpu-ns/op")
			}
			b.ReportMetric(float64(h.DB.Statements()-start)/float64(b.N), "stmts/op")
		})
	}
}
