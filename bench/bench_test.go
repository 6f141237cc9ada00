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

// The procedure list page over each face, served by the whole handler over a
// workspace of 10 000 procedures plus a noise workspace (apitest.Lists). The
// statement counts they report are guarded by internal/loader's
// list_statements_test.go.

// BenchmarkProcedureListREST is BenchmarkProcedureListGraphQL's page through
// GET /procedures?limit=50.
func BenchmarkProcedureListREST(b *testing.B) {
	for _, dialect := range dbtest.Dialects(b) {
		b.Run(dialect, func(b *testing.B) {
			h := apitest.NewLists(b, dialect, bench.Shape{Procedures: 10_000, Projects: 50, Categories: 30, Members: 20, MaxComments: 3}, server.Deps{})
			h.RESTList(b, 50)
			start := h.DB.Statements()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.Handler.ServeHTTP(rec, h.RESTRequest(50))
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d: %s", rec.Code, rec.Body.String())
				}
			}
			b.ReportMetric(float64(h.DB.Statements()-start)/float64(b.N), "stmts/op")
		})
	}
}

// BenchmarkProcedureListGraphQL serves the 50-procedure list page with every
// nested edge through the whole handler (auth, GraphQL, dataloaders) over a
// workspace of 10 000 procedures plus a noise workspace.
func BenchmarkProcedureListGraphQL(b *testing.B) {
	for _, dialect := range dbtest.Dialects(b) {
		b.Run(dialect, func(b *testing.B) {
			h := apitest.NewLists(b, dialect, bench.Shape{Procedures: 10_000, Projects: 50, Categories: 30, Members: 20, MaxComments: 3}, server.Deps{})
			h.GraphQLList(b, apitest.ListQuery, 50)
			start := h.DB.Statements()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.Handler.ServeHTTP(rec, h.GraphQLRequest(apitest.ListQuery, 50))
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d: %s", rec.Code, rec.Body.String())
				}
			}
			b.ReportMetric(float64(h.DB.Statements()-start)/float64(b.N), "stmts/op")
		})
	}
}
