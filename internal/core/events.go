package core

import (
	"context"

	"entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
)

// ChangeKind says what a committed write did.
type ChangeKind string

// The changes announced to subscribers (docs/api.md, "Live updates").
const (
	ProcedureCreated   ChangeKind = "CREATED"
	ProcedureUpdated   ChangeKind = "UPDATED"
	ProcedureMoved     ChangeKind = "MOVED"
	ProcedureDeleted   ChangeKind = "DELETED"
	ProcedureCommented ChangeKind = "COMMENTED"
	// AccessChanged: a member was removed or changed role, or a token was
	// revoked. Subscriptions of the workspace re-authenticate on it.
	AccessChanged ChangeKind = "ACCESS_CHANGED"
)

// Change is one write, announced once it has committed. It names what
// changed, never the record's content: subscribers read the record
// themselves, under their own tenancy and role.
type Change struct {
	WorkspaceID uuid.UUID
	Kind        ChangeKind
	// ProcedureID is the procedure created, changed, deleted or commented on
	// (uuid.Nil for AccessChanged).
	ProcedureID uuid.UUID
	// Before and After are the procedure's facets before and after the
	// write, when the write knows them (nil: it did not exist, or the write
	// did not read it), so that a subscriber filtering by project or state
	// also hears of a procedure leaving its filter, and a cached list
	// outside both is kept (Footprint).
	Before, After *Facets
	// Reworded: the write changed the procedure's name or content (which a
	// search matches); Renamed: its name (which a list may sort by).
	Reworded, Renamed bool
}

// Announcer makes committed changes known to subscribers, on this replica
// and on the others (internal/events).
type Announcer interface {
	// Announce is called inside the write's transaction, after its last
	// change and under the workspace lock. It must make the change known
	// if and only if tx commits, with the workspace's version as of it.
	Announce(ctx context.Context, tx *ent.Tx, c Change) error
}

// WithAnnouncer sets the announcer of committed changes.
func WithAnnouncer(a Announcer) Option { return func(s *Service) { s.announcer = a } }

// announce hands c to the announcer, if there is one.
func (s *Service) announce(ctx context.Context, tx *ent.Tx, c Change) error {
	if s.announcer == nil {
		return nil
	}
	return s.announcer.Announce(ctx, tx, c)
}

// A StatementAnnouncer can also announce a change from inside a statement
// core runs anyway: the version bump that ends a field update (lockShared),
// so that the announcement costs no round trip of its own while the
// workspace is held. Its notification is PostgreSQL SQL, inside a statement
// only PostgreSQL runs: only a PostgreSQL deployment may be given one.
type StatementAnnouncer interface {
	Announcer
	// Notification returns what announces c from a statement: notify writes
	// an SQL expression, evaluated once, over version (the SQL of the
	// workspace's version as of this write); announced is called once the
	// statement has run, with the version it returned, and from then on
	// the change is announced as Announce would have (known if and only if
	// tx commits).
	Notification(c Change) (notify func(b *sql.Builder, version string), announced func(tx *ent.Tx, version int64), err error)
}
