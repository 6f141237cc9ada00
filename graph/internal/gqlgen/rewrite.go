package main

import (
	"bytes"
	"fmt"
	"go/format"
	"os"
	"slices"
	"strings"

	"github.com/99designs/gqlgen/codegen/config"
)

// The templates whose output the rewrite edits (see templates.go).
const (
	typeTemplate   = "codegen/type.gotpl"
	objectTemplate = "codegen/object.gotpl"
	execTemplate   = "codegen/internal!.gotpl"
)

// marshalCall is how gqlgen's executor (codegen/internal!.gotpl, Exec)
// marshals the data of a response into its buffer; boundedCall marshals it
// within the response's bound (graph/internal/inline: budget.go), for
// queries and for each event of a subscription. A mutation's response keeps
// gqlgen's own: its root fields are bounded one by one as they run
// (graph/gqlhttp/bound_responses.go), so that a write that committed is never answered with
// an error in place of its result.
const (
	marshalCall = "data.MarshalGQL(&buf)"
	boundedCall = "inline.MarshalInto(ctx, &buf, data)"
)

// concurrentCall is how gqlgen's template calls the concurrent marshaller;
// the rewrite keeps its arguments (worker limit, omit_panic_handler, the
// element marshaller) and adds the list's selection and value before them.
const (
	concurrentCall = "graphql.MarshalSliceConcurrently(ctx, len(v), "
	inlineCall     = "ec.marshalInlineSlice(ctx, sel, v, len(v), "
)

// rewrite applies the rewrite to the executor gqlgen wrote.
func (l *inline) rewrite(cfg *config.Config) error {
	src, err := os.ReadFile(cfg.Exec.Filename)
	if err != nil {
		return err
	}
	if src, err = boundExec(src); err != nil {
		return err
	}
	for _, name := range l.lists {
		start, end, err := function(src, name+"(ctx context.Context, sel ast.SelectionSet, v ")
		if err != nil {
			return templateChanged(typeTemplate, err.Error())
		}
		body := string(src[start:end])
		if strings.Count(body, concurrentCall) != 1 {
			return templateChanged(typeTemplate, fmt.Sprintf("list marshaller %s does not call %s once", name, concurrentCall))
		}
		body = strings.Replace(body, concurrentCall, inlineCall, 1)
		src = slices.Concat(src[:start], []byte(body), src[end:])
	}
	for _, name := range l.objects {
		start, end, err := function(src, "_"+name+"(ctx context.Context, sel ast.SelectionSet, obj ")
		if err != nil {
			return templateChanged(objectTemplate, err.Error())
		}
		src = slices.Concat(src[:start], src[end:])
		call, inlined := []byte("ec._"+name+"(ctx, sel, "), []byte("ec.inline"+name+"(ctx, sel, ")
		if !bytes.Contains(src, call) {
			return templateChanged(typeTemplate, fmt.Sprintf("the executor never calls %s...)", call))
		}
		src = bytes.ReplaceAll(src, call, inlined)
	}
	src, err = format.Source(src)
	if err != nil {
		return fmt.Errorf("inline: formatting %s: %w", cfg.Exec.Filename, err)
	}
	return os.WriteFile(cfg.Exec.Filename, src, 0o644)
}

// boundExec makes Exec marshal the responses of queries and subscriptions
// with boundedCall: in each of its operation cases, the one marshalCall of
// the query and subscription cases, none of the mutation case's.
func boundExec(src []byte) ([]byte, error) {
	decl := []byte("\nfunc (e *executableSchema) Exec(ctx context.Context) graphql.ResponseHandler {")
	start := bytes.Index(src, decl)
	if start < 0 || bytes.Count(src, decl) != 1 {
		return nil, templateChanged(execTemplate, "no single Exec in the executor")
	}
	end := bytes.Index(src[start:], []byte("\n}\n"))
	if end < 0 {
		return nil, templateChanged(execTemplate, "Exec does not end")
	}
	end += start
	body := string(src[start:end])
	cases := []string{"case ast.Query:", "case ast.Mutation:", "case ast.Subscription:", "default:"}
	at := make([]int, len(cases))
	for i, c := range cases {
		if strings.Count(body, c) != 1 {
			return nil, templateChanged(execTemplate, fmt.Sprintf("Exec has not one %q", c))
		}
		at[i] = strings.Index(body, c)
		if i > 0 && at[i] < at[i-1] {
			return nil, templateChanged(execTemplate, fmt.Sprintf("Exec's cases are not in the order %v", cases))
		}
	}
	var out strings.Builder
	out.WriteString(body[:at[0]])
	for i := range len(cases) - 1 {
		part := body[at[i]:at[i+1]]
		if strings.Count(part, marshalCall) != 1 {
			return nil, templateChanged(execTemplate, fmt.Sprintf("Exec's %s does not call %s once", cases[i], marshalCall))
		}
		if cases[i] != "case ast.Mutation:" {
			part = strings.Replace(part, marshalCall, boundedCall, 1)
		}
		out.WriteString(part)
	}
	out.WriteString(body[at[len(cases)-1]:])
	src = slices.Concat(src[:start], []byte(out.String()), src[end:])
	// The executor imports the package of inline.go's writers, beside
	// gqlgen's (format.Source sorts the group).
	imp := []byte("\n\t\"github.com/99designs/gqlgen/graphql\"\n")
	if bytes.Count(src, imp) != 1 {
		return nil, templateChanged(execTemplate, "the executor does not import github.com/99designs/gqlgen/graphql once")
	}
	if !bytes.Contains(src, []byte(`"github.com/procsvc/procsvc/graph/internal/inline"`)) {
		src = bytes.Replace(src, imp, []byte("\n\t\"github.com/99designs/gqlgen/graphql\"\n\t\"github.com/procsvc/procsvc/graph/internal/inline\"\n"), 1)
	}
	return src, nil
}

// function finds the method of executionContext whose name and parameters
// begin with head in src, and returns where its text begins and ends
// (gofmt'd: it ends at the first closing brace in column 0).
func function(src []byte, head string) (start, end int, err error) {
	decl := []byte("\nfunc (ec *executionContext) " + head)
	start = bytes.Index(src, decl)
	if start < 0 || bytes.Count(src, decl) != 1 {
		return 0, 0, fmt.Errorf("no single func (ec *executionContext) %s... in the executor", head)
	}
	brace := bytes.Index(src[start:], []byte("\n}\n"))
	if brace < 0 {
		return 0, 0, fmt.Errorf("func (ec *executionContext) %s... does not end", head)
	}
	return start, start + brace + len("\n}"), nil
}
