package webhooks

// Fan-out: the change log turned into deliveries, endpoint by endpoint, in
// transactions that each lock the endpoints they advance. An endpoint's
// cursor is the version up to which its deliveries are queued: the
// deliveries of the events after it and the cursor's advance past them
// commit together, under the endpoint row's lock (FOR UPDATE SKIP LOCKED
// on PostgreSQL, so that replicas share endpoints instead of queueing for
// them; SQLite's BEGIN IMMEDIATE on one process), so no event is queued
// twice for one endpoint, nor skipped.
//
// The log's versions commit in order (the workspace row's lock orders the
// bumps, internal/core, transaction.go), so once a transaction reads the
// workspace at version V, every event up to V is visible to its next
// statement, and versions with no event (the token bookkeeping's bumps)
// are simply passed.

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	entsql "entgo.io/ent/dialect/sql"
	"github.com/google/uuid"
	"github.com/lib/pq"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/event"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/ent/webhookdelivery"
	"github.com/procsvc/procsvc/ent/webhookendpoint"
	"github.com/procsvc/procsvc/ent/workspace"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/ids"
)

// insertChunk bounds the rows of one INSERT: 16 columns each, well under
// SQLite's 32 766 variables and PostgreSQL's 65 535 parameters.
const insertChunk = 1000

// behind selects the endpoints whose cursor is before their workspace's
// version. The system reads every workspace; the subquery reads each
// endpoint's own.
func behind(s *entsql.Selector) {
	s.Where(entsql.ExprP(s.C(webhookendpoint.FieldCursor) + ` < (SELECT "` + workspace.FieldVersion + `" FROM "` +
		workspace.Table + `" WHERE "` + workspace.Table + `"."` + workspace.FieldID + `" = ` + s.C(webhookendpoint.FieldWorkspaceID) + `)`))
}

// keepUpdatedAt leaves an endpoint's updated_at as it is: it says when an
// admin last changed the endpoint, not when its cursor or health moved.
func keepUpdatedAt(u *entsql.UpdateBuilder) {
	u.Set(webhookendpoint.FieldUpdatedAt, entsql.ExprFunc(func(b *entsql.Builder) { b.Ident(webhookendpoint.FieldUpdatedAt) }))
}

// filter is an endpoint's choice of events.
type filter struct {
	kinds   map[string]bool // nil: every kind
	project *uuid.UUID
	broken  bool
}

func filterOf(ep *ent.WebhookEndpoint) filter {
	f := filter{project: ep.ProjectID}
	var kinds []string
	if err := json.Unmarshal([]byte(ep.Kinds), &kinds); err != nil {
		// The admin API stores a JSON array of kinds; anything else
		// matches no event rather than every one.
		f.broken = true
		return f
	}
	if len(kinds) > 0 {
		f.kinds = map[string]bool{}
		for _, k := range kinds {
			f.kinds[k] = true
		}
	}
	return f
}

// matches reports whether f selects e. An event with a procedure but no
// project (a comment's edit or deletion) belongs to the procedure's
// current project, as projects says.
func (f filter) matches(e *ent.Event, projects map[uuid.UUID]uuid.UUID) bool {
	if f.broken || f.kinds != nil && !f.kinds[e.Kind] {
		return false
	}
	if f.project == nil {
		return true
	}
	if e.ProjectID != nil {
		return *e.ProjectID == *f.project
	}
	if e.ProcedureID != nil {
		p, ok := projects[*e.ProcedureID]
		return ok && p == *f.project
	}
	return false
}

// grant is room taken in an endpoint's lane for the deliveries a fan-out
// leases to this replica at once.
type grant struct {
	endpoint *endpoint
	granted  int
	jobs     []*job
	events   []*ent.Event // jobs[i]'s
	more     bool
}

// fanOut queues the deliveries of one batch of endpoints. more reports
// that endpoints or events may be left for another batch.
func (d *Dispatcher) fanOut(ctx context.Context) (more bool, err error) {
	// Most polls find nothing to do: a read says so without a
	// transaction (on SQLite, without the database's write lock).
	if due, err := d.client.WebhookEndpoint.Query().Where(webhookendpoint.Enabled(true), behind).Exist(ctx); err != nil || !due {
		d.fanOutAfter = uuid.UUID{}
		return false, err
	}
	tx, err := d.client.Tx(ctx)
	if err != nil {
		return false, err
	}
	var grants []*grant
	defer func() {
		if err != nil {
			_ = tx.Rollback()
			for _, g := range grants {
				d.lanes.fill(g.endpoint.id, g.granted, nil, true)
			}
		}
	}()
	q := tx.WebhookEndpoint.Query().Where(webhookendpoint.Enabled(true), behind).
		Order(webhookendpoint.ByID()).Limit(d.opts.FanOutEndpoints)
	after := d.fanOutAfter
	if after != (uuid.UUID{}) {
		q.Where(webhookendpoint.IDGT(after))
	}
	if d.postgres {
		q.ForUpdate(entsql.WithLockAction(entsql.SkipLocked))
	}
	eps, err := q.All(ctx)
	if err != nil {
		return false, err
	}
	if len(eps) == d.opts.FanOutEndpoints {
		d.fanOutAfter, more = eps[len(eps)-1].ID, true
	} else {
		// The next batch starts over: from the first when this one did
		// not.
		d.fanOutAfter, more = uuid.UUID{}, after != (uuid.UUID{})
	}
	if len(eps) == 0 {
		return more, tx.Rollback()
	}
	byWorkspace := map[uuid.UUID][]*ent.WebhookEndpoint{}
	var order []uuid.UUID
	for _, ep := range eps {
		if byWorkspace[ep.WorkspaceID] == nil {
			order = append(order, ep.WorkspaceID)
		}
		byWorkspace[ep.WorkspaceID] = append(byWorkspace[ep.WorkspaceID], ep)
	}
	wss, err := tx.Workspace.Query().Where(workspace.IDIn(order...)).
		Select(workspace.FieldID, workspace.FieldVersion).All(ctx)
	if err != nil {
		return false, err
	}
	versions := map[uuid.UUID]int64{}
	for _, ws := range wss {
		versions[ws.ID] = ws.Version
	}
	at := now()
	lease := at.Add(d.opts.Lease)
	var queued []queuedDelivery
	for _, ws := range order {
		wsEps := byWorkspace[ws]
		cursor := wsEps[0].Cursor
		for _, ep := range wsEps {
			cursor = min(cursor, ep.Cursor)
		}
		version := versions[ws]
		evs, err := tx.Event.Query().Where(event.WorkspaceID(ws), event.VersionGT(cursor), event.VersionLTE(version)).
			Order(event.ByVersion()).Limit(d.opts.FanOutEvents).All(ctx)
		if err != nil {
			return false, err
		}
		// Everything up to high has been examined: up to the version
		// read, unless the batch was cut short.
		high := version
		if len(evs) == d.opts.FanOutEvents {
			high, more = evs[len(evs)-1].Version, true
		}
		filters := make([]filter, len(wsEps))
		var projectFilter bool
		for i, ep := range wsEps {
			filters[i] = filterOf(ep)
			projectFilter = projectFilter || filters[i].project != nil
			if filters[i].broken {
				d.log.Warn("webhooks: an endpoint's kinds are not a JSON array: it is sent nothing", "endpoint_id", ep.ID.String())
			}
		}
		var projects map[uuid.UUID]uuid.UUID
		if projectFilter {
			if projects, err = procedureProjects(ctx, tx, evs); err != nil {
				return false, err
			}
		}
		for i, ep := range wsEps {
			if ep.Cursor >= high {
				continue
			}
			var matched []*ent.Event
			for _, e := range evs {
				if e.Version > ep.Cursor && filters[i].matches(e, projects) {
					matched = append(matched, e)
				}
			}
			g := &grant{endpoint: &endpoint{id: ep.ID, workspaceID: ep.WorkspaceID, url: ep.URL, secret: ep.Secret}}
			if g.granted = d.lanes.take(ep.ID, ws, len(matched)); g.granted > 0 {
				grants = append(grants, g)
			}
			for k, e := range matched {
				q := queuedDelivery{id: ids.New(ids.KindDelivery), workspaceID: ws, endpointID: ep.ID, eventID: e.ID, version: e.Version}
				if k < g.granted {
					q.leased = true
					g.jobs = append(g.jobs, &job{id: q.id, endpoint: g.endpoint, eventID: e.ID, eventType: e.Kind,
						eventAt: e.CreatedAt, lease: lease})
					g.events = append(g.events, e)
				}
				queued = append(queued, q)
			}
			g.more = len(matched) > g.granted
			if err := tx.WebhookEndpoint.Update().Where(webhookendpoint.ID(ep.ID)).SetCursor(high).
				Modify(keepUpdatedAt).Exec(ctx); err != nil {
				return false, err
			}
		}
	}
	for start := 0; start < len(queued); start += insertChunk {
		if err := d.insert(ctx, tx, queued[start:min(start+insertChunk, len(queued))], at, lease); err != nil {
			return false, err
		}
	}
	if err := tx.Commit(); err != nil {
		return false, err
	}
	// Rendered once committed: the transaction holds its locks (on
	// SQLite, the database's) no longer than its statements need.
	bodies := map[uuid.UUID][]byte{}
	for _, g := range grants {
		for i, j := range g.jobs {
			j.body, j.missing = d.bodyOf(g.events[i], bodies)
		}
		d.release(d.lanes.fill(g.endpoint.id, g.granted, g.jobs, g.more))
	}
	return more, nil
}

// queuedDelivery is a delivery a fan-out queues; leased: to this replica.
type queuedDelivery struct {
	id, workspaceID, endpointID, eventID uuid.UUID
	version                              int64
	leased                               bool
}

// insert writes queued deliveries, due at at (those leased until lease):
// on PostgreSQL in one statement from one array per column (an INSERT of
// rows of arguments costs the server more to parse than to insert), in a
// data-modifying WITH of a read (ent builds no INSERT … SELECT); on SQLite
// with ent's bulk insert.
func (d *Dispatcher) insert(ctx context.Context, tx *ent.Tx, queued []queuedDelivery, at, lease time.Time) error {
	if !d.postgres {
		creates := make([]*ent.WebhookDeliveryCreate, len(queued))
		for i, q := range queued {
			creates[i] = tx.WebhookDelivery.Create().SetID(q.id).SetWorkspaceID(q.workspaceID).SetEndpointID(q.endpointID).
				SetEventID(q.eventID).SetEventVersion(q.version).SetNextAttemptAt(at).SetCreatedAt(at)
			if q.leased {
				creates[i].SetLeaseUntil(lease)
			}
		}
		return tx.WebhookDelivery.CreateBulk(creates...).Exec(ctx)
	}
	n := len(queued)
	ids, workspaces, endpoints, events := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	versions, leases := make([]int64, n), make([]sql.NullString, n)
	for i, q := range queued {
		ids[i], workspaces[i], endpoints[i], events[i], versions[i] = q.id.String(), q.workspaceID.String(), q.endpointID.String(), q.eventID.String(), q.version
		if q.leased {
			leases[i] = sql.NullString{String: lease.Format(time.RFC3339Nano), Valid: true}
		}
	}
	with := entsql.ExprFunc(func(b *entsql.Builder) {
		b.WriteString(`WITH "queued" AS (INSERT INTO "` + webhookdelivery.Table + `" ("id", "workspace_id", "endpoint_id", "event_id", ` +
			`"event_version", "lease_until", "state", "attempts", "next_attempt_at", "response_excerpt", "error", "manual", "created_at") ` +
			`SELECT "r".*, `).Arg(webhookdelivery.StatePending.String()).WriteString(", 0, ").Arg(at).
			WriteString(", '', '', false, ").Arg(at).WriteString(" FROM unnest(")
		b.Arg(pq.Array(ids)).WriteString("::uuid[], ").Arg(pq.Array(workspaces)).WriteString("::uuid[], ").
			Arg(pq.Array(endpoints)).WriteString("::uuid[], ").Arg(pq.Array(events)).WriteString("::uuid[], ").
			Arg(pq.Array(versions)).WriteString("::bigint[], ").Arg(pq.GenericArray{A: leases}).WriteString("::timestamptz[]")
		b.WriteString(`) AS "r" RETURNING 1)`)
	})
	var rows []struct {
		N int `json:"n"`
	}
	return tx.WebhookDelivery.Query().Modify(func(s *entsql.Selector) {
		s.Prefix(with)
		s.From(entsql.Table("queued"))
		s.Select(entsql.As(entsql.Count("*"), "n"))
	}).Scan(ctx, &rows)
}

// procedureProjects reads the current project of the procedures of evs'
// events that have a procedure but no project, in one statement.
func procedureProjects(ctx context.Context, tx *ent.Tx, evs []*ent.Event) (map[uuid.UUID]uuid.UUID, error) {
	var need []uuid.UUID
	for _, e := range evs {
		if e.ProjectID == nil && e.ProcedureID != nil {
			need = append(need, *e.ProcedureID)
		}
	}
	out := map[uuid.UUID]uuid.UUID{}
	if len(need) == 0 {
		return out, nil
	}
	ps, err := tx.Procedure.Query().Where(procedure.IDIn(need...)).Select(procedure.FieldID, procedure.FieldProjectID).All(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		out[p.ID] = p.ProjectID
	}
	return out, nil
}

// bodyOf renders e as its deliveries' body (core.EventOf), once per event
// of a batch (bodies).
func (d *Dispatcher) bodyOf(e *ent.Event, bodies map[uuid.UUID][]byte) (body []byte, missing string) {
	if b, ok := bodies[e.ID]; ok {
		return b, ""
	}
	out, err := core.EventOf(e)
	if err == nil {
		body, err = json.Marshal(out)
	}
	if err != nil {
		d.log.Error("webhooks: an event cannot be rendered", "event_id", e.ID.String(), "error", err.Error())
		return nil, fmt.Sprintf("the event could not be rendered: %v", err)
	}
	bodies[e.ID] = body
	return body, ""
}

// release hands jobs back: their leases are cleared for any replica.
func (d *Dispatcher) release(jobs []*job) {
	for _, j := range jobs {
		d.results <- result{job: j, released: true}
	}
}
