package graph

import (
	"github.com/procsvc/procsvc/internal/core"
)

// Resolver is the root of the GraphQL resolvers. Resolvers translate
// arguments, call the core service and prime the dataloaders for what the
// query selects; they hold no business rules. The REST layer calls these same
// methods.
type Resolver struct {
	Service *core.Service
	// MaxResponseBytes bounds the bytes of each response, GraphQL's and
	// REST's (ResponseBytes; 0: limits.ResponseBytes).
	MaxResponseBytes int
}

// NewResolver returns a Resolver over svc.
func NewResolver(svc *core.Service) *Resolver { return &Resolver{Service: svc} }
