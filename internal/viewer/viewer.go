// Package viewer carries the authenticated caller through a request's context.
//
// Tenancy (internal/tenancy) reads it below every resolver and handler: a
// query or mutation made with a viewer sees only the viewer's workspace, and
// one made with neither a viewer nor the system marker fails closed.
package viewer

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
)

// Role is a member's permission level inside its workspace.
type Role string

// The roles, from least to most privileged.
const (
	RoleViewer Role = "VIEWER"
	RoleMember Role = "MEMBER"
	RoleAdmin  Role = "ADMIN"
)

// Valid reports whether r is one of the known roles.
func (r Role) Valid() bool {
	switch r {
	case RoleViewer, RoleMember, RoleAdmin:
		return true
	}
	return false
}

// rank orders roles so that a check reads as "at least MEMBER".
func (r Role) rank() int {
	switch r {
	case RoleViewer:
		return 1
	case RoleMember:
		return 2
	case RoleAdmin:
		return 3
	}
	return 0
}

// AtLeast reports whether r grants everything min grants.
func (r Role) AtLeast(min Role) bool { return r.rank() >= min.rank() && r.rank() > 0 }

// Viewer is the member a request acts as, resolved from its bearer token.
type Viewer struct {
	WorkspaceID uuid.UUID
	MemberID    uuid.UUID
	TokenID     uuid.UUID
	Role        Role
	// WorkspaceVersion is the workspace's write counter as read with the
	// token; caches keyed by it can never serve data older than the request.
	WorkspaceVersion int64
	// VersionKnown is set when WorkspaceVersion was read with the token.
	VersionKnown bool
	// ExpiresAt is when the token stops authenticating (zero: never). A
	// long-lived connection re-checks its credential then.
	ExpiresAt time.Time
}

// Credential is what limits and read-your-writes key a caller by: the
// token of a pms_ token, the member of an identity provider's token (one
// person in one workspace: such a viewer has no TokenID). Two callers
// never share it, and one caller's requests always have the same.
func (v *Viewer) Credential() uuid.UUID {
	if v.TokenID != uuid.Nil {
		return v.TokenID
	}
	return v.MemberID
}

// ErrNoViewer is returned by tenant-scoped queries run without a viewer or
// the system marker. It always indicates a programming error.
var ErrNoViewer = errors.New("viewer: no viewer in context")

type viewerKey struct{}
type systemKey struct{}

// NewContext returns a context that acts as v.
func NewContext(ctx context.Context, v *Viewer) context.Context {
	return context.WithValue(ctx, viewerKey{}, v)
}

// FromContext returns the viewer of ctx, or nil.
func FromContext(ctx context.Context) *Viewer {
	v, _ := ctx.Value(viewerKey{}).(*Viewer)
	return v
}

// System returns a context that bypasses tenancy. Only code that runs before a
// viewer exists (token lookup, bootstrap, the CLI) may use it.
func System(ctx context.Context) context.Context {
	return context.WithValue(ctx, systemKey{}, true)
}

// IsSystem reports whether ctx was made by System.
func IsSystem(ctx context.Context) bool {
	b, _ := ctx.Value(systemKey{}).(bool)
	return b
}
