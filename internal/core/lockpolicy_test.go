package core_test

import (
	"testing"
	"time"

	"entgo.io/ent/dialect"

	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/events"
)

// statementDecorator wraps a StatementAnnouncer and keeps its Notification,
// as a decorator of the PostgreSQL announcer may.
type statementDecorator struct{ core.StatementAnnouncer }

// announceDecorator wraps an announcer as a plain Announcer: it hides the
// Notification of a StatementAnnouncer it wraps.
type announceDecorator struct{ core.Announcer }

// TestLockPolicyIsExplicit: how writes lock their workspace is what the
// wiring sets (WithLockPolicy, LockPolicyFor the database's dialect), never
// what the announcer's type suggests. Under SharedFieldUpdates a field
// update goes ahead beside another in flight even through a decorated
// announcer; under ExclusiveWrites it waits, even given the PostgreSQL
// announcer; and SharedFieldUpdates with an announcer that cannot announce
// from a statement is refused when the Service is made, not run exclusive.
func TestLockPolicyIsExplicit(t *testing.T) {
	if got := core.LockPolicyFor(dialect.Postgres); got != core.SharedFieldUpdates {
		t.Errorf("LockPolicyFor(postgres) = %v, want SharedFieldUpdates", got)
	}
	if got := core.LockPolicyFor(dialect.SQLite); got != core.ExclusiveWrites {
		t.Errorf("LockPolicyFor(sqlite3) = %v, want ExclusiveWrites", got)
	}

	hub := events.NewHub(events.HubOptions{})
	t.Cleanup(hub.Close)
	for name, announcer := range map[string]core.Announcer{
		"none":                          nil,
		"a decorator hiding statements": announceDecorator{events.NewPostgresAnnouncer(nil)},
		"the local announcer":           events.NewLocalAnnouncer(hub),
	} {
		t.Run("SharedFieldUpdates refused with "+name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("New accepted SharedFieldUpdates with an announcer that cannot announce from a statement")
				}
			}()
			core.New(nil, core.WithAnnouncer(announcer), core.WithLockPolicy(core.SharedFieldUpdates))
		})
	}

	t.Run("on PostgreSQL", func(t *testing.T) {
		dbtest.NeedPostgres(t)
		db := dbtest.Open(t, "postgres")
		f := setup(t, db, "PLCY")
		p := f.newProcedure(t, "first", "TODO", f.project)
		clockOpt := core.WithClock(func() time.Time { return clock })
		prioritise := func(svc *core.Service, priority string) func() error {
			return func() error {
				_, err := svc.UpdateProcedure(f.admin, p.ID.String(), core.UpdateProcedureInput{Priority: core.Some(priority)})
				return err
			}
		}

		shared := core.New(db.Client, clockOpt, core.WithAnnouncer(statementDecorator{events.NewPostgresAnnouncer(nil)}),
			core.WithLockPolicy(core.LockPolicyFor(db.Dialect)))
		h := holdWorkspace(t, db, f.boot.Workspace.ID, holdShared)
		finished(t, "a field update under SharedFieldUpdates", started(prioritise(shared, "HIGH")))
		h.release()

		exclusive := core.New(db.Client, clockOpt, core.WithAnnouncer(events.NewPostgresAnnouncer(nil)))
		h = holdWorkspace(t, db, f.boot.Workspace.ID, holdShared)
		update := started(prioritise(exclusive, "LOW"))
		blockedOnLock(t, db, "a field update under ExclusiveWrites", update)
		h.release()
		finished(t, "the field update under ExclusiveWrites", update)
	})
}
