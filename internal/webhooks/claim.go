package webhooks

// Claims: the due deliveries a fan-out did not hand to its replica at
// once (no room, a retry that came due, a redelivery, a lease that expired
// with the replica that held it), leased workspace by workspace and, in
// each, endpoint by endpoint, within each workspace's share of what a
// replica holds, so that neither a workspace's backlog nor an endpoint's
// stands in front of another's. On PostgreSQL the
// rows are locked FOR UPDATE SKIP LOCKED until the lease is set, so two
// replicas never lease the same delivery; SQLite's BEGIN IMMEDIATE
// serialises the one process's claims.

import (
	"context"
	"errors"
	"time"

	"entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/event"
	"github.com/procsvc/procsvc/ent/webhookdelivery"
	"github.com/procsvc/procsvc/ent/webhookendpoint"
)

// claimEndpoints bounds the endpoints one claim leases from; the next
// claim goes on from where it stopped.
const claimEndpoints = 100

// claim leases the due deliveries of the enabled endpoints this replica
// has room for, and queues them.
func (d *Dispatcher) claim(ctx context.Context) (err error) {
	// The enabled endpoints with a delivery to claim, in one read (most
	// polls find none, and take no transaction): each endpoint's due
	// deliveries are a range of the index (endpoint_id, state,
	// next_attempt_at), in which only the leased ones are passed over.
	at := now()
	eps, err := d.client.WebhookEndpoint.Query().Where(webhookendpoint.Enabled(true), func(s *sql.Selector) {
		s.Where(sql.P(func(b *sql.Builder) {
			b.WriteString(`EXISTS (SELECT 1 FROM "` + webhookdelivery.Table + `" AS "due" WHERE "due"."endpoint_id" = ` +
				s.C(webhookendpoint.FieldID) + ` AND "due"."state" = `).Arg(webhookdelivery.StatePending.String()).
				WriteString(` AND "due"."next_attempt_at" <= `).Arg(at).
				WriteString(` AND ("due"."lease_until" IS NULL OR "due"."lease_until" <= `).Arg(at).WriteString("))")
		}))
	}).Order(webhookendpoint.ByWorkspaceID(), webhookendpoint.ByID()).
		Select(webhookendpoint.FieldID, webhookendpoint.FieldWorkspaceID, webhookendpoint.FieldURL, webhookendpoint.FieldSecret).
		All(ctx)
	if err != nil || len(eps) == 0 {
		return err
	}
	var grants []*grant
	for _, ws := range d.claimOrder(eps) {
		// The workspace's room is shared among its endpoints claimed
		// now, so that its first endpoint's backlog does not take it
		// all.
		want := min(d.opts.Held, (d.lanes.room(ws[0].WorkspaceID)+len(ws)-1)/len(ws))
		for _, ep := range ws {
			g := &grant{endpoint: &endpoint{id: ep.ID, workspaceID: ep.WorkspaceID, url: ep.URL, secret: ep.Secret}}
			if g.granted = d.lanes.take(ep.ID, ep.WorkspaceID, max(1, want)); g.granted > 0 {
				grants = append(grants, g)
			}
		}
	}
	if len(grants) == 0 {
		return nil
	}
	defer func() {
		if err != nil {
			for _, g := range grants {
				d.lanes.fill(g.endpoint.id, g.granted, nil, true)
			}
		}
	}()
	claimed, err := d.lease(ctx, grants)
	if err != nil {
		return err
	}
	bodies, err := d.bodies(ctx, claimed)
	if err != nil {
		// Leased but not to be sent now: their leases expire, and they
		// are claimed again.
		return err
	}
	for _, g := range grants {
		var jobs []*job
		for _, dl := range claimed[g.endpoint.id] {
			j := &job{id: dl.ID, endpoint: g.endpoint, eventID: dl.EventID, attempts: dl.Attempts, lease: *dl.LeaseUntil}
			if e, ok := bodies[dl.EventID]; ok {
				j.eventType, j.eventAt, j.body, j.missing = e.kind, e.at, e.body, e.missing
			} else {
				j.missing = "the event is no longer retained (--event-retention)"
			}
			jobs = append(jobs, j)
		}
		d.release(d.lanes.fill(g.endpoint.id, g.granted, jobs, len(jobs) == g.granted))
	}
	return nil
}

// claimOrder picks the endpoints one claim leases from, at most
// claimEndpoints of eps (ordered by workspace), by workspace: one endpoint
// of each workspace in turn, starting from a workspace, and in each
// workspace from an endpoint, that rotate from one claim to the next, so
// that neither a workspace's many endpoints nor a place in the order
// stand in front of other deliveries.
func (d *Dispatcher) claimOrder(eps []*ent.WebhookEndpoint) [][]*ent.WebhookEndpoint {
	var groups [][]*ent.WebhookEndpoint
	for i, ep := range eps {
		if i == 0 || ep.WorkspaceID != eps[i-1].WorkspaceID {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], ep)
	}
	start := d.claimFrom % len(groups)
	picked := make([][]*ent.WebhookEndpoint, len(groups))
	offsets := make([]int, len(groups))
	for g, eps := range groups {
		offsets[g] = d.claimNext[eps[0].WorkspaceID] % len(eps)
	}
	n, reached := 0, 0
	for round := 0; n < claimEndpoints; round++ {
		any := false
		for k := range groups {
			g := (start + k) % len(groups)
			if round >= len(groups[g]) {
				continue
			}
			if round == 0 {
				reached++
			}
			picked[g] = append(picked[g], groups[g][(offsets[g]+round)%len(groups[g])])
			any = true
			if n++; n == claimEndpoints {
				break
			}
		}
		if !any {
			break
		}
	}
	// The next claim starts from the first workspace this one did not
	// reach, or, when it reached them all, from the next one.
	d.claimFrom = start + max(1, reached%len(groups))
	// Each workspace's next claim starts from the endpoint after the
	// last this one took (only the workspaces with due deliveries are
	// remembered).
	next := make(map[uuid.UUID]int, len(groups))
	for g, eps := range groups {
		next[eps[0].WorkspaceID] = offsets[g] + len(picked[g])
	}
	d.claimNext = next
	out := make([][]*ent.WebhookEndpoint, 0, reached)
	for k := range groups {
		if g := picked[(start+k)%len(groups)]; len(g) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// lease leases up to each grant's room of its endpoint's due deliveries,
// in one transaction, and returns them by endpoint.
func (d *Dispatcher) lease(ctx context.Context, grants []*grant) (map[uuid.UUID][]*ent.WebhookDelivery, error) {
	tx, err := d.client.Tx(ctx)
	if err != nil {
		return nil, err
	}
	at := now()
	until := at.Add(d.opts.Lease)
	out := map[uuid.UUID][]*ent.WebhookDelivery{}
	var leased []uuid.UUID
	for _, g := range grants {
		q := tx.WebhookDelivery.Query().Where(webhookdelivery.EndpointID(g.endpoint.id),
			webhookdelivery.StateEQ(webhookdelivery.StatePending), webhookdelivery.NextAttemptAtLTE(at),
			webhookdelivery.Or(webhookdelivery.LeaseUntilIsNil(), webhookdelivery.LeaseUntilLTE(at))).
			Order(webhookdelivery.ByNextAttemptAt()).Limit(g.granted).
			Select(webhookdelivery.FieldID, webhookdelivery.FieldEventID, webhookdelivery.FieldAttempts)
		if d.postgres {
			q.ForUpdate(sql.WithLockAction(sql.SkipLocked))
		}
		rows, err := q.All(ctx)
		if err != nil {
			return nil, errors.Join(err, tx.Rollback())
		}
		for _, r := range rows {
			r.LeaseUntil = &until
			leased = append(leased, r.ID)
		}
		out[g.endpoint.id] = rows
	}
	if len(leased) == 0 {
		return out, tx.Rollback()
	}
	if err := tx.WebhookDelivery.Update().Where(webhookdelivery.IDIn(leased...)).SetLeaseUntil(until).Exec(ctx); err != nil {
		return nil, errors.Join(err, tx.Rollback())
	}
	return out, tx.Commit()
}

// rendered is an event as its deliveries send it.
type rendered struct {
	kind    string
	at      time.Time
	body    []byte
	missing string
}

// bodies reads and renders the events of the claimed deliveries, in
// statements of at most insertChunk ids. An event not found has been
// pruned.
func (d *Dispatcher) bodies(ctx context.Context, claimed map[uuid.UUID][]*ent.WebhookDelivery) (map[uuid.UUID]rendered, error) {
	seen := map[uuid.UUID]bool{}
	var want []uuid.UUID
	for _, rows := range claimed {
		for _, r := range rows {
			if !seen[r.EventID] {
				seen[r.EventID] = true
				want = append(want, r.EventID)
			}
		}
	}
	out := map[uuid.UUID]rendered{}
	cache := map[uuid.UUID][]byte{}
	for start := 0; start < len(want); start += insertChunk {
		evs, err := d.client.Event.Query().Where(event.IDIn(want[start:min(start+insertChunk, len(want))]...)).All(ctx)
		if err != nil {
			return nil, err
		}
		for _, e := range evs {
			body, missing := d.bodyOf(e, cache)
			out[e.ID] = rendered{kind: e.Kind, at: e.CreatedAt, body: body, missing: missing}
		}
	}
	return out, nil
}
