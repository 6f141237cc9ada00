package gqlhttp

import (
	"context"
	"net/http"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/procsvc/procsvc/graph/gqlrequest"
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
// (idempotency.Deferred.Answer). An operation other than a mutation writes
// nothing: its key is not claimed.
type keyClaim struct{}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = keyClaim{}

func (keyClaim) ExtensionName() string                   { return "IdempotencyKeyClaim" }
func (keyClaim) Validate(graphql.ExecutableSchema) error { return nil }
func (keyClaim) MutateOperationContext(ctx context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	op := oc.Operation
	if op == nil || op.Operation != ast.Mutation {
		return nil
	}
	holdsSecret := func() bool { return selectsSecret(oc.Doc, op.SelectionSet, map[string]bool{}) }
	if err := idempotency.ClaimDeferred(ctx, holdsSecret); err != nil {
		// Never shown: the transport answers the key's record or refusal.
		answered := idempotency.AnsweredError()
		return &gqlerror.Error{Message: apperr.From(answered).Message, Err: answered,
			Extensions: map[string]any{"code": string(apperr.Conflict)}}
	}
	return nil
}

// secretFields are the root fields whose result carries a secret shown
// once (CreateTokenPayload.secret, WebhookSecretPayload.secret): their
// answer is never kept for replay.
var secretFields = map[string]bool{"createToken": true, "createWebhook": true, "rotateWebhookSecret": true}

// selectsSecret reports whether set selects a field of secretFields,
// directly or through inline fragments and fragment spreads (seen guards
// against cycles, which the validator refuses anyway).
func selectsSecret(doc *ast.QueryDocument, set ast.SelectionSet, seen map[string]bool) bool {
	for _, sel := range set {
		switch sel := sel.(type) {
		case *ast.Field:
			if secretFields[sel.Name] {
				return true
			}
		case *ast.InlineFragment:
			if selectsSecret(doc, sel.SelectionSet, seen) {
				return true
			}
		case *ast.FragmentSpread:
			if seen[sel.Name] {
				continue
			}
			seen[sel.Name] = true
			if f := doc.Fragments.ForName(sel.Name); f != nil && selectsSecret(doc, f.SelectionSet, seen) {
				return true
			}
		}
	}
	return false
}

// KeyedRequest is idempotency.Options.Deferred for this face: a POST the
// guard decoded is keyed only if its executor finds a mutation (keyClaim),
// and its fingerprint covers the decoded request (gqlrequest.Payload), not
// the body's spelling, so that a retry over a WebSocket is the same request.
func KeyedRequest(r *http.Request) (payload []byte, ok bool) {
	req := gqlrequest.FromContext(r.Context())
	if req == nil || r.Method != http.MethodPost {
		return nil, false
	}
	return req.Payload(), true
}
