package core

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/event"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/viewer"
)

// TestLockStepsInOrder: a write takes its locks in lockStep's order, as
// each lock mode does (exclusive: the workspace's lock with its row in the
// bump, then the tallies; shared: the workspace's lock, the procedure's
// row, then the bump and the tallies), and openWrite.take refuses any lock
// out of that order or taken twice.
func TestLockStepsInOrder(t *testing.T) {
	for name, steps := range map[string][]lockStep{
		"exclusive": {lockWorkspaceLock, lockWorkspaceRow, lockTallyRows},
		"shared":    {lockWorkspaceLock, lockProcedureRow, lockWorkspaceRow, lockTallyRows},
	} {
		w := &openWrite{}
		for _, l := range steps {
			if err := w.take(l); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
	for _, steps := range [][]lockStep{
		{lockWorkspaceLock, lockWorkspaceRow, lockProcedureRow}, // a row after the bump: the deadlock lockShared avoids
		{lockProcedureRow, lockWorkspaceLock},                   // a row before the workspace's lock
		{lockWorkspaceLock, lockTallyRows, lockWorkspaceRow},    // the tallies before the bump
		{lockWorkspaceLock, lockWorkspaceRow, lockWorkspaceRow}, // two bumps
	} {
		w := &openWrite{}
		var err error
		for _, l := range steps {
			if err = w.take(l); err != nil {
				break
			}
		}
		if err == nil || !strings.Contains(err.Error(), "lock order") {
			t.Errorf("%v taken in that order: %v, want a lock order error", steps, err)
		}
	}
}

// TestEntryRowFillsEveryColumn: entryRow gives every column of the change
// log a value, its id and created_at from the schema's defaults, and
// refuses a table with a column it does not fill (a column added to the
// schema) or without one it fills.
func TestEntryRowFillsEveryColumn(t *testing.T) {
	me := &viewer.Viewer{WorkspaceID: ids.New(ids.KindWorkspace), MemberID: ids.New(ids.KindMember)}
	id := ids.New(ids.KindProject)
	e := recordEntry(EventProjectCreated, id, nil, fields{{"name", "P"}})
	before := time.Now().UTC().Truncate(time.Microsecond)
	row, err := entryRow(me, e, int64(7))
	if err != nil {
		t.Fatal(err)
	}
	if len(row) != len(event.Columns) {
		t.Fatalf("%d values for %d columns", len(row), len(event.Columns))
	}
	value := func(col string) any { return row[slices.Index(event.Columns, col)] }
	if got, ok := value(event.FieldID).(uuid.UUID); !ok || ids.KindOf(got) != ids.KindEvent {
		t.Errorf("id %v, want a new event id (event.DefaultID)", value(event.FieldID))
	}
	if got, ok := value(event.FieldCreatedAt).(time.Time); !ok || got.Before(before) || !got.Equal(got.Truncate(time.Microsecond)) {
		t.Errorf("created_at %v, want now to the microsecond (event.DefaultCreatedAt)", value(event.FieldCreatedAt))
	}
	if value(event.FieldVersion) != int64(7) || value(event.FieldProjectID) != id || value(event.FieldActorTokenID) != nil {
		t.Errorf("row %v", row)
	}

	values := map[string]any{}
	for i, col := range event.Columns {
		values[col] = row[i]
	}
	if _, err := tableRow(append(slices.Clone(event.Columns), "added"), values); err == nil {
		t.Error("a change log with a column entryRow does not fill was accepted")
	}
	if _, err := tableRow(event.Columns[1:], values); err == nil {
		t.Error("a change log without a column entryRow fills was accepted")
	}
}

// TestWriteFinishesOnce: a write declares at most one finish, a shared
// write exactly one (its version bump), and none is declared outside a
// write's transaction. A write refused so commits nothing.
func TestWriteFinishesOnce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := New(db.Client)
		boot, err := s.CreateWorkspace(context.Background(), NewWorkspace{Name: "Once", Key: "ONCE", AdminName: "Admin", AdminEmail: "once@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, err := s.ActAsAdmin(context.Background(), boot.Workspace.ID.String())
		if err != nil {
			t.Fatal(err)
		}
		v := viewer.FromContext(ctx)
		version := func() int64 {
			ws, err := db.Client.Workspace.Get(viewer.System(context.Background()), boot.Workspace.ID)
			if err != nil {
				t.Fatal(err)
			}
			return ws.Version
		}
		finish := recordFinish(EventProjectUpdated, ids.New(ids.KindProject), nil, nil)
		for name, write := range map[string]func() error{
			"two finishes": func() error {
				return s.inTx(ctx, v, viewer.RoleMember, func(tx *ent.Tx, _ *viewer.Viewer) error {
					if err := s.finishWith(tx, finish); err != nil {
						return err
					}
					return s.finishWith(tx, finish)
				})
			},
			"a shared write without its finish": func() error {
				return s.lockedTx(ctx, v, lockShared,
					func(tx *ent.Tx, _ *openWrite) (*viewer.Viewer, error) {
						return actingViewer(ctx, tx, v, viewer.RoleMember)
					},
					func(*ent.Tx, *viewer.Viewer) error { return nil })
			},
		} {
			at := version()
			if err := write(); err == nil || !strings.Contains(err.Error(), "finish") {
				t.Errorf("%s: %v, want refused", name, err)
			}
			if version() != at {
				t.Errorf("%s: the version moved", name)
			}
		}
		tx, err := db.Client.Tx(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if err := s.finishWith(tx, finish); err == nil {
			t.Error("a finish was declared outside a write")
		}
	})
}
