package inline

import (
	"context"
	"slices"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// A field context is shared by field, within one response only, without
// the parent and result of the object it was made for; each object gets a
// copy of its own, with the selections collected for it.
func TestSharedFieldContexts(t *testing.T) {
	comments, history := &ast.Field{Alias: "comments"}, &ast.Field{Alias: "history"}
	made := &graphql.FieldContext{Object: "Procedure", Field: graphql.CollectedField{Field: comments}, IsResolver: true,
		Args: map[string]any{"first": 3}, Parent: &graphql.FieldContext{Object: "parent"}, Result: "first result"}
	if ShareFieldContext(context.Background(), made.Field, made); SharedFieldContext(context.Background(), made.Field) != nil {
		t.Fatal("shared without a response's shared field contexts")
	}
	ctx := WithSharedFields(context.Background())
	if SharedFieldContext(ctx, made.Field) != nil {
		t.Fatal("a field context before any was shared")
	}
	ShareFieldContext(ctx, made.Field, made)
	other := graphql.CollectedField{Field: comments, Selections: ast.SelectionSet{&ast.Field{Alias: "totalCount"}}}
	a, b := SharedFieldContext(ctx, other), SharedFieldContext(ctx, other)
	if a == nil || a == b || a == made {
		t.Fatalf("got %p and %p for %p: want two copies", a, b, made)
	}
	if a.Args["first"] != 3 || a.Object != "Procedure" || !a.IsResolver || a.Parent != nil || a.Result != nil || len(a.Field.Selections) != 1 {
		t.Fatalf("copy %+v", a)
	}
	if SharedFieldContext(ctx, graphql.CollectedField{Field: history}) != nil {
		t.Fatal("another field's context shared")
	}
	if SharedFieldContext(WithSharedFields(context.Background()), made.Field) != nil {
		t.Fatal("another response's context shared")
	}
}

// CollectFields collects a selection set for a set of types once per
// response, answering what graphql.CollectFields answers (the variables'
// @skip included), per selection set and per set of types; without a
// response's shared fields it is graphql.CollectFields every time.
func TestCollectFieldsOncePerResponse(t *testing.T) {
	schema := gqlparser.MustLoadSchema(&ast.Source{Input: `
		type Query { items: [Item!]! }
		interface Named { name: String! }
		type Item implements Named { id: ID! name: String! tag: String! }`})
	const query = `query($skip: Boolean!) { items { id name tag @skip(if: $skip) ... on Item { extra: id } } }`
	doc, errs := gqlparser.LoadQuery(schema, query)
	if errs != nil {
		t.Fatal(errs)
	}
	items := doc.Operations[0].SelectionSet[0].(*ast.Field).SelectionSet
	itemTypes, namedTypes := []string{"Item", "Named"}, []string{"Named"}
	names := func(fields []graphql.CollectedField) (out []string) {
		for _, f := range fields {
			out = append(out, f.Alias)
		}
		return out
	}
	for _, skip := range []bool{false, true} {
		op := &graphql.OperationContext{RawQuery: query, Doc: doc, Operation: doc.Operations[0], Variables: map[string]any{"skip": skip}}
		ctx := WithSharedFields(context.Background())
		for _, types := range [][]string{itemTypes, namedTypes} {
			want := names(graphql.CollectFields(op, items, types))
			first := CollectFields(ctx, op, items, types)
			if got := names(first); !slices.Equal(got, want) {
				t.Errorf("skip %v, types %v: collected %v; graphql.CollectFields %v", skip, types, got, want)
			}
			if again := CollectFields(ctx, op, items, types); &again[0] != &first[0] {
				t.Errorf("skip %v, types %v: collected again within the response", skip, types)
			}
		}
		if a, b := CollectFields(ctx, op, items, itemTypes), CollectFields(ctx, op, items, namedTypes); len(a) == len(b) {
			t.Errorf("skip %v: the same fields (%v) for two sets of types", skip, names(a))
		}
		if a, b := CollectFields(context.Background(), op, items, itemTypes), CollectFields(context.Background(), op, items, itemTypes); len(a) == 0 || len(a) != len(b) {
			t.Errorf("without shared fields: %v then %v", names(a), names(b))
		}
	}
}
