package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/ent/workspace"
	"github.com/procsvc/procsvc/internal/core"
)

// Channel is the PostgreSQL notification channel of committed changes.
const Channel = "procsvc_changes"

// NewPostgresAnnouncer returns the announcer of a PostgreSQL deployment: it
// runs pg_notify inside the write's transaction, so that PostgreSQL
// delivers the change to every Listener (every replica, this one included)
// if and only if the transaction commits, in commit order. The payload takes
// the workspace's version in the same statement, as of this write.
//
// If own is not nil, a committed change is also Recorded there at once (its
// observers, the response cache, learn of this replica's writes without
// waiting for the notification's round trip), and is Pending there from
// its statement to its commit's answer.
func NewPostgresAnnouncer(own *Hub) core.StatementAnnouncer { return postgresAnnouncer{own: own} }

type postgresAnnouncer struct{ own *Hub }

// Announce implements core.Announcer. Errors: what the statement returned
// (the write then rolls back).
func (a postgresAnnouncer) Announce(ctx context.Context, tx *ent.Tx, c core.Change) error {
	notify, announced, err := a.Notification(c)
	if err != nil {
		return err
	}
	var rows []struct {
		Version  int64  `json:"version"`
		Notified []byte `json:"notified"` // pg_notify returns void
	}
	err = tx.Workspace.Query().Where(workspace.ID(c.WorkspaceID)).Modify(func(s *sql.Selector) {
		version := s.C(workspace.FieldVersion)
		s.Select(version)
		s.AppendSelectExprAs(sql.ExprFunc(func(b *sql.Builder) { notify(b, version) }), "notified")
	}).Scan(ctx, &rows)
	if err != nil {
		return err
	}
	if len(rows) != 1 {
		return fmt.Errorf("events: workspace %s not found while announcing", c.WorkspaceID)
	}
	announced(tx, rows[0].Version)
	return nil
}

// Notification implements core.StatementAnnouncer: pg_notify of c's
// payload with the version added by the statement, and, once the statement
// has run, the Record of c in own when tx commits.
func (a postgresAnnouncer) Notification(c core.Change) (notify func(b *sql.Builder, version string), announced func(tx *ent.Tx, version int64), err error) {
	body, err := json.Marshal(payloadOf(c))
	if err != nil {
		return nil, nil, err
	}
	notify = func(b *sql.Builder, version string) {
		b.WriteString("pg_notify(").Arg(Channel).WriteString(", (").
			Arg(string(body)).WriteString("::jsonb || jsonb_build_object('version', ").
			WriteString(version).WriteString("))::text)")
	}
	announced = func(tx *ent.Tx, version int64) {
		if a.own == nil {
			return
		}
		e := Notification{Change: c, Version: version}
		// Pending before the commit: PostgreSQL shows the version to
		// other readers before this writer hears its commit's answer
		// (Hub.Pending).
		resolve := a.own.Pending(e)
		tx.OnCommit(func(next ent.Committer) ent.Committer {
			return ent.CommitFunc(func(ctx context.Context, tx *ent.Tx) error {
				if err := next.Commit(ctx, tx); err != nil {
					resolve(false)
					return err
				}
				a.own.Record(e)
				resolve(true)
				return nil
			})
		})
		tx.OnRollback(func(next ent.Rollbacker) ent.Rollbacker {
			return ent.RollbackFunc(func(ctx context.Context, tx *ent.Tx) error {
				resolve(false)
				return next.Rollback(ctx, tx)
			})
		})
	}
	return notify, announced, nil
}

// payload is a change as notified: ids and facets only, far below
// PostgreSQL's 8000-byte limit. Version is added by the statement.
type payload struct {
	WorkspaceID uuid.UUID       `json:"workspaceId"`
	Kind        core.ChangeKind `json:"kind"`
	ProcedureID uuid.UUID       `json:"procedureId"`
	Before      *facets         `json:"before,omitempty"`
	After       *facets         `json:"after,omitempty"`
	Reworded    bool            `json:"reworded,omitempty"`
	Renamed     bool            `json:"renamed,omitempty"`
	Version     int64           `json:"version,omitempty"`
}

// facets are core.Facets as notified. A payload of an older replica has
// only projectId and state: decoded without a priority, its facets are not
// known to core (which then assumes the change touches every cached list).
type facets struct {
	ProjectID  uuid.UUID          `json:"projectId"`
	State      procedure.State    `json:"state"`
	Priority   procedure.Priority `json:"priority,omitempty"`
	CategoryID *uuid.UUID         `json:"categoryId,omitempty"`
	DoerID     *uuid.UUID         `json:"doerId,omitempty"`
	DueAt      time.Time          `json:"dueAt"`
}

func payloadOf(c core.Change) payload {
	return payload{WorkspaceID: c.WorkspaceID, Kind: c.Kind, ProcedureID: c.ProcedureID,
		Before: facetsPayload(c.Before), After: facetsPayload(c.After), Reworded: c.Reworded, Renamed: c.Renamed}
}

func facetsPayload(f *core.Facets) *facets {
	if f == nil {
		return nil
	}
	return &facets{ProjectID: f.ProjectID, State: f.State, Priority: f.Priority,
		CategoryID: f.CategoryID, DoerID: f.DoerID, DueAt: f.DueAt}
}

func (f *facets) core() (*core.Facets, error) {
	if f == nil {
		return nil, nil
	}
	if err := procedure.StateValidator(f.State); err != nil {
		return nil, err
	}
	if f.Priority != "" {
		if err := procedure.PriorityValidator(f.Priority); err != nil {
			return nil, err
		}
	}
	return &core.Facets{ProjectID: f.ProjectID, State: f.State, Priority: f.Priority,
		CategoryID: f.CategoryID, DoerID: f.DoerID, DueAt: f.DueAt.UTC()}, nil
}

// decode turns a notification's payload back into an event. It rejects
// what no announcer of this version sends, so that a subscriber never sees
// a kind or state it cannot render (e.g. from a newer replica mid-rollout).
func decode(raw string) (Notification, error) {
	var p payload
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return Notification{}, err
	}
	if p.WorkspaceID == uuid.Nil {
		return Notification{}, errors.New("no workspaceId")
	}
	if p.Version <= 0 {
		return Notification{}, errors.New("no version")
	}
	switch p.Kind {
	case core.ProcedureCreated, core.ProcedureUpdated, core.ProcedureMoved, core.ProcedureDeleted, core.ProcedureCommented:
		if p.ProcedureID == uuid.Nil {
			return Notification{}, fmt.Errorf("%s without procedureId", p.Kind)
		}
	case core.AccessChanged:
	default:
		return Notification{}, fmt.Errorf("unknown kind %q", p.Kind)
	}
	before, err := p.Before.core()
	if err != nil {
		return Notification{}, fmt.Errorf("before: %w", err)
	}
	after, err := p.After.core()
	if err != nil {
		return Notification{}, fmt.Errorf("after: %w", err)
	}
	return Notification{Change: core.Change{WorkspaceID: p.WorkspaceID, Kind: p.Kind, ProcedureID: p.ProcedureID,
		Before: before, After: after, Reworded: p.Reworded, Renamed: p.Renamed}, Version: p.Version}, nil
}
