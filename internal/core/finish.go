package core

// The finish of a write (docs/design.md §10): one value says
// what a write ends with — its change-log entry, its tally changes and the
// change it announces — and finishWrite turns it into statements for the
// transaction's lock mode and database: after an exclusive lock (either
// database), the tallies' UPDATE, the log's INSERT and the announcer's
// statement; after a shared one (PostgreSQL's field updates), one statement
// that also bumps the version. Each column of the log's row and each tally
// is written by one function for both (entryRow, tallyChange.count), so a
// new column or tally is added in one place.

import (
	"context"
	"fmt"
	"sync"

	"entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/event"
	"github.com/procsvc/procsvc/ent/proceduretally"
	"github.com/procsvc/procsvc/ent/workspace"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/tenancy"
	"github.com/procsvc/procsvc/internal/viewer"
)

// writeFinish is what a write ends with, declared by its body
// (finishWith) and written by its transaction once the body has returned
// (finishWrite).
type writeFinish struct {
	// entry is the write's change-log entry (nil: the write logs nothing).
	entry *logEntry
	// tallies are the procedure sets the write made a procedure enter or
	// leave.
	tallies tallyChange
	// change is announced to subscribers if and only if the write commits
	// (nil: nothing is announced).
	change *Change
}

// procedureFinish is the finish of a procedure write: before is the row as
// of the lock (nil for a create), after the row stored (nil for a delete).
func procedureFinish(workspaceID uuid.UUID, kind ChangeKind, before, after *ent.Procedure) writeFinish {
	c, tallies := changeOf(workspaceID, kind, before, after)
	e := procedureEntry(procedureEntryKinds[kind], c, before, after)
	return writeFinish{entry: &e, tallies: tallies, change: &c}
}

// commentFinish is the finish of a comment write, announced as c (see
// commentEntry).
func commentFinish(kind EventKind, c Change, project *uuid.UUID, before, after *ent.Comment) writeFinish {
	e := commentEntry(kind, c, project, before, after)
	return writeFinish{entry: &e, change: &c}
}

// recordFinish is the finish of a write of a record that belongs to no
// procedure (see recordEntry): logged, not announced.
func recordFinish(kind EventKind, id uuid.UUID, before, after fields) writeFinish {
	e := recordEntry(kind, id, before, after)
	return writeFinish{entry: &e}
}

// accessFinish is recordFinish of a write that changes who may read the
// workspace (a member removed, demoted or unlinked, a token revoked):
// subscriptions of the workspace re-authenticate on its announcement.
func accessFinish(workspaceID uuid.UUID, kind EventKind, id uuid.UUID, before, after fields) writeFinish {
	f := recordFinish(kind, id, before, after)
	f.change = &Change{WorkspaceID: workspaceID, Kind: AccessChanged}
	return f
}

// lockStep is a lock a write's transaction takes. Every write takes them
// in this order, which keeps writes free of deadlocks: the workspace's
// lock (an advisory lock on PostgreSQL, BEGIN IMMEDIATE on SQLite), the
// procedure's row (a shared write's), the workspace's row (the version
// bump: an exclusive write's first statement, a shared write's last) and
// the tally rows (the finish's). An exclusive write takes any other row
// in between: the workspace's exclusive lock keeps every other write out.
// The token bookkeeping (internal/auth) takes the workspace's row, then
// its token's.
type lockStep uint8

const (
	lockNone lockStep = iota
	lockWorkspaceLock
	lockProcedureRow
	lockWorkspaceRow
	lockTallyRows
)

func (l lockStep) String() string {
	return [...]string{"nothing", "the workspace's lock", "the procedure's row", "the workspace's row", "the tally rows"}[l]
}

// openWrite is a write's transaction while it runs: its lock mode, the
// locks it holds (take refuses one out of order, so a path that would
// take them out of order fails at once, in every test that runs it, not
// by deadlock under load), and the finish its body declared.
type openWrite struct {
	mode   lockMode
	held   lockStep
	finish *writeFinish
}

// take records that the write takes l, refusing it after a lock that
// comes later in lockStep's order (or twice).
func (w *openWrite) take(l lockStep) error {
	if l <= w.held {
		return fmt.Errorf("core: lock order: %s taken after %s", l, w.held)
	}
	w.held = l
	return nil
}

// openWrites are the write transactions of a Service while they run.
type openWrites struct{ m sync.Map } // *ent.Tx → *openWrite

func (o *openWrites) open(tx *ent.Tx, mode lockMode) *openWrite {
	w := &openWrite{mode: mode}
	o.m.Store(tx, w)
	return w
}

func (o *openWrites) close(tx *ent.Tx) { o.m.Delete(tx) }

// finishWith declares what the write of tx ends with: written once its body
// returns, after everything the body wrote. A write declares at most one
// finish, and a shared write (lockShared) exactly one.
func (s *Service) finishWith(tx *ent.Tx, f writeFinish) error {
	v, ok := s.writes.m.Load(tx)
	if !ok {
		return fmt.Errorf("core: a finish declared outside a write transaction")
	}
	w := v.(*openWrite)
	if w.finish != nil {
		return fmt.Errorf("core: a write declared its finish twice")
	}
	w.finish = &f
	return nil
}

// finishWrite writes w's finish, in its transaction, after its body (only
// lockedTx calls it, once): under an exclusive lock as statements of their
// own — the tallies' UPDATE (tallyChange.apply), the log's INSERT
// (insertEntry) and the announcer's statement — and under a shared one as
// the write's last statement (sharedFinish).
func (s *Service) finishWrite(ctx context.Context, tx *ent.Tx, me *viewer.Viewer, w *openWrite) error {
	if w.mode == lockShared {
		if w.finish == nil {
			return fmt.Errorf("core: a shared write ended without its finish (its version bump)")
		}
		return s.sharedFinish(ctx, tx, me, w, *w.finish)
	}
	if w.finish == nil {
		return nil
	}
	f := *w.finish
	if keys := f.tallies.keys(); len(keys) > 0 {
		if err := w.take(lockTallyRows); err != nil {
			return err
		}
		if err := f.tallies.apply(ctx, tx, me.WorkspaceID, keys); err != nil {
			return err
		}
	}
	if f.entry != nil {
		row, err := entryRow(me, *f.entry, me.WorkspaceVersion)
		if err != nil {
			return err
		}
		if err := insertEntry(ctx, tx, row); err != nil {
			return err
		}
	}
	if f.change != nil && s.announcer != nil {
		return s.announcer.Announce(ctx, tx, *f.change)
	}
	return nil
}

// insertEntry appends row (entryRow's) to the change log through ent, so
// that the table's hooks run (the tenancy stamp): one INSERT.
func insertEntry(ctx context.Context, tx *ent.Tx, row []any) error {
	create := tx.Event.Create()
	m := create.Mutation()
	for i, col := range event.Columns {
		switch v := row[i]; {
		case v == nil: // NULL: an optional column left unset
		case col == event.FieldID:
			m.SetID(v.(uuid.UUID))
		default:
			if err := m.SetField(col, v); err != nil {
				return fmt.Errorf("core: change log: %w", err)
			}
		}
	}
	return create.Exec(ctx)
}

// writeEntryInsert writes row (entryRow's) as the SQL of an INSERT into
// the change log: "INSERT INTO events (…) VALUES (…)", a column's value
// being an argument, NULL, or (the version of sharedFinish) SQL.
func writeEntryInsert(b *sql.Builder, row []any) {
	b.WriteString("INSERT INTO ").Ident(event.Table).WriteString(" (")
	b.IdentComma(event.Columns...)
	// VALUES, not SELECT: its arguments take their columns' types.
	b.WriteString(") VALUES (")
	for i, v := range row {
		if i > 0 {
			b.Comma()
		}
		b.Arg(v)
	}
	b.WriteString(")")
}

// sharedFinish ends a shared write (lockShared, PostgreSQL) in one
// statement, a read of the workspace: the version bump, then the
// change-log entry at the bumped version, then the tallies' update (joined
// to the bump's row, so that no tally row is locked before the
// workspace's), then the announcer's notification over the new version,
// once. The only round trips the write makes while it holds the workspace
// exclusively are this statement and its commit. The statement returns
// one row (none if the workspace is gone): version, tallied (the tally
// rows it updated) and notified.
//
// The read keeps its predicates (the tenancy interceptor's, and the
// workspace's), so it returns the bump's row only for a workspace the
// viewer may see; the writes in its WITH clause are past the interceptor,
// so they confine themselves to the workspace (internal/tenancy).
func (s *Service) sharedFinish(ctx context.Context, tx *ent.Tx, me *viewer.Viewer, w *openWrite, f writeFinish) error {
	workspaceID := me.WorkspaceID
	if err := w.take(lockWorkspaceRow); err != nil {
		return err
	}
	keys := f.tallies.keys()
	if len(keys) > 0 {
		if err := w.take(lockTallyRows); err != nil {
			return err
		}
	}
	bumped := `(SELECT "` + workspace.FieldVersion + `" FROM "bumped")`
	var row []any
	if f.entry != nil {
		var err error
		if row, err = entryRow(me, *f.entry, sql.Expr(bumped)); err != nil {
			return err
		}
	}
	notify := func(b *sql.Builder, _ string) { b.WriteString("NULL") }
	announced := func(*ent.Tx, int64) {}
	if f.change != nil {
		var err error
		if notify, announced, err = s.statements.Notification(*f.change); err != nil {
			return err
		}
	}
	with := sql.ExprFunc(func(b *sql.Builder) {
		b.WriteString(`WITH "bumped" AS (UPDATE `).Ident(workspace.Table).WriteString(` SET `).Ident(workspace.FieldVersion).
			WriteString(` = COALESCE(`).Ident(workspace.FieldVersion).WriteString(`, 0) + 1 WHERE `)
		tenancy.WriteWhere(b, "", tenancy.WorkspacesColumn, workspaceID).
			WriteString(` RETURNING `).Ident(workspace.FieldVersion).WriteString(`)`)
		// Data-modifying CTEs run whether or not the query reads them.
		if row != nil {
			b.WriteString(`, "logged" AS (`)
			writeEntryInsert(b, row)
			b.WriteString(`)`)
		}
		if len(keys) == 0 {
			return
		}
		b.WriteString(`, "tallied" AS (UPDATE `).Ident(proceduretally.Table).WriteString(` SET `).
			Ident(proceduretally.FieldCount).WriteString(` = `)
		f.tallies.count(b, keys)
		b.WriteString(` FROM "bumped" WHERE `)
		tenancy.WriteWhere(b, proceduretally.Table, tenancy.Column, workspaceID).WriteString(` AND `)
		b.Ident(proceduretally.Table).WriteString(".").Ident(proceduretally.FieldKey).WriteString(" IN (")
		for i, k := range keys {
			if i > 0 {
				b.Comma()
			}
			b.Arg(k)
		}
		b.WriteString(`) RETURNING 1)`)
	})
	var rows []struct {
		Version  int64  `json:"version"`
		Tallied  int64  `json:"tallied"`
		Notified []byte `json:"notified"` // pg_notify returns void
	}
	err := tx.Workspace.Query().Where(workspace.ID(workspaceID)).Modify(func(s *sql.Selector) {
		s.Prefix(with).AppendFromExpr(sql.Expr(`"bumped"`))
		version := `"bumped"."` + workspace.FieldVersion + `"`
		s.Select(version)
		s.AppendSelectExprAs(sql.ExprFunc(func(b *sql.Builder) {
			if len(keys) == 0 {
				b.WriteString("0")
				return
			}
			b.WriteString(`(SELECT count(*) FROM "tallied")`)
		}), "tallied")
		s.AppendSelectExprAs(sql.ExprFunc(func(b *sql.Builder) { notify(b, version) }), "notified")
	}).Scan(ctx, &rows)
	if err != nil {
		return err
	}
	if len(rows) != 1 {
		return apperr.New(apperr.Disconnected, apperr.DisconnectedMessage)
	}
	if rows[0].Tallied != int64(len(keys)) {
		// The workspace lacks some of its tally rows (see tallyChange.apply).
		if err := repairTallies(ctx, tx.Client(), workspaceID, keys); err != nil {
			return err
		}
	}
	version := rows[0].Version
	announced(tx, version)
	committedAt(ctx, tx, version)
	return nil
}
