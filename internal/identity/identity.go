// Package identity is the person an identity provider's token stands for,
// between internal/oidc, which verifies the tokens, and internal/auth,
// which maps people to members. It is a package of its own so that
// internal/auth, which internal/core imports for its secrets, does not
// bring oidc's HTTP client into the core (internal/core's
// TestCoreImportsNoHTTP).
package identity

import (
	"context"
	"time"
)

// Identity is the person a provider's token stands for.
type Identity struct {
	Issuer, Subject string
	// Email is the provider's verified email, or "" when the token says
	// none (a token whose email is not verified is refused).
	Email string
	// Expires is when the token stops authenticating: its exp and the
	// verifier's skew, or for an opaque token when its cached answer is
	// asked again.
	Expires time.Time
}

// A Verifier turns an identity provider's token into the person it stands
// for, or refuses it (internal/oidc.Verifier).
type Verifier interface {
	Verify(ctx context.Context, token string) (*Identity, error)
}
