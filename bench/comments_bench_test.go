package bench_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/ent/workspace"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/server"
	"github.com/procsvc/procsvc/internal/viewer"
)

// BenchmarkProcedureListLongComments computes GET /procedures?limit=50
// (uncached, as benchmarkUncached does) over 50 procedures that hold 10
// comments each, 20 (what a procedure embeds), 20 beside 480 000 of
// another workspace's procedures, then 10 000 each (500 000 in all): a
// procedure holds any number of comments, and a page reads only the
// newest 20 of each with its count, so the last three cost the same
// statements and bytes, and the time of reading 1 000 comments out of a
// database of 500 000. It reports resp-bytes, the size of the answer.
func BenchmarkProcedureListLongComments(b *testing.B) {
	cases := []struct {
		name        string
		each, noise int
	}{{"10", 10, 0}, {"20", 20, 0}, {"20-beside-480000", 20, 40_000}, {"10000", 10_000, 0}}
	for _, dialect := range dbtest.Dialects(b) {
		for _, c := range cases {
			b.Run(dialect+"/"+c.name, func(b *testing.B) {
				h := apitest.NewLists(b, dialect, bench.Shape{Procedures: 50, Projects: 5, Categories: 5, Members: 5}, server.Deps{ResponseCacheBytes: 0})
				ctx := viewer.System(context.Background())
				ws, err := h.DB.Client.Workspace.Query().Where(workspace.Key("BEN")).Only(ctx)
				if err != nil {
					b.Fatal(err)
				}
				procs, err := h.DB.Client.Procedure.Query().Where(procedure.WorkspaceID(ws.ID)).All(ctx)
				if err != nil || len(procs) != 50 {
					b.Fatalf("%d procedures: %v", len(procs), err)
				}
				at := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
				text := func(i int) string { return fmt.Sprintf("Comment %d: looks good", i) }
				for _, p := range procs {
					if err := bench.SeedComments(ctx, h.DB.Client, ws.ID, p.ID, p.CreatorID, c.each, at, text); err != nil {
						b.Fatal(err)
					}
				}
				if c.noise > 0 {
					// The noise workspace's 12 procedures.
					others, err := h.DB.Client.Procedure.Query().Where(procedure.WorkspaceIDNEQ(ws.ID)).All(ctx)
					if err != nil {
						b.Fatal(err)
					}
					for _, p := range others {
						if err := bench.SeedComments(ctx, h.DB.Client, p.WorkspaceID, p.ID, p.CreatorID, c.noise, at, text); err != nil {
							b.Fatal(err)
						}
					}
				}
				if dialect == "postgres" {
					if _, err := h.DB.SQL.ExecContext(ctx, "VACUUM ANALYZE"); err != nil {
						b.Fatal(err)
					}
				}
				for range 2 {
					h.Handler.ServeHTTP(httptest.NewRecorder(), h.RESTRequest(50))
				}
				start := h.DB.Statements()
				cpuStart, cpuOK := processCPU()
				var size int
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					rec := httptest.NewRecorder()
					h.Handler.ServeHTTP(rec, h.RESTRequest(50))
					if rec.Code != http.StatusOK || rec.Header().Get("X-Cache") != "" {
						b.Fatalf("status %d, X-Cache %q: %s", rec.Code, rec.Header().Get("X-Cache"), rec.Body.String())
					}
					size = rec.Body.Len()
				}
				b.StopTimer()
				if cpuEnd, ok := processCPU(); ok && cpuOK {
					b.ReportMetric(float64(cpuEnd-cpuStart)/float64(b.N), "cpu-ns/op")
				}
				b.ReportMetric(float64(h.DB.Statements()-start)/float64(b.N), "stmts/op")
				b.ReportMetric(float64(size), "resp-bytes")
			})
		}
	}
}
