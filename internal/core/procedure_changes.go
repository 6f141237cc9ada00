package core

// What a procedure write announces: the change, its facets and tallies.

import (
	"context"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/workspace"
	"github.com/procsvc/procsvc/internal/apperr"
)

// procedureChanged keeps the tallies and announces a procedure write, in
// its transaction: before is the row as of the lock (nil for a create),
// after the row stored (nil for a delete).
func (s *Service) procedureChanged(ctx context.Context, tx *ent.Tx, workspaceID uuid.UUID, kind ChangeKind, before, after *ent.Procedure) error {
	c, tallies := changeOf(workspaceID, kind, before, after)
	if err := tallies.apply(ctx, tx, workspaceID); err != nil {
		return err
	}
	return s.announce(ctx, tx, c)
}

// fieldsChanged ends a field update (lockShared) of before into after, on
// PostgreSQL: one statement bumps the workspace's version, keeps the
// tallies and announces the change through sa, so that the only round trips
// a field update makes while it holds the workspace exclusively are that
// statement and its commit.
func fieldsChanged(ctx context.Context, tx *ent.Tx, sa StatementAnnouncer, workspaceID uuid.UUID, before, after *ent.Procedure) error {
	c, tallies := changeOf(workspaceID, ProcedureUpdated, before, after)
	notify, announced, err := sa.Notification(c)
	if err != nil {
		return err
	}
	finish, keys := bumpStatement(workspaceID, tallies, notify)
	var rows []struct {
		Version  int64  `json:"version"`
		Tallied  int64  `json:"tallied"`
		Notified []byte `json:"notified"` // pg_notify returns void
	}
	if err := tx.Workspace.Query().Where(workspace.ID(workspaceID)).Modify(finish).Scan(ctx, &rows); err != nil {
		return err
	}
	if len(rows) != 1 {
		return apperr.New(apperr.Disconnected, apperr.DisconnectedMessage)
	}
	if rows[0].Tallied != int64(keys) {
		// The workspace lacks its tally rows (see tallyChange.apply).
		if err := rebuildTallies(ctx, tx.Client(), workspaceID); err != nil {
			return err
		}
	}
	version := rows[0].Version
	announced(tx, version)
	return nil
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
