package graph_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// TestOperationNameRefusalNamesTheOperations: a document of several
// operations sent without operationName, or with a name it does not hold,
// is refused with validation_failed naming the operations it holds (at
// most ten, then how many more), over POST and GET; with one of its names
// it runs. gqlgen's own answer was "operation  not found".
func TestOperationNameRefusalNamesTheOperations(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		auth := bearer(w.AdminToken)
		const two = "query A { viewer { id } } query B { workspace { id } }"
		var twelve strings.Builder
		for i := range 12 {
			fmt.Fprintf(&twelve, "query Q%d { viewer { id } } ", i)
		}
		for _, tc := range []struct {
			name, query, operation string
			want                   []string // in the message; none: it runs
		}{
			{"NoName", two, "", []string{"the document holds 2 operations (A, B)", "operationName"}},
			{"UnknownName", two, "C", []string{`no operation named "C"`, "it holds A, B"}},
			{"Named", two, "B", nil},
			{"Many", twelve.String(), "", []string{"12 operations (Q0, Q1,", "Q9 and 2 more)"}},
			{"OneUnnamed", "{ viewer { id } }", "", nil},
		} {
			body, _ := json.Marshal(map[string]string{"query": tc.query, "operationName": tc.operation})
			get := "/graphql?query=" + url.QueryEscape(tc.query)
			if tc.operation != "" {
				get += "&operationName=" + tc.operation
			}
			for _, r := range []*apitest.GQLResponse{
				rawGraphQL(t, s, "POST", "/graphql", auth, "application/json", body),
				rawGraphQL(t, s, "GET", get, auth, "", nil),
			} {
				if tc.want == nil {
					if len(r.Errors) > 0 || r.Status != 200 {
						t.Errorf("%s: status %d, errors %+v; want it run", tc.name, r.Status, r.Errors)
					}
					continue
				}
				if r.Status != 400 || r.Code() != "validation_failed" {
					t.Errorf("%s: status %d, errors %+v; want 400 validation_failed", tc.name, r.Status, r.Errors)
					continue
				}
				for _, want := range tc.want {
					if !strings.Contains(r.Errors[0].Message, want) {
						t.Errorf("%s: %q lacks %q", tc.name, r.Errors[0].Message, want)
					}
				}
			}
		}
	})
}
