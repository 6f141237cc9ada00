package gqlhttp

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/ratelimit"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// ComplexityPerToken is how much complexity (complexity.go) one token of
// the rate limit buys: an operation costs ceil(complexity /
// ComplexityPerToken) tokens, at least 1, so that a page of 100 procedures'
// ids costs 2 and the most complex operation allowed (MaxComplexity) 25.
const ComplexityPerToken = 100

// OperationTokens is what an operation of complexity costs.
func OperationTokens(complexity int) int {
	return max(1, (complexity+ComplexityPerToken-1)/ComplexityPerToken)
}

// operationCost charges the request's rate limit (internal/ratelimit) by
// the operation's cost once it passed every limit, before anything
// executes. A refusal stops the request; the rate limiter's middleware
// answers it (429 rate_limited, with Retry-After).
type operationCost struct{}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = operationCost{}

func (operationCost) ExtensionName() string                   { return "OperationCost" }
func (operationCost) Validate(graphql.ExecutableSchema) error { return nil }
func (operationCost) MutateOperationContext(ctx context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	complexity := 0
	if s := extension.GetComplexityStats(graphql.WithOperationContext(ctx, oc)); s != nil {
		complexity = s.Complexity
	}
	if err := ratelimit.Spend(ctx, OperationTokens(complexity)); err != nil {
		return &gqlerror.Error{Message: apperr.From(err).Message, Err: err,
			Extensions: map[string]any{"code": string(apperr.RateLimited)}}
	}
	return nil
}
