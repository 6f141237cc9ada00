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
// one made for each, as a template.
type sharedFields struct {
	mu sync.Mutex
	m  map[*ast.Field]*graphql.FieldContext
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
