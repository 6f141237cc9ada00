package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/codegen/config"
)

// TestTemplatesAreTheVerifiedOnes fails as generation would when the gqlgen
// this module builds with changed a template the plugin depends on: a
// gqlgen upgrade fails `go test ./...` too, not only `go generate`.
func TestTemplatesAreTheVerifiedOnes(t *testing.T) {
	dir, err := gqlgenDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := checkTemplates(dir); err != nil {
		t.Fatal(err)
	}
}

// TestChangedTemplateIsNamed: a change to one template fails the check
// with an error naming that template, and only it.
func TestChangedTemplateIsNamed(t *testing.T) {
	src, err := gqlgenDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tpl := range verifiedTemplates {
		b, err := os.ReadFile(filepath.Join(src, filepath.FromSlash(tpl.name)))
		if err != nil {
			t.Fatal(err)
		}
		if tpl.name == objectTemplate {
			b = append(b, "\n{{/* upgraded */}}\n"...)
		}
		dst := filepath.Join(dir, filepath.FromSlash(tpl.name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	err = checkTemplates(dir)
	if !errors.Is(err, errTemplateChanged) || !strings.Contains(err.Error(), objectTemplate) {
		t.Fatalf("a changed %s: %v", objectTemplate, err)
	}
	for _, tpl := range verifiedTemplates {
		if tpl.name != objectTemplate && strings.Contains(err.Error(), tpl.name) {
			t.Fatalf("the error names %s, which did not change: %v", tpl.name, err)
		}
	}
}

// executor is the shape of what gqlgen's templates write and the rewrite
// edits: Exec (internal!.gotpl), a list marshaller (type.gotpl), an object
// marshaller (object.gotpl) and its call (type.gotpl).
const executor = `package generated

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

func (e *executableSchema) Exec(ctx context.Context) graphql.ResponseHandler {
	switch opCtx.Operation.Operation {
	case ast.Query:
		data.MarshalGQL(&buf)
	case ast.Mutation:
		data.MarshalGQL(&buf)
	case ast.Subscription:
		data.MarshalGQL(&buf)
	default:
		return nil
	}
}

func (ec *executionContext) marshalNProcedure2ᚕᚖ(ctx context.Context, sel ast.SelectionSet, v []*ent.Procedure) graphql.Marshaler {
	ret := graphql.MarshalSliceConcurrently(ctx, len(v), 0, false, func(ctx context.Context, i int) graphql.Marshaler {
		return ec._Procedure(ctx, sel, v[i])
	})
	return ret
}

func (ec *executionContext) _Procedure(ctx context.Context, sel ast.SelectionSet, obj *ent.Procedure) graphql.Marshaler {
	return graphql.Null
}
`

// rewriteExecutor runs the rewrite over src as the executor.
func rewriteExecutor(t *testing.T, src string) (string, error) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "generated.go")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	in := &inline{lists: []string{"marshalNProcedure2ᚕᚖ"}, objects: []string{"Procedure"}}
	if err := in.rewrite(&config.Config{Exec: config.ExecConfig{Filename: file}}); err != nil {
		return "", err
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), nil
}

func TestRewrite(t *testing.T) {
	out, err := rewriteExecutor(t, executor)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		// Queries and subscriptions are marshalled within their bound, a
		// mutation's response as gqlgen does.
		"case ast.Query:\n\t\tinline.MarshalInto(ctx, &buf, data)",
		"case ast.Mutation:\n\t\tdata.MarshalGQL(&buf)",
		"case ast.Subscription:\n\t\tinline.MarshalInto(ctx, &buf, data)",
		`"github.com/procsvc/procsvc/graph/internal/inline"`,
		"ec.marshalInlineSlice(ctx, sel, v, len(v), 0, false,",
		"return ec.inlineProcedure(ctx, sel, v[i])",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the rewritten executor lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "func (ec *executionContext) _Procedure(") {
		t.Errorf("gqlgen's _Procedure is still there:\n%s", out)
	}
}

// TestRewriteNamesTheChangedTemplate: when gqlgen writes something else than
// the rewrite expects, generation fails naming the template that wrote it.
func TestRewriteNamesTheChangedTemplate(t *testing.T) {
	cases := []struct {
		name, old, new, template string
	}{
		{"ExecLostACase", "\tcase ast.Subscription:\n\t\tdata.MarshalGQL(&buf)\n", "", execTemplate},
		{"ExecMarshalsOtherwise", "case ast.Query:\n\t\tdata.MarshalGQL(&buf)", "case ast.Query:\n\t\tdata.MarshalGQLv2(&buf)", execTemplate},
		{"ListMarshalsOtherwise", "graphql.MarshalSliceConcurrently(", "graphql.MarshalSliceInParallel(", typeTemplate},
		{"ListRenamed", "marshalNProcedure2ᚕᚖ(", "marshalNProcedure3ᚕᚖ(", typeTemplate},
		{"ObjectMarshallerRenamed", "_Procedure(ctx context.Context, sel", "_ProcedureV2(ctx context.Context, sel", objectTemplate},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(executor, tc.old) {
				t.Fatalf("the executor has no %q", tc.old)
			}
			_, err := rewriteExecutor(t, strings.Replace(executor, tc.old, tc.new, 1))
			if !errors.Is(err, errTemplateChanged) || !strings.Contains(err.Error(), tc.template) {
				t.Fatalf("got %v; want an error naming %s", err, tc.template)
			}
		})
	}
}
