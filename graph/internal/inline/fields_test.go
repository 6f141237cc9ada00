package inline

import (
	"context"
	"testing"

	"github.com/99designs/gqlgen/graphql"
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
