package generated_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/graph/generated"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/server"
)

// edgesQuery selects the edges the plugin writes every way a document can:
// aliases, the same edge twice, __typename, fragments and inline fragments,
// @skip and @include on the edge and under it, and comment authors.
const edgesQuery = `query Edges($first: Int!, $yes: Boolean = true, $no: Boolean = false) {
  procedures(first: $first) {
    nodes {
      id __typename
      c: category { __typename id n: name ...CategoryName }
      category @include(if: $yes) { id }
      doer { ... on Member { id name email role } removedAt @skip(if: $no) workspaceId createdAt @include(if: $no) }
      d2: doer @skip(if: $yes) { id }
      project { ...ProjectFields }
      p2: project { name name2: name createdAt }
      comments(last: 3) { nodes { id author { id name __typename } a2: author { role } } }
    }
  }
}
fragment CategoryName on Category { name createdAt }
fragment ProjectFields on Project { id name startedAt dueAt updatedAt workspaceId }`

// deepQuery selects under the edges what only gqlgen's field function
// resolves (lists with arguments): the plugin hands the edge to it.
const deepQuery = `query Deep($first: Int!) {
  procedures(first: $first) {
    nodes {
      id
      category { name procedures(first: 2) { totalCount nodes { id } } }
      doer { name assignedProcedures(first: 2) { totalCount } }
      project { name procedures(first: 1) { nodes { shortId } } }
    }
  }
}`

// requestIDs differ from request to request; the answers are compared
// without them.
var requestIDs = regexp.MustCompile(`"requestId":"[^"]*"`)

// TestEdgesAnswerAsGqlgen: the edges the plugin writes (Procedure.category,
// doer, project, Comment.author) answer, byte for byte, what gqlgen's field
// functions answered: the dashboard, the list page and every way of
// selecting them, with null edges (no category, no doer), edges the viewer
// cannot see (another workspace's category: null; its project: an error
// at the field's path, and the null carried up as the schema says).
func TestEdgesAnswerAsGqlgen(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			h := apitest.NewLists(t, dialect, bench.Shape{Procedures: 400, Projects: 6, Categories: 5, Members: 4, MaxComments: 3},
				server.Deps{ResponseCacheBytes: 0})
			exec := func(t *testing.T, sql string) {
				t.Helper()
				if _, err := h.DB.SQL.ExecContext(t.Context(), sql); err != nil {
					t.Fatal(err)
				}
			}
			const seeded, noise = `(SELECT id FROM workspaces WHERE name = 'Bench')`, `(SELECT id FROM workspaces WHERE name = 'Noise')`
			exec(t, `UPDATE procedures SET category_id = NULL WHERE number % 3 = 0`)
			exec(t, `UPDATE procedures SET doer_id = NULL WHERE number % 4 = 1`)
			exec(t, `UPDATE procedures SET category_id = (SELECT id FROM categories WHERE workspace_id = `+noise+` LIMIT 1)
				WHERE number % 5 = 2 AND workspace_id = `+seeded)
			requests := map[string]func() *http.Request{
				"Dashboard": func() *http.Request { return post(h, bench.DashboardQuery, nil) },
				"List":      func() *http.Request { return h.GraphQLRequest(apitest.ListQuery, 50) },
				"Edges":     func() *http.Request { return h.GraphQLRequest(edgesQuery, 50) },
				"Deep":      func() *http.Request { return h.GraphQLRequest(deepQuery, 5) },
			}
			compare := func(t *testing.T, wantIn ...string) {
				for name, request := range requests {
					t.Run(name, func(t *testing.T) {
						written := answer(t, h, request(), false)
						byGqlgen := answer(t, h, request(), true)
						if !bytes.Equal(written, byGqlgen) {
							t.Fatalf("written:\n%s\ngqlgen's:\n%s", written, byGqlgen)
						}
						// The dashboard lists a project's procedures, never
						// one moved to another workspace's project.
						if name == "List" || name == "Edges" {
							for _, want := range wantIn {
								if !bytes.Contains(written, []byte(want)) {
									t.Errorf("the answer has no %s: %s", want, written)
								}
							}
						}
					})
				}
			}
			t.Run("Visible", func(t *testing.T) { compare(t, `"category":null`) })
			// The two ways answering alike proves nothing if both went
			// through gqlgen: the written way must also skip gqlgen's field
			// machinery, some ten allocations an edge. The list page has
			// 50 procedures, each with a category or not, a doer or not
			// and a project: at least 50 written edges, 5 allocations
			// each at the very least.
			t.Run("WrittenPathRan", func(t *testing.T) {
				allocs := func(byGqlgen bool) float64 {
					return testing.AllocsPerRun(5, func() { answer(t, h, h.GraphQLRequest(apitest.ListQuery, 50), byGqlgen) })
				}
				written, byGqlgen := allocs(false), allocs(true)
				if saved := byGqlgen - written; saved < 50*5 {
					t.Fatalf("the written edges saved %.0f allocations of gqlgen's %.0f on the list page, want at least %d: are they written at all?", saved, byGqlgen, 50*5)
				}
				t.Logf("list page: %.0f allocations written, %.0f through gqlgen", written, byGqlgen)
			})
			// Another workspace's project: the non-null field is an error,
			// the procedure null, and so on up (nodes: [Procedure!]!).
			exec(t, `UPDATE procedures SET project_id = (SELECT id FROM projects WHERE workspace_id = `+noise+` LIMIT 1)
				WHERE number % 7 = 3 AND workspace_id = `+seeded)
			t.Run("HiddenProject", func(t *testing.T) { compare(t, `"errors":[`, `"path":[`) })
		})
	}
}

func post(h *apitest.Lists, query string, variables map[string]any) *http.Request {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": variables})
	req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+h.Token)
	return req
}

// answer is the body answering req, edges resolved by gqlgen's field
// functions or written.
func answer(t *testing.T, h *apitest.Lists, req *http.Request, byGqlgen bool) []byte {
	t.Helper()
	generated.SetEdgesByGqlgen(byGqlgen)
	defer generated.SetEdgesByGqlgen(false)
	rec := httptest.NewRecorder()
	h.Handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Body.String(), `{"`) {
		t.Fatalf("status %d: %s", rec.Code, rec.Body.String())
	}
	return requestIDs.ReplaceAll(rec.Body.Bytes(), []byte(`"requestId":""`))
}
