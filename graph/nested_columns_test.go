package graph_test

// A nested list reads only the columns its fields show (core.ProcedureSkip,
// docs/performance.md, "Columns a page shows"): its partial procedures must
// answer every field exactly as the top-level list, which reads whole
// procedures, answers it.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/procsvc/procsvc/graph/generated"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// procedureSelections is, for every field of the Procedure type as the
// schema has it (so a field added later is tested too), a selection of it
// alone: with an object's id, a connection's total and first node, or a
// scalar as it is.
func procedureSelections(t *testing.T) map[string]string { return fieldSelections(t, "Procedure", 20) }

// fieldSelections is procedureSelections for the fields of typ, of which
// there must be at least least.
func fieldSelections(t *testing.T, typ string, least int) map[string]string {
	t.Helper()
	schema := generated.NewExecutableSchema(generated.Config{}).Schema()
	out := map[string]string{}
	for _, f := range schema.Types[typ].Fields {
		if strings.HasPrefix(f.Name, "__") {
			continue
		}
		out[f.Name] = f.Name + subSelection(schema, schema.Types[f.Type.Name()])
	}
	if len(out) < least {
		t.Fatalf("only %d fields of %s found", len(out), typ)
	}
	return out
}

// subSelection is what a field of type typ selects under it: nothing for a
// scalar or an enum, else the id, or a connection's total and its nodes'
// ids, or the type's name.
func subSelection(schema *ast.Schema, typ *ast.Definition) string {
	if typ.Kind == ast.Scalar || typ.Kind == ast.Enum {
		return ""
	}
	switch {
	case typ.Fields.ForName("id") != nil:
		return " { id }"
	case typ.Fields.ForName("totalCount") != nil && typ.Fields.ForName("nodes") != nil:
		return " { totalCount nodes { __typename } }"
	}
	return " { __typename }"
}

func TestNestedPartialProceduresAnswerAsWholeOnes(t *testing.T) {
	selections := procedureSelections(t)
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		f := newNestFixture(t, s, db)
		// Every column of some procedure differs from its zero value: a
		// field answered from a column left unread would differ.
		for i, p := range f.procs[:6] {
			var out map[string]any
			ok(t, s.GraphQL(t, f.w.MemberToken, `mutation($id: ID!, $in: UpdateProcedureInput!) { updateProcedure(id: $id, input: $in) { id } }`,
				obj("id", p.ID, "in", obj("content", fmt.Sprintf("steps of %d", i), "captureId", fmt.Sprintf("cap-%d", i),
					"displayVideo", i%2 == 0, "isFineTunedData", i%2 == 1))), &out)
		}
		addComment(t, s, f.w.MemberToken, f.procs[0].ID, "a comment")
		project := f.parent["Project"][12]
		orders := []string{"CREATED_AT", "DUE_AT", "NAME", "PROJECT_NAME"}

		// page reads the nested list of the projects, selecting sel on its
		// nodes (or on its edges' nodes), and returns the project's page:
		// its nodes and end cursor.
		page := func(t *testing.T, sel, order string, after *string, onEdges bool) (json.RawMessage, string) {
			t.Helper()
			shown := "nodes { " + sel + " }"
			if onEdges {
				shown = "edges { node { " + sel + " } }"
			}
			q := `query($order: ProcedureOrder, $after: String) { projects(first: 6) { nodes { id procedures(first: 5, after: $after, orderBy: $order) {
				pageInfo { endCursor } ` + shown + ` } } } }`
			if after != nil {
				q = `query($order: ProcedureOrder, $after: String, $id: ID!) { project(id: $id) { id procedures(first: 5, after: $after, orderBy: $order) {
				pageInfo { endCursor } ` + shown + ` } } }`
			}
			var out struct {
				Projects struct{ Nodes []json.RawMessage }
				Project  json.RawMessage
			}
			ok(t, s.GraphQL(t, f.w.ViewToken, q, obj("order", obj("field", order, "direction", "ASC"), "after", after, "id", project)), &out)
			parents := out.Projects.Nodes
			if after != nil {
				parents = []json.RawMessage{out.Project}
			}
			for _, raw := range parents {
				var p struct {
					ID         string
					Procedures struct {
						PageInfo struct{ EndCursor *string }
						Nodes    json.RawMessage
						Edges    []struct{ Node json.RawMessage }
					}
				}
				if err := json.Unmarshal(raw, &p); err != nil {
					t.Fatal(err)
				}
				if p.ID != project {
					continue
				}
				nodes := p.Procedures.Nodes
				if onEdges {
					var b bytes.Buffer
					b.WriteByte('[')
					for i, e := range p.Procedures.Edges {
						if i > 0 {
							b.WriteByte(',')
						}
						b.Write(e.Node)
					}
					b.WriteByte(']')
					nodes = b.Bytes()
				}
				return nodes, deref(p.Procedures.PageInfo.EndCursor)
			}
			t.Fatalf("project %s not in the answer", project)
			return nil, ""
		}
		// whole is the top-level list's page of the project, which reads
		// whole procedures.
		whole := func(t *testing.T, sel, order string, page int) json.RawMessage {
			t.Helper()
			var out struct {
				Procedures struct{ Nodes []json.RawMessage }
			}
			ok(t, s.GraphQL(t, f.w.ViewToken, `query($order: ProcedureOrder, $filter: ProcedureFilter) { procedures(first: 100, orderBy: $order, filter: $filter) {
				nodes { `+sel+` } } }`, obj("order", obj("field", order, "direction", "ASC"), "filter", obj("projectId", project))), &out)
			from, to := 5*page, min(5*page+5, len(out.Procedures.Nodes))
			var b bytes.Buffer
			b.WriteByte('[')
			for i, n := range out.Procedures.Nodes[from:to] {
				if i > 0 {
					b.WriteByte(',')
				}
				b.Write(n)
			}
			b.WriteByte(']')
			return b.Bytes()
		}
		compact := func(raw json.RawMessage) string {
			var b bytes.Buffer
			if err := json.Compact(&b, raw); err != nil {
				t.Fatal(err)
			}
			return b.String()
		}
		check := func(t *testing.T, sel string) {
			t.Helper()
			for _, order := range orders {
				for _, onEdges := range []bool{false, true} {
					nodes, end := page(t, sel, order, nil, onEdges)
					if got, want := compact(nodes), compact(whole(t, sel, order, 0)); got != want {
						t.Fatalf("%s by %s (edges %v):\nnested    %s\ntop-level %s", sel, order, onEdges, got, want)
					}
					// The cursor of a partial procedure pages on as a whole
					// one's would.
					next, _ := page(t, sel, order, &end, onEdges)
					if got, want := compact(next), compact(whole(t, sel, order, 1)); got != want {
						t.Fatalf("%s by %s (edges %v), second page:\nnested    %s\ntop-level %s", sel, order, onEdges, got, want)
					}
				}
			}
		}
		for name, sel := range selections {
			t.Run(name, func(t *testing.T) { check(t, "id "+sel) })
		}
		// Fields reached through fragments, aliases and directives count.
		for name, sel := range map[string]string{
			"InlineFragment":   `id ... on Procedure { content }`,
			"NodeFragment":     `... on Node { id } ... on Procedure { captureId displayVideo }`,
			"NamedFragment":    `id ...F`,
			"Alias":            `id text: content when: updatedAt`,
			"IncludedField":    `id content @include(if: true) name @skip(if: false)`,
			"SkippedAndShown":  `id content @skip(if: true) isFineTunedData`,
			"CardFields":       `id shortId name priority state dueAt category { id } doer { id } project { id }`,
			"EveryScalarField": `id shortId name priority state content categoryId doerId creatorId position dueAt createdAt updatedAt projectId workspaceId captureId displayVideo isFineTunedData`,
		} {
			t.Run(name, func(t *testing.T) {
				if name == "NamedFragment" {
					checkWithFragment(t, s, f, project)
					return
				}
				check(t, sel)
			})
		}
	})
}

// checkWithFragment compares a nested page selecting a named fragment with
// the top-level page selecting the same fragment.
func checkWithFragment(t *testing.T, s *apitest.Server, f *nestFixture, project string) {
	t.Helper()
	const fragment = ` fragment F on Procedure { content position creatorId number: shortId }`
	var nested struct {
		Project struct {
			Procedures struct{ Nodes json.RawMessage }
		}
	}
	ok(t, s.GraphQL(t, f.w.ViewToken, `query($id: ID!) { project(id: $id) { procedures(first: 20) { nodes { id ...F } } } }`+fragment, obj("id", project)), &nested)
	var top struct {
		Procedures struct{ Nodes json.RawMessage }
	}
	ok(t, s.GraphQL(t, f.w.ViewToken, `query($filter: ProcedureFilter) { procedures(first: 20, filter: $filter) { nodes { id ...F } } }`+fragment,
		obj("filter", obj("projectId", project))), &top)
	if !bytes.Equal(nested.Project.Procedures.Nodes, top.Procedures.Nodes) {
		t.Fatalf("fragment:\nnested    %s\ntop-level %s", nested.Project.Procedures.Nodes, top.Procedures.Nodes)
	}
}
