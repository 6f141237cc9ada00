package core

// What a committed write changed, and how it is announced: the Change and
// its Facets, and the Announcer (finish.go announces them).

import (
	"context"
	"time"

	"entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/procedure"
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

// OfProcedure reports whether c is a write of one procedure or of its
// comments, which writes no category, member or project row (those writes
// are logged but not announced; AccessChanged is a member's or a token's).
func (c Change) OfProcedure() bool {
	switch c.Kind {
	case ProcedureCreated, ProcedureUpdated, ProcedureMoved, ProcedureDeleted, ProcedureCommented:
		return c.ProcedureID != uuid.Nil
	}
	return false
}

// Facets are the fields of a procedure that decide which lists hold it and
// where: its column (project and state) and everything a list filters or
// sorts by, except its text.
type Facets struct {
	ProjectID  uuid.UUID
	State      procedure.State
	Priority   procedure.Priority
	CategoryID *uuid.UUID
	DoerID     *uuid.UUID
	DueAt      time.Time
}

// known reports whether f is complete (an announcement from an older
// replica carries the column only).
func (f *Facets) known() bool { return f != nil && f.Priority != "" }

func facetsOf(p *ent.Procedure) *Facets {
	return &Facets{ProjectID: p.ProjectID, State: p.State, Priority: p.Priority,
		CategoryID: p.CategoryID, DoerID: p.DoerID, DueAt: p.DueAt.UTC()}
}

// equalText compares two optional texts.
func equalText(a, b *string) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// changeOf is what a procedure write did, announced as c and counted as
// tallies: before is the row as of the lock (nil for a create), after the
// row stored (nil for a delete).
func changeOf(workspaceID uuid.UUID, kind ChangeKind, before, after *ent.Procedure) (Change, tallyChange) {
	tallies := tallyChange{}
	c := Change{WorkspaceID: workspaceID, Kind: kind}
	if before != nil {
		tallies.removed(before)
		c.ProcedureID, c.Before = before.ID, facetsOf(before)
	}
	if after != nil {
		tallies.added(after)
		c.ProcedureID, c.After = after.ID, facetsOf(after)
	}
	if before != nil && after != nil {
		c.Renamed = before.Name != after.Name
		c.Reworded = c.Renamed || !equalText(before.Content, after.Content)
	}
	return c, tallies
}

// Announcer makes committed changes known to subscribers, on this replica
// and on the others (internal/events).
type Announcer interface {
	// Announce is called inside the write's transaction, after its last
	// change and under the workspace lock (finishWrite). It must make the
	// change known if and only if tx commits, with the workspace's version
	// as of it.
	Announce(ctx context.Context, tx *ent.Tx, c Change) error
}

// WithAnnouncer sets the announcer of committed changes.
func WithAnnouncer(a Announcer) Option { return func(s *Service) { s.announcer = a } }

// A StatementAnnouncer can also announce a change from inside a statement
// core runs anyway: the version bump that ends a field update (lockShared,
// sharedFinish), so that the announcement costs no round trip of its own
// while the workspace is held. SharedFieldUpdates requires one (WithLockPolicy). Its
// notification is PostgreSQL SQL, inside a statement only PostgreSQL runs:
// only a PostgreSQL deployment may be given one.
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

// procedureEntryKinds are the logged kinds of procedure changes.
var procedureEntryKinds = map[ChangeKind]EventKind{
	ProcedureCreated: EventProcedureCreated,
	ProcedureUpdated: EventProcedureUpdated,
	ProcedureMoved:   EventProcedureMoved,
	ProcedureDeleted: EventProcedureDeleted,
}
