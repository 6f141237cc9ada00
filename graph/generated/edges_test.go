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

// plainQuery selects lists the plugin writes (listsWritten) with only plain
// fields under them, every way a document can: aliases, the same list
// twice, __typename, fragments, @skip and @include, nested in a list that
// gqlgen writes, and empty (a procedure without comments).
const plainQuery = `query Plain($first: Int!, $no: Boolean = false) {
  procedures(first: $first) {
    nodes { id __typename name dueAt ...Card n2: name state @skip(if: $no) position @include(if: $no) }
    again: nodes { shortId }
  }
  projects(first: 4) {
    nodes {
      id name __typename
      procedures(first: 3) { totalCount nodes { id priority comments(first: 2) { totalCount nodes { id text ... on Comment { createdAt } } } } }
    }
  }
}
fragment Card on Procedure { priority createdAt }`

// argEdgesQuery selects the fields with arguments the plugin resolves
// (argEdgesWritten) every way a document can: the same field with other
// arguments under aliases, from variables and literals, in a fragment
// spread in two places (one field, two selections).
const argEdgesQuery = `query ArgEdges($first: Int!, $n: Int) {
  procedures(first: $first) {
    nodes {
      id
      comments(last: 2) { totalCount nodes { id } }
      c2: comments(first: $n) { totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor } edges { cursor node { id text } } }
      ...WithComments
      history(first: 2) { totalCount nodes { kind } }
    }
    edges { cursor node { id ...WithComments fc: comments(first: 1) { totalCount } } }
  }
}
fragment WithComments on Procedure { fc: comments(first: 1) { nodes { id author { name } } } }`

// argEdgeErrorsQuery fails a field with arguments the plugin resolves: a
// cursor that is not one, an error per procedure at its field's path and
// the null carried up (the other refusals, a window too large or first
// with last, refuse the whole document first).
const argEdgeErrorsQuery = `query ArgEdgeErrors($first: Int!, $bad: String = "nope") {
  procedures(first: $first) { nodes { id cur: comments(after: $bad) { totalCount } } }
}`

// requestIDs differ from request to request; the answers are compared
// without them.
var requestIDs = regexp.MustCompile(`"requestId":"[^"]*"`)

// TestEdgesAnswerAsGqlgen: the edges the plugin writes (Procedure.category,
// doer, project, Comment.author) and the lists it writes (the nodes of
// comments, procedures and projects) answer, byte for byte, what gqlgen's
// field functions answered: the dashboard, the list page and every way of
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
				"Dashboard":     func() *http.Request { return post(h, bench.DashboardQuery, nil) },
				"List":          func() *http.Request { return h.GraphQLRequest(apitest.ListQuery, 50) },
				"Edges":         func() *http.Request { return h.GraphQLRequest(edgesQuery, 50) },
				"Deep":          func() *http.Request { return h.GraphQLRequest(deepQuery, 5) },
				"Plain":         func() *http.Request { return h.GraphQLRequest(plainQuery, 30) },
				"ArgEdges":      func() *http.Request { return h.GraphQLRequest(argEdgesQuery, 20) },
				"ArgEdgeErrors": func() *http.Request { return h.GraphQLRequest(argEdgeErrorsQuery, 20) },
			}
			compare := func(t *testing.T, wantIn ...string) {
				for name, request := range requests {
					t.Run(name, func(t *testing.T) {
						written := answer(t, h, request(), false)
						byGqlgen := answer(t, h, request(), true)
						if !bytes.Equal(written, byGqlgen) {
							t.Fatalf("written:\n%s\ngqlgen's:\n%s", written, byGqlgen)
						}
						if name == "ArgEdges" && (bytes.Contains(written, []byte(`"errors"`)) || !bytes.Contains(written, []byte(`"c2":{"totalCount":`))) {
							t.Fatalf("the fields with arguments were not all answered: %s", written)
						}
						if name == "ArgEdgeErrors" && !bytes.Contains(written, []byte(`"path":["procedures","nodes",19,"cur"]`)) {
							t.Fatalf("the errors of the fields with arguments are not at their paths: %s", written)
						}
						if name == "Plain" && (bytes.Contains(written, []byte(`"errors"`)) || !bytes.Contains(written, []byte(`"comments":{"totalCount":`))) {
							t.Fatalf("the plain lists were not all answered: %s", written)
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
