package graph_test

import (
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// TestGraphQLPageSizeLimit: every GraphQL connection takes at most 100 per
// page (docs/design.md §7), inline or through variables, and the refusal runs no SQL
// beyond authentication; REST's other lists keep their own maximum of 500.
func TestGraphQLPageSizeLimit(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Pages", "PGS")
		cases := []struct {
			name  string
			query string
			vars  map[string]any
			ok    bool
		}{
			{"ProjectsFirst100", `{ projects(first: 100) { totalCount } }`, nil, true},
			{"ErrProjectsFirst101", `{ projects(first: 101) { totalCount } }`, nil, false},
			{"ErrMembersLast500", `{ members(last: 500) { totalCount } }`, nil, false},
			{"ErrCategoriesViaVariable", `query($n: Int) { categories(first: $n) { totalCount } }`, map[string]any{"n": 200}, false},
			{"ErrInsideFragment", `query { ...F } fragment F on Query { procedures(first: 101) { totalCount } }`, nil, false},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				before := db.Statements()
				res := s.GraphQL(t, w.ViewToken, tc.query, tc.vars)
				if tc.ok {
					if res.Code() != "" {
						t.Fatalf("unexpected error: %+v", res.Errors)
					}
					return
				}
				if res.Code() != "validation_failed" || res.Status != 400 {
					t.Fatalf("got %d %q: %+v", res.Status, res.Code(), res.Errors)
				}
				if f := res.Errors[0].Extensions.Fields; len(f) != 1 || (f[0].Field != "first" && f[0].Field != "last") {
					t.Fatalf("error does not name first/last: %+v", res.Errors[0])
				}
				if n := db.Statements() - before; n > 2 {
					t.Fatalf("a refused page size ran %d statements; only authentication may run", n)
				}
			})
		}
	})
}
