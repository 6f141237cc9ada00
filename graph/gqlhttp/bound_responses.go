package gqlhttp

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/procsvc/procsvc/graph/internal/inline"
	"github.com/procsvc/procsvc/internal/apperr"
)

// Every response the executor renders is bounded in bytes (docs/api.md,
// "Limits of a GraphQL request"): its objects count what they write as
// they are resolved, and its data is marshalled through a writer that
// stops at the bound (graph/internal/inline, budget.go), so a response over
// the bound is neither rendered in full nor held in memory.
//
//   - A query, or one event of a subscription, over the bound is answered
//     with one payload_too_large error and no data (413 over HTTP).
//   - A mutation's root fields are bounded one by one, since each commits
//     on its own and a write that committed must not be answered as
//     failed: the field whose result passes the bound is null with a
//     payload_too_large error whose path lies below it (its write
//     committed, as for a result that failed to load), and the root fields
//     after it do not run (null, with the error at their own path: they
//     wrote nothing). What a mutation answers is at most the bound plus the
//     punctuation and names around its results.

// responseTooLarge is the refusal of a GraphQL response over bound.
func responseTooLarge(bound int) *apperr.Error {
	return apperr.ResponseTooLarge(bound, "select fewer fields, ask for smaller pages (first/last) or fewer comments (comments(last: n)), or split the operation")
}

// boundResponses gives each response a budget of bound bytes and answers a
// query's or a subscription event's that passed it with one error; present
// is the server's error presenter.
func boundResponses(bound int, present func(context.Context, error) *gqlerror.Error) graphql.ResponseMiddleware {
	return func(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
		oc := graphql.GetOperationContext(ctx)
		mutation := oc.Operation != nil && oc.Operation.Operation == ast.Mutation
		ctx, budget := inline.WithBudget(ctx, bound, mutation)
		// The field contexts its fields with arguments share, by field
		// (graph/internal/inline, fields.go).
		ctx = inline.WithSharedFields(ctx)
		resp := next(ctx)
		if resp == nil || mutation {
			return resp
		}
		if budget.Passed() {
			return &graphql.Response{Errors: gqlerror.List{present(ctx, responseTooLarge(bound))}}
		}
		// A read that stopped at the bound (the loaders' comment text).
		for _, e := range resp.Errors {
			if isTooLarge(e) {
				return &graphql.Response{Errors: gqlerror.List{e}}
			}
		}
		return resp
	}
}

// boundMutationFields runs a mutation's root field within its response's
// budget (see boundResponses).
func boundMutationFields(ctx context.Context, next graphql.RootResolver) graphql.Marshaler {
	budget := inline.BudgetOf(ctx)
	oc := graphql.GetOperationContext(ctx)
	rf := graphql.GetRootFieldContext(ctx)
	if budget == nil || oc.Operation == nil || oc.Operation.Operation != ast.Mutation || rf == nil || rf.Field.Field == nil {
		return next(ctx)
	}
	name := ast.PathName(rf.Field.Alias)
	if budget.Passed() {
		err := apperr.ResponseTooLarge(budget.Max(), "this field did not run and wrote nothing: send it again in another request")
		graphql.AddError(ctx, &gqlerror.Error{Message: err.Message, Path: ast.Path{name}, Err: err})
		return graphql.Null
	}
	m := next(ctx)
	if !budget.Passed() {
		return m
	}
	at := budget.At()
	if len(at) < 2 || at[0] != name {
		// Not found by an object of this field's result (which always
		// passes it below the field): still below the field.
		at = ast.Path{name, ast.PathName(firstField(rf.Field.Selections))}
	}
	err := apperr.ResponseTooLarge(budget.Max(), "this field's write committed, but its result is not shown: read the record back with fewer fields, or without aliases of its long fields")
	graphql.AddError(ctx, &gqlerror.Error{Message: err.Message, Path: at, Err: err})
	return graphql.Null
}

// firstField is the response name of the first field of sel.
func firstField(sel ast.SelectionSet) string {
	for _, s := range sel {
		switch s := s.(type) {
		case *ast.Field:
			return s.Alias
		case *ast.InlineFragment:
			if n := firstField(s.SelectionSet); n != "" {
				return n
			}
		case *ast.FragmentSpread:
			if s.Definition != nil {
				if n := firstField(s.Definition.SelectionSet); n != "" {
					return n
				}
			}
		}
	}
	return ""
}

// isTooLarge reports whether e, presented, is payload_too_large.
func isTooLarge(e *gqlerror.Error) bool {
	c, _ := e.Extensions["code"].(string)
	return apperr.Code(c) == apperr.PayloadTooLarge
}
