package core

// The change log's retention (docs/api.md, "Events"): events older than the
// retention are deleted in bounded batches, and each workspace remembers the
// highest version pruned, so that a subscription resumed from before it is
// told to refetch instead of being replayed a log with a hole in it.

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/event"
	"github.com/procsvc/procsvc/ent/workspace"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/viewer"
)

// DefaultEventRetention is how long events are kept when the server is
// not told otherwise (--event-retention).
const DefaultEventRetention = 30 * 24 * time.Hour

// DefaultPruneBatch bounds the events one pruning transaction deletes.
const DefaultPruneBatch = 1000

// PruneEvents deletes the events created before cutoff, at most batch per
// transaction, until none is left, and returns how many it deleted. Each
// transaction also raises the pruned workspaces' events_pruned_to to the
// highest version it deleted. It runs as the system (every workspace).
func (s *Service) PruneEvents(ctx context.Context, cutoff time.Time, batch int) (int, error) {
	if batch <= 0 {
		batch = DefaultPruneBatch
	}
	ctx = viewer.System(ctx)
	total := 0
	for {
		n, err := s.pruneBatch(ctx, cutoff, batch)
		total += n
		if err != nil || n < batch {
			return total, err
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
}

func (s *Service) pruneBatch(ctx context.Context, cutoff time.Time, batch int) (int, error) {
	tx, err := s.client.Tx(ctx)
	if err != nil {
		return 0, apperr.Map(err)
	}
	n, err := func() (int, error) {
		var rows []struct {
			ID          uuid.UUID `json:"id"`
			WorkspaceID uuid.UUID `json:"workspace_id"`
			Version     int64     `json:"version"`
		}
		err := tx.Event.Query().Where(event.CreatedAtLT(cutoff)).Order(event.ByCreatedAt()).Limit(batch).
			Select(event.FieldID, event.FieldWorkspaceID, event.FieldVersion).Scan(ctx, &rows)
		if err != nil || len(rows) == 0 {
			return 0, err
		}
		idList := make([]uuid.UUID, len(rows))
		horizon := map[uuid.UUID]int64{}
		for i, r := range rows {
			idList[i] = r.ID
			horizon[r.WorkspaceID] = max(horizon[r.WorkspaceID], r.Version)
		}
		// Horizons first, in a fixed order: the workspace rows are what
		// writes lock, so hold them as briefly as the batch allows.
		// Sorted: two replicas pruning at once lock them in one order.
		order := slices.SortedFunc(maps.Keys(horizon), func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
		for _, ws := range order {
			v := horizon[ws]
			if err := tx.Workspace.Update().Where(workspace.ID(ws), workspace.EventsPrunedToLT(v)).
				SetEventsPrunedTo(v).Exec(ctx); err != nil {
				return 0, err
			}
		}
		return tx.Event.Delete().Where(event.IDIn(idList...)).Exec(ctx)
	}()
	if err != nil {
		_ = tx.Rollback()
		return 0, apperr.Map(err)
	}
	return n, apperr.Map(tx.Commit())
}

// EventsAfter returns the viewer's workspace's events after version, oldest
// first, at most limit of them: a resumed subscription's replay. pruned is
// set when events after version may have been pruned (version is older
// than the retention): the replay would have a hole, and nothing is
// returned. The events are those the viewer may read (visibleEvents).
// Errors: validation_failed
// (afterVersion beyond the workspace's version).
func (s *Service) EventsAfter(ctx context.Context, version int64, limit int) (evs []*ent.Event, pruned bool, err error) {
	v, err := require(ctx, viewer.RoleViewer)
	if err != nil {
		return nil, false, err
	}
	ws, err := s.client.Workspace.Query().Where(workspace.ID(v.WorkspaceID)).
		Select(workspace.FieldEventsPrunedTo, workspace.FieldVersion).Only(ctx)
	if err != nil {
		return nil, false, apperr.Map(err)
	}
	if version > ws.Version {
		return nil, false, apperr.Invalid("afterVersion", "is ahead of the workspace, at version %d: resume from a version this workspace has given", ws.Version)
	}
	if version < ws.EventsPrunedTo {
		return nil, true, nil
	}
	evs, err = s.client.Event.Query().Where(event.VersionGT(version)).Where(visibleEvents(v)...).
		Order(event.ByVersion()).Limit(limit).All(ctx)
	return evs, false, apperr.Map(err)
}
