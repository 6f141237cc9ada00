package inline

import (
	"context"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// A field with arguments selected on every element of a list (a
// procedure's comments(last: 3) on a page of 50) gets from gqlgen's field
// function a field context of its own per element, its arguments parsed
// again each time: the argument map, the arguments' map and a value per
// argument, some ten allocations per procedure for the same values. The
// arguments depend only on the field's syntax and the operation's
// variables, both fixed for a response, so the connections the plugin
// writes take them from the first field context made for that field in the
// response (SharedFieldContext), and make their own only for the first.

// sharedFields are the field contexts of one response, by field: the first
// one made for each, as a template; and the fields collected from each
// selection set for each set of types (CollectFields).
type sharedFields struct {
	mu        sync.Mutex
	m         map[*ast.Field]*graphql.FieldContext
	collected map[collectedKey][]graphql.CollectedField
}

// collectedKey names a selection set of the operation's document, by its
// first selection and length, and the types its fields are collected for,
// by their slice (one per object type, made once).
type collectedKey struct {
	sel       *ast.Selection
	n         int
	satisfies *string
}

// CollectFields is graphql.CollectFields, kept for ctx's response: the
// same selection set collected for the same types (every element of a
// list, every edge of a page: some two thousand calls for a dashboard) is
// collected once. gqlgen keeps its own results per operation too, but
// allocates the key of its cache (a hash of the types' names) on every
// call, the largest single share of a dashboard's allocations. The fields
// depend only on the document, its variables and the types, all fixed for
// a response; like gqlgen's, the slice returned is shared and never to be
// changed. Without shared fields in ctx, it is graphql.CollectFields.
func CollectFields(ctx context.Context, op *graphql.OperationContext, sel ast.SelectionSet, satisfies []string) []graphql.CollectedField {
	s, _ := ctx.Value(sharedFieldsKey{}).(*sharedFields)
	if s == nil || len(sel) == 0 || len(satisfies) == 0 {
		return graphql.CollectFields(op, sel, satisfies)
	}
	k := collectedKey{sel: &sel[0], n: len(sel), satisfies: &satisfies[0]}
	s.mu.Lock()
	fields, ok := s.collected[k]
	s.mu.Unlock()
	if ok {
		return fields
	}
	fields = graphql.CollectFields(op, sel, satisfies)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.collected == nil {
		s.collected = map[collectedKey][]graphql.CollectedField{}
	}
	s.collected[k] = fields
	return fields
}

type sharedFieldsKey struct{}

// WithSharedFields returns ctx with an empty set of shared field contexts
// for the response the executor renders with it.
func WithSharedFields(ctx context.Context) context.Context {
	return context.WithValue(ctx, sharedFieldsKey{}, &sharedFields{})
}

// SharedFieldContext returns a field context for field, as made by the
// field's field context function for another object of ctx's response:
// its arguments (shared, never to be changed) and everything else but its
// parent (set by graphql.WithFieldContext) and its result. nil when none
// was shared (ShareFieldContext), or ctx has no shared field contexts.
func SharedFieldContext(ctx context.Context, field graphql.CollectedField) *graphql.FieldContext {
	s, _ := ctx.Value(sharedFieldsKey{}).(*sharedFields)
	if s == nil {
		return nil
	}
	s.mu.Lock()
	t := s.m[field.Field]
	s.mu.Unlock()
	if t == nil {
		return nil
	}
	fc := *t
	fc.Field = field // the same syntax; its selections as collected here
	return &fc
}

// ShareFieldContext keeps a copy of fc, which the field context function
// of field made without error, for SharedFieldContext.
func ShareFieldContext(ctx context.Context, field graphql.CollectedField, fc *graphql.FieldContext) {
	s, _ := ctx.Value(sharedFieldsKey{}).(*sharedFields)
	if s == nil {
		return
	}
	t := *fc
	t.Parent, t.Result = nil, nil
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[*ast.Field]*graphql.FieldContext{}
	}
	if _, ok := s.m[field.Field]; !ok {
		s.m[field.Field] = &t
	}
}
