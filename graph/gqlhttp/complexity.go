package gqlhttp

import (
	"context"
	"reflect"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/procsvc/procsvc/graph"
	"github.com/procsvc/procsvc/internal/core"
)

// An operation's complexity prices what its response can hold, in objects
// (records, edges, connections): each object a field can return costs 1
// plus what it selects, and a list of objects its most elements times
// that, so that nested lists multiply and a list costs its page size. A
// scalar or enum field costs nothing beyond its object: it is a column of a
// row already read, and what the fields of a page add up to in bytes is
// the response bound's to limit (bound_responses.go). The most elements of a list
// are:
//
//   - a connection's edges and nodes: its page size, first or last, else its
//     default (20 for procedures, comments and a procedure's history, 100
//     for the other connections, the events list among them), so that
//     nested connections (a project's procedures, a procedure's comments)
//     multiply their page sizes;
//   - an event's changes: core.MaxFieldChanges, the most fields one write
//     logs;
//   - nodes(ids:): the number of ids;
//   - tokens: MaxPageSize, nominally (a workspace's tokens are few and an
//     admin's to make);
//   - webhooks: core.MaxWebhooksPerWorkspace, the most a workspace holds.
//
// Introspection costs nothing here: it has a budget of its own
// (introspection.go). Fragments and
// inline fragments of every type count in full, the most any object can
// select. TestEveryListIsPriced fails for a list field of the schema without
// a rule here.
//
// The cost is also what the operation spends of its token's rate limit
// (OperationTokens).

// connectionPageSizes are the default page sizes of the connections, by
// type: the elements of their edges and nodes when the field selecting the
// connection gives neither first nor last.
var connectionPageSizes = map[string]int{
	"ProcedureConnection": core.DefaultProcedurePageSize,
	"CommentConnection":   core.DefaultCommentPageSize,
	"ProjectConnection":   core.DefaultListPageSize,
	"CategoryConnection":  core.DefaultListPageSize,
	"MemberConnection":    core.DefaultListPageSize,
	// An endpoint's delivery log (webhooks.graphqls).
	"WebhookDeliveryConnection": core.DefaultListPageSize,
	"EventConnection":           core.DefaultHistoryPageSize,
}

// fieldPageSizes are the default page sizes of the connection fields whose
// default is not their type's.
var fieldPageSizes = map[string]int{
	"Query.events": core.DefaultEventPageSize,
}

// listElements are the rules for the schema's lists outside connections:
// the most elements field can hold, given its arguments.
var listElements = map[string]func(args map[string]any) int{
	"Query.nodes": func(args map[string]any) int {
		ids := reflect.ValueOf(args["ids"])
		switch {
		case !ids.IsValid():
			return 0
		case ids.Kind() == reflect.Slice:
			return ids.Len()
		}
		return 1 // one id where a list is expected is a list of one
	},
	"Query.tokens": func(map[string]any) int { return MaxPageSize },
	// Every endpoint of the workspace: the bound on how many it may have.
	"Query.webhooks": func(map[string]any) int { return core.MaxWebhooksPerWorkspace },
	"Event.changes":  func(map[string]any) int { return core.MaxFieldChanges },
}

// clampElements is n as a number of elements, at most max.
func clampElements(n int64, max int) int {
	if n < 0 {
		return 0
	}
	if n > int64(max) {
		return max
	}
	return int(n)
}

// costWalk computes an operation's complexity.
type costWalk struct {
	*walk
	vars map[string]any
	// page is the page size of the connection being walked: the elements of
	// its edges and nodes.
	page int
}

// Complexity is the complexity of the operation op of oc's document
// (validated: every field has its definition).
func Complexity(ctx context.Context, oc *graphql.OperationContext, op *ast.OperationDefinition) (int, *gqlerror.Error) {
	c := &costWalk{walk: newWalk(ctx, oc.Doc), vars: oc.Variables}
	return c.set(op.SelectionSet)
}

func (c *costWalk) set(set ast.SelectionSet) (int, *gqlerror.Error) {
	total := 0
	for _, sel := range set {
		if err := c.tick(); err != nil {
			return 0, err
		}
		var (
			n   int
			err *gqlerror.Error
		)
		switch sel := sel.(type) {
		case *ast.Field:
			n, err = c.field(sel)
		case *ast.InlineFragment:
			n, err = c.set(sel.SelectionSet)
		case *ast.FragmentSpread:
			if def := c.fragments[sel.Name]; def != nil {
				n, err = c.set(def.SelectionSet)
			}
		}
		if err != nil {
			return 0, err
		}
		total = satAdd(total, n)
	}
	return total, nil
}

func (c *costWalk) field(f *ast.Field) (int, *gqlerror.Error) {
	if f.Definition == nil || f.Definition.Type == nil || len(f.SelectionSet) == 0 {
		// A scalar or enum (or __typename): part of its object.
		return 0, nil
	}
	typ := f.Definition.Type
	if typ.Name() == "__Schema" || typ.Name() == "__Type" {
		return 0, nil
	}
	elements := 1
	page := c.page
	var args map[string]any
	if len(f.Arguments) > 0 {
		args = f.ArgumentMap(c.vars)
	}
	if def, ok := connectionPageSizes[typ.Name()]; ok && typ.Elem == nil {
		if f.ObjectDefinition != nil {
			if d, ok := fieldPageSizes[f.ObjectDefinition.Name+"."+f.Name]; ok {
				def = d
			}
		}
		c.page = connectionPage(args, def)
	}
	if typ.Elem != nil && f.ObjectDefinition != nil {
		switch rule, ok := listElements[f.ObjectDefinition.Name+"."+f.Name]; {
		case ok:
			elements = rule(args)
		case connectionPageSizes[f.ObjectDefinition.Name] > 0 && (f.Name == "edges" || f.Name == "nodes"):
			elements = c.page
		}
	}
	child, err := c.set(f.SelectionSet)
	c.page = page
	if err != nil {
		return 0, err
	}
	return satMul(elements, satAdd(1, child)), nil
}

// connectionPage is the page size a connection field's first or last asks
// for, else def.
func connectionPage(args map[string]any, def int) int {
	for _, name := range []string{"first", "last"} {
		if n, ok := graph.IntArgument(args[name]); ok {
			return clampElements(n, MaxPageSize)
		}
	}
	return def
}

// satMul is a×b, saturated as satAdd saturates.
func satMul(a, b int) int {
	if a == 0 || b == 0 {
		return 0
	}
	if a > saturation/b {
		return saturation
	}
	return a * b
}

// complexityLimit refuses an operation whose complexity is over max before
// anything executes, and records the complexity for operationCost (where
// gqlgen's own complexity limit would, so that
// extension.GetComplexityStats reads it).
type complexityLimit struct{ max int }

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = complexityLimit{}

// complexityStats is the name gqlgen's complexity limit records its
// statistics under.
const complexityStats = "ComplexityLimit"

func (complexityLimit) ExtensionName() string                   { return complexityStats }
func (complexityLimit) Validate(graphql.ExecutableSchema) error { return nil }
func (l complexityLimit) MutateOperationContext(ctx context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	op := oc.Doc.Operations.ForName(oc.OperationName)
	if op == nil {
		return nil
	}
	cost, err := Complexity(ctx, oc, op)
	if err != nil {
		return err
	}
	oc.Stats.SetExtension(complexityStats, &extension.ComplexityStats{Complexity: cost, ComplexityLimit: l.max})
	if cost > l.max {
		return limitError("operation has complexity %s, more than the limit of %d: every object the response can hold costs 1, a list its most elements (a page size, "+
			"comments' first or last, else 100) times what one element holds; ask for smaller pages or fewer comments (comments(last: n))",
			count(cost), l.max)
	}
	return nil
}
