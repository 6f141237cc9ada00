package graph_test

// A procedure's comments are read without the columns no field of their
// view shows (loader.CommentSkip, docs/performance.md, "Columns a page
// shows"): every field must answer as it does when the same comments are
// read whole.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/graph"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/server"
)

func TestPartialCommentsAnswerAsWholeOnes(t *testing.T) {
	selections := fieldSelections(t, "Comment", 6)
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		// Without the response cache, which would answer the second read
		// of a document with the first's answer.
		s := apitest.StartWith(t, db, server.Deps{ResponseCacheBytes: -1})
		f := newNestFixture(t, s, db)
		// Comments by two authors, some edited (updatedAt past createdAt),
		// on procedures of every size: none, fewer than a window, more.
		for i, p := range f.procs[:4] {
			for j := 0; j < 2*i; j++ {
				token := f.w.MemberToken
				if j%2 == 1 {
					token = f.doerToken
				}
				id := addComment(t, s, token, p.ID, fmt.Sprintf("comment %d of %d", j, i))
				if j%3 == 0 {
					var out map[string]any
					ok(t, s.GraphQL(t, token, `mutation($id: ID!) { updateComment(id: $id, input: {text: "edited"}) { id } }`, obj("id", id)), &out)
				}
			}
		}
		procedure := f.procs[3].ID
		// Each document's comments, reached every way a page reaches them:
		// a nested list, the top-level list, one procedure, on nodes and
		// on edges, from either end.
		documents := map[string]string{
			"Nested": `{ projects(first: 6) { nodes { id procedures(first: 20) { nodes { id comments(first: 4) { nodes { SEL } } } } } } }`,
			"NestedEdgesNewest": `{ projects(first: 6) { nodes { id procedures(first: 20) { edges { node { id
				comments(last: 3) { edges { cursor node { SEL } } } } } } } } }`,
			"TopLevel": `{ procedures(first: 50) { nodes { id comments(last: 5) { totalCount nodes { SEL } } } } }`,
			"One":      `{ procedure(id: "` + procedure + `") { comments(first: 2) { nodes { SEL } } } }`,
		}
		for name, doc := range documents {
			for field, sel := range selections {
				t.Run(name+"/"+field, func(t *testing.T) {
					partial, whole := bothWays(t, s, f.w.ViewToken, strings.ReplaceAll(doc, "SEL", sel))
					if partial != whole {
						t.Fatalf("%s:\npartial %s\nwhole   %s", sel, partial, whole)
					}
					if field == "text" && !strings.Contains(partial, `"comment `) {
						t.Fatal("no comment in the answer: nothing is tested")
					}
				})
			}
		}
		// Fields reached through fragments, aliases and directives count,
		// and so does another view of the same procedures' comments in the
		// same document, which the first view's read must not serve
		// without the columns it shows.
		for name, doc := range map[string]string{
			"InlineFragment": `{ procedures(first: 50) { nodes { id comments(first: 4) { nodes { id ... on Comment { updatedAt } } } } } }`,
			"NamedFragment": `{ procedures(first: 50) { nodes { id comments(first: 4) { nodes { ...C } } } } }
				fragment C on Comment { text author { name } }`,
			"NodeFragment": `{ procedures(first: 50) { nodes { id comments(first: 4) { nodes { ... on Node { id } ... on Comment { updatedAt } } } } } }`,
			"Alias":        `{ procedures(first: 50) { nodes { id comments(first: 4) { nodes { id edited: updatedAt by: author { id } } } } } }`,
			"Directives":   `{ procedures(first: 50) { nodes { id comments(first: 4) { nodes { id updatedAt @include(if: true) author @skip(if: false) { id } } } } } }`,
			"SkippedField": `{ procedures(first: 50) { nodes { id comments(first: 4) { nodes { id updatedAt @skip(if: true) } } } } }`,
			"TwoViews":     `{ procedures(first: 50) { nodes { id a: comments(first: 4) { nodes { id } } b: comments(first: 4) { nodes { updatedAt } } } } }`,
			"AnotherField": `{ procedures(first: 50) { nodes { id comments(first: 4) { nodes { id } } } }
				procedure(id: "` + procedure + `") { comments(first: 4) { nodes { author { id } updatedAt } } } }`,
			"NestedAndTop": `{ projects(first: 6) { nodes { procedures(first: 20) { nodes { id comments(last: 4) { nodes { text } } } } } }
				procedures(first: 50) { nodes { id comments(last: 4) { nodes { text updatedAt author { name } } } } } }`,
		} {
			t.Run(name, func(t *testing.T) {
				if partial, whole := bothWays(t, s, f.w.ViewToken, doc); partial != whole {
					t.Fatalf("partial %s\nwhole   %s", partial, whole)
				}
			})
		}
	})
}

// bothWays is the answer to doc read as procsvc reads it, then with every
// comment read whole (graph.ReadWholeComments), each without errors.
func bothWays(t *testing.T, s *apitest.Server, token, doc string) (partial, whole string) {
	t.Helper()
	read := func() string {
		var out json.RawMessage
		ok(t, s.GraphQL(t, token, doc, nil), &out)
		return string(out)
	}
	partial = read()
	graph.ReadWholeComments(true)
	defer graph.ReadWholeComments(false)
	return partial, read()
}
