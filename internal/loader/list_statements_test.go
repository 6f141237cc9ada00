package loader_test

import (
	"testing"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/server"
)

// The no-N+1 guard of the dataloaders, through the whole handler over both
// faces: a list page costs the same few statements whatever its size.

// MaxListStatements is the most SQL a list page may cost, whatever its size:
// token lookup, page with its total, categories, members, projects, comments.
const MaxListStatements = 6

// TestProcedureListStatementCount proves there is no N+1: a page of 100
// procedures with every nested edge costs the same few statements as a page
// of 10, and so does a page of 100 showing two views of each procedure's
// comments (read together, in one statement).
func TestProcedureListStatementCount(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			h := apitest.NewLists(t, dialect, bench.Shape{Procedures: 300, Projects: 7, Categories: 5, Members: 6, MaxComments: 3}, server.Deps{})
			// The first use of a token records lastUsedAt (and bumps the
			// workspace version); the second fills the totals cache for
			// that version. The steady state measured below is what a
			// frontend paging through a list pays.
			h.GraphQLList(t, apitest.ListQuery, 1)
			h.GraphQLList(t, apitest.ListQuery, 1)
			counts := map[int]int64{}
			for _, first := range []int{10, 100} {
				out, n := h.GraphQLList(t, apitest.ListQuery, first)
				if got := len(out.Data.Procedures.Nodes); got != first {
					t.Fatalf("first=%d returned %d procedures", first, got)
				}
				if out.Data.Procedures.TotalCount != 300 {
					t.Fatalf("totalCount = %d, want 300", out.Data.Procedures.TotalCount)
				}
				withComments := 0
				for _, p := range out.Data.Procedures.Nodes {
					if p.Category == nil || p.Doer == nil || p.Project == nil {
						t.Fatalf("procedure %s is missing an edge", p.ID)
					}
					if len(p.Comments.Nodes) > 0 {
						withComments++
					}
				}
				if withComments == 0 {
					t.Fatalf("no procedure had comments: the comments loader went untested")
				}
				counts[first] = n
				t.Logf("%s: list of %d costs %d statements", dialect, first, n)
			}
			if counts[100] > MaxListStatements || counts[100] != counts[10] {
				t.Fatalf("statements: 10 → %d, 100 → %d; want equal and ≤ %d", counts[10], counts[100], MaxListStatements)
			}
			// Its categories, members and projects may all come from what
			// the pages before read (shared across reads of a version).
			out, n := h.GraphQLList(t, apitest.TwoViewsQuery, 100)
			if len(out.Data.Procedures.Nodes) != 100 || n > counts[10] {
				t.Fatalf("a page of 100 with two views of the comments: %d procedures, %d statements; want 100 and at most %d", len(out.Data.Procedures.Nodes), n, counts[10])
			}
		})
	}
}

// TestProcedureListStatementCountREST is the same proof for GET /procedures,
// which reaches the dataloaders through the same resolvers.
func TestProcedureListStatementCountREST(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			h := apitest.NewLists(t, dialect, bench.Shape{Procedures: 300, Projects: 7, Categories: 5, Members: 6, MaxComments: 3}, server.Deps{})
			h.RESTList(t, 1)
			h.RESTList(t, 1)
			counts := map[int]int64{}
			for _, limit := range []int{10, 100} {
				out, n := h.RESTList(t, limit)
				if len(out.Data) != limit || out.Meta.Total != 300 {
					t.Fatalf("limit=%d: %d items, total %d", limit, len(out.Data), out.Meta.Total)
				}
				for _, p := range out.Data {
					if p.Category == nil || p.Doer == nil || p.Project == nil || p.Comments == nil {
						t.Fatalf("procedure %s is missing an edge", p.ID)
					}
				}
				counts[limit] = n
				t.Logf("%s: GET /procedures?limit=%d costs %d statements", dialect, limit, n)
			}
			if counts[100] > MaxListStatements || counts[100] != counts[10] {
				t.Fatalf("statements: 10 → %d, 100 → %d; want equal and ≤ %d", counts[10], counts[100], MaxListStatements)
			}
		})
	}
}
