package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/idempotency"
)

// keyClaim claims a keyed mutation's Idempotency-Key (deferred by the
// idempotency middleware, or by any transport: idempotency.Defer) once the
// operation has passed every limit and been charged to the rate limit
// (operationCost), before anything runs: a request refused before then
// touches no table and leaves its key free. When the claim finds the key's
// recorded response, or refuses it (reused, in progress, malformed), the
// operation stops and its transport answers that instead
// (idempotency.Deferred.Answer).
type keyClaim struct{}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = keyClaim{}

func (keyClaim) ExtensionName() string                   { return "IdempotencyKeyClaim" }
func (keyClaim) Validate(graphql.ExecutableSchema) error { return nil }
func (keyClaim) MutateOperationContext(ctx context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	if err := idempotency.ClaimDeferred(ctx, oc.Doc, oc.Operation); err != nil {
		// Never shown: the transport answers the key's record or refusal.
		answered := idempotency.AnsweredError()
		return &gqlerror.Error{Message: apperr.From(answered).Message, Err: answered,
			Extensions: map[string]any{"code": string(apperr.Conflict)}}
	}
	return nil
}
