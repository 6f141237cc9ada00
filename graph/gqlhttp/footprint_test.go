package gqlhttp

import (
	"testing"

	"github.com/vektah/gqlparser/v2"

	"github.com/procsvc/procsvc/graph/generated"
)

// TestFootprinted pins which queries are answered from core's footprint
// alone: a procedure or a page of procedures with their fields and edges,
// through fragments too. Anything else may depend on any write.
func TestFootprinted(t *testing.T) {
	schema := generated.NewExecutableSchema(generated.Config{}).Schema()
	const edges = `id name priority category { name } doer { name email } project { name } comments { nodes { text author { name } } }`
	tests := []struct {
		name, doc string
		want      bool
	}{
		{"Page", `{ procedures(first: 5) { totalCount pageInfo { hasNextPage } edges { cursor node { ` + edges + ` } } } }`, true},
		{"Record", `query($id: ID!) { procedure(id: $id) { ` + edges + ` } }`, true},
		{"Fragments", `{ procedures { nodes { ...P ... on Procedure { state } } } } fragment P on Procedure { ` + edges + ` }`, true},
		{"Typename", `{ __typename procedures { nodes { __typename id } } }`, true},
		{"WithViewer", `{ viewer { name } procedures { totalCount } }`, false},
		{"WithNode", `query($id: ID!) { procedures { totalCount } node(id: $id) { id } }`, false},
		{"OtherList", `{ categories { nodes { name } } }`, false},
		{"Workspace", `{ workspace { name } }`, false},
		{"Introspection", `{ __schema { queryType { name } } procedures { totalCount } }`, false},
		{"Mutation", `mutation { __typename }`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, errs := gqlparser.LoadQuery(schema, tt.doc)
			if errs != nil {
				t.Fatalf("invalid document: %v", errs)
			}
			if got := footprinted(doc.Operations[0]); got != tt.want {
				t.Fatalf("footprinted = %v; want %v", got, tt.want)
			}
		})
	}
}
