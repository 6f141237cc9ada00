package events

import (
	"context"
	"sync"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/workspace"
	"github.com/procsvc/procsvc/internal/core"
)

// NewLocalAnnouncer returns the announcer of a single process (SQLite, or
// tests): it reads the workspace's version inside the write's transaction
// and publishes to h once the transaction has committed, never for one
// rolled back or whose commit failed.
//
// Events reach h in commit order: the announcer holds one lock from each
// commit to its publication, so a write that committed later, once the
// workspace lock was free, cannot publish first. On SQLite writes are
// serialised anyway, so the lock costs no concurrency there; do not use it
// on a PostgreSQL server with replicas (NewPostgresAnnouncer).
func NewLocalAnnouncer(h *Hub) core.Announcer {
	return &localAnnouncer{hub: h, pending: map[*ent.Tx]*batch{}}
}

type localAnnouncer struct {
	hub *Hub

	// ordered is held from a commit to its publication.
	ordered sync.Mutex

	mu      sync.Mutex
	pending map[*ent.Tx]*batch
}

// batch is what one transaction announced, published together on commit in
// the order announced. A transaction is used by one goroutine at a time, so
// its batch needs no lock of its own.
type batch struct {
	workspaceID uuid.UUID
	version     int64
	events      []Notification
}

// Announce implements core.Announcer. Errors: what reading the workspace's
// version returned (the write then rolls back).
func (a *localAnnouncer) Announce(ctx context.Context, tx *ent.Tx, c core.Change) error {
	a.mu.Lock()
	b := a.pending[tx]
	a.mu.Unlock()
	if b == nil || b.workspaceID != c.WorkspaceID {
		ws, err := tx.Workspace.Query().Where(workspace.ID(c.WorkspaceID)).Select(workspace.FieldVersion).Only(ctx)
		if err != nil {
			return err
		}
		if b == nil {
			b = &batch{}
			a.mu.Lock()
			a.pending[tx] = b
			a.mu.Unlock()
			tx.OnCommit(a.onCommit)
			tx.OnRollback(a.onRollback)
		}
		b.workspaceID, b.version = c.WorkspaceID, ws.Version
	}
	b.events = append(b.events, Notification{Change: c, Version: b.version})
	return nil
}

func (a *localAnnouncer) onCommit(next ent.Committer) ent.Committer {
	return ent.CommitFunc(func(ctx context.Context, tx *ent.Tx) error {
		a.ordered.Lock()
		defer a.ordered.Unlock()
		b := a.take(tx)
		// Pending before the commit: SQLite shows the version to other
		// connections before this one publishes it (Hub.Pending).
		resolvers := make([]func(bool), len(b.events))
		for i, e := range b.events {
			resolvers[i] = a.hub.Pending(e)
		}
		err := next.Commit(ctx, tx)
		if err == nil {
			for _, e := range b.events {
				a.hub.Publish(e)
			}
		}
		for _, resolve := range resolvers {
			resolve(err == nil)
		}
		return err
	})
}

func (a *localAnnouncer) onRollback(next ent.Rollbacker) ent.Rollbacker {
	return ent.RollbackFunc(func(ctx context.Context, tx *ent.Tx) error {
		a.take(tx)
		return next.Rollback(ctx, tx)
	})
}

// take removes and returns tx's batch (an empty one if none).
func (a *localAnnouncer) take(tx *ent.Tx) *batch {
	a.mu.Lock()
	defer a.mu.Unlock()
	b := a.pending[tx]
	delete(a.pending, tx)
	if b == nil {
		b = &batch{}
	}
	return b
}
