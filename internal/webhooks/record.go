package webhooks

// Recording outcomes: whatever results wait when the recorder is free are
// written together, in one transaction (one statement for the deliveries
// on PostgreSQL), so the batches grow with the load and an idle dispatcher
// records each outcome at once. A delivery is written only while this
// replica's lease on it holds (lease_until is still the one it set): a
// delivery whose lease ran out belongs to whoever claimed it next.

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	entsql "entgo.io/ent/dialect/sql"
	"github.com/google/uuid"
	"github.com/lib/pq"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/webhookdelivery"
	"github.com/procsvc/procsvc/ent/webhookendpoint"
	"github.com/procsvc/procsvc/internal/viewer"
)

// recordTimeout bounds one batch's recording, retries included.
const recordTimeout = 30 * time.Second

// record is the recorder's loop: it ends once the results channel is
// closed and drained.
func (d *Dispatcher) record() {
	defer d.recorder.Done()
	batch := make([]result, 0, d.opts.RecordBatch)
	for r := range d.results {
		batch = append(batch[:0], r)
	gather:
		for len(batch) < d.opts.RecordBatch {
			select {
			case r, ok := <-d.results:
				if !ok {
					break gather
				}
				batch = append(batch, r)
			default:
				break gather
			}
		}
		d.flush(batch)
	}
}

// outcome is a delivery's row as an attempt leaves it.
type outcome struct {
	id       uuid.UUID
	lease    time.Time
	state    webhookdelivery.State
	attempts int // added
	next     *time.Time
	status   *int
	latency  *int64
	excerpt  string
	err      string
	// delivered is set on success.
	delivered *time.Time
	observed  string // Attempt.Outcome
}

// outcomeOf turns an attempt's result into its row.
func (d *Dispatcher) outcomeOf(r result) outcome {
	o := outcome{id: r.job.id, lease: r.job.lease, excerpt: r.excerpt, err: r.err}
	if r.gone {
		o.state, o.observed = webhookdelivery.StateFailed, "failed"
		return o
	}
	o.attempts = 1
	ms := r.duration.Milliseconds()
	o.latency = &ms
	if r.status != 0 {
		o.status = &r.status
	}
	switch at := r.at; {
	case r.ok:
		o.state, o.delivered, o.observed = webhookdelivery.StateSucceeded, &at, "succeeded"
	default:
		if next, ok := d.retryAt(r.job.attempts+1, at); ok {
			o.state, o.next, o.observed = webhookdelivery.StatePending, &next, "retrying"
		} else {
			o.state, o.observed = webhookdelivery.StateFailed, "failed"
		}
	}
	return o
}

// health is what a batch says of an endpoint: its failures since its last
// success in the batch (all of them when none succeeded).
type health struct {
	succeeded     bool
	failures      int
	firstFailure  time.Time
	lastFailure   string
	lastFailureAt time.Time
}

// flush records batch, retrying twice on failure; a batch that cannot be
// recorded is dropped (its leases run out and its deliveries are sent
// again: at least once).
func (d *Dispatcher) flush(batch []result) {
	var (
		outcomes []outcome
		released []result
		observed []Attempt
	)
	endpoints := map[uuid.UUID]*health{}
	for _, r := range batch {
		if r.released {
			released = append(released, r)
			continue
		}
		o := d.outcomeOf(r)
		outcomes = append(outcomes, o)
		a := Attempt{Outcome: o.observed, Duration: r.duration}
		if !r.job.eventAt.IsZero() {
			a.Lag = r.at.Sub(r.job.eventAt)
		}
		observed = append(observed, a)
		if r.gone {
			continue // not the endpoint's doing
		}
		h := endpoints[r.job.endpoint.id]
		if h == nil {
			h = &health{}
			endpoints[r.job.endpoint.id] = h
		}
		if r.ok {
			h.succeeded, h.failures = true, 0
			continue
		}
		if h.failures == 0 {
			h.firstFailure = r.at
		}
		h.failures++
		h.lastFailure, h.lastFailureAt = failureText(r), r.at
	}
	ctx, cancel := context.WithTimeout(viewer.System(context.Background()), recordTimeout)
	defer cancel()
	var err error
	for try := range 3 {
		if err = d.write(ctx, outcomes, released, endpoints); err == nil || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(try+1) * 200 * time.Millisecond):
		}
	}
	jobs := make([]*job, len(batch))
	for i, r := range batch {
		jobs[i] = r.job
	}
	d.lanes.recorded(jobs)
	if err != nil {
		d.log.Error("webhooks: outcomes not recorded: their deliveries will be sent again once their leases end",
			"deliveries", len(batch), "error", err.Error())
		return
	}
	if d.opts.Observe != nil {
		for _, a := range observed {
			d.opts.Observe(a)
		}
	}
}

func failureText(r result) string {
	switch {
	case r.status != 0 && r.err != "":
		return fmt.Sprintf("HTTP %d: %s", r.status, r.err)
	case r.status != 0:
		return fmt.Sprintf("HTTP %d", r.status)
	}
	return r.err
}

// write records one batch in one transaction.
func (d *Dispatcher) write(ctx context.Context, outcomes []outcome, released []result, endpoints map[uuid.UUID]*health) error {
	tx, err := d.client.Tx(ctx)
	if err != nil {
		return err
	}
	err = func() error {
		if len(outcomes) > 0 {
			if err := d.writeOutcomes(ctx, tx, outcomes); err != nil {
				return err
			}
		}
		if len(released) > 0 {
			var ids []uuid.UUID
			var leases []time.Time
			for _, r := range released {
				ids = append(ids, r.job.id)
				if !slices.ContainsFunc(leases, r.job.lease.Equal) {
					leases = append(leases, r.job.lease)
				}
			}
			if err := tx.WebhookDelivery.Update().Where(webhookdelivery.IDIn(ids...), webhookdelivery.LeaseUntilIn(leases...)).
				ClearLeaseUntil().Exec(ctx); err != nil {
				return err
			}
		}
		return d.writeHealth(ctx, tx, endpoints)
	}()
	if err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// outcomeColumns are the columns of the batch an UPDATE … FROM reads, in
// order ("v"."id" … "v"."delivered").
var outcomeColumns = []string{"id", "lease", "state", "attempts", "next", "status", "latency", "excerpt", "error", "delivered"}

// writeOutcomes records outcomes in one statement, UPDATE … FROM the
// batch: on PostgreSQL from unnest() of one array per column, on SQLite
// from VALUES. ent builds no UPDATE … FROM: the FROM clause follows the
// last SET expression, and the WHERE joins the batch.
func (d *Dispatcher) writeOutcomes(ctx context.Context, tx *ent.Tx, outcomes []outcome) error {
	slices.SortFunc(outcomes, func(a, b outcome) int { return bytes.Compare(a.id[:], b.id[:]) }) // rows locked in one order
	from := d.valuesSQLite
	if d.postgres {
		from = d.unnestPostgres
	}
	t := `"` + webhookdelivery.Table + `".`
	v := func(c string) string { return `"v"."` + c + `"` }
	joined := func(s *entsql.Selector) {
		s.Where(entsql.ExprP(t + `"id" = ` + v("id") + ` AND ` + t + `"lease_until" = ` + v("lease")))
	}
	return tx.WebhookDelivery.Update().Where(joined).Modify(func(u *entsql.UpdateBuilder) {
		set := func(column, expr string) { u.Set(column, entsql.Expr(expr)) }
		set(webhookdelivery.FieldState, v("state"))
		set(webhookdelivery.FieldAttempts, t+`"attempts" + `+v("attempts"))
		set(webhookdelivery.FieldNextAttemptAt, `COALESCE(`+v("next")+`, `+t+`"next_attempt_at")`)
		u.SetNull(webhookdelivery.FieldLeaseUntil)
		set(webhookdelivery.FieldStatusCode, v("status"))
		set(webhookdelivery.FieldLatencyMs, v("latency"))
		set(webhookdelivery.FieldResponseExcerpt, v("excerpt"))
		set(webhookdelivery.FieldError, v("error"))
		u.Set(webhookdelivery.FieldDeliveredAt, entsql.ExprFunc(func(b *entsql.Builder) {
			b.WriteString(v("delivered") + " FROM ")
			from(b, outcomes)
		}))
	}).Exec(ctx)
}

// valuesSQLite writes the batch as SQLite rows, their columns named "v"'s
// outcomeColumns.
func (d *Dispatcher) valuesSQLite(b *entsql.Builder, outcomes []outcome) {
	b.WriteString("(SELECT ")
	for i, c := range outcomeColumns {
		if i > 0 {
			b.Comma()
		}
		b.WriteString(fmt.Sprintf(`"column%d" AS "%s"`, i+1, c))
	}
	b.WriteString(" FROM (VALUES ")
	for i, o := range outcomes {
		if i > 0 {
			b.Comma()
		}
		b.WriteString("(")
		for k, arg := range []any{o.id, o.lease, string(o.state), o.attempts, nullTime(o.next), nullInt(o.status), nullInt64(o.latency),
			o.excerpt, o.err, nullTime(o.delivered)} {
			if k > 0 {
				b.Comma()
			}
			b.Arg(arg)
		}
		b.WriteString(")")
	}
	b.WriteString(`)) AS "v"`)
}

// unnestPostgres writes the batch as PostgreSQL rows named "v": one array
// argument per column.
func (d *Dispatcher) unnestPostgres(b *entsql.Builder, outcomes []outcome) {
	n := len(outcomes)
	var (
		ids, leases, states, excerpts, errs = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		attempts                            = make([]int64, n)
		next, delivered                     = make([]sql.NullString, n), make([]sql.NullString, n)
		status, latency                     = make([]sql.NullInt64, n), make([]sql.NullInt64, n)
	)
	stamp := func(t *time.Time) sql.NullString {
		if t == nil {
			return sql.NullString{}
		}
		return sql.NullString{String: t.Format(time.RFC3339Nano), Valid: true}
	}
	for i, o := range outcomes {
		ids[i], leases[i], states[i], excerpts[i], errs[i] = o.id.String(), o.lease.Format(time.RFC3339Nano), string(o.state), o.excerpt, o.err
		attempts[i], next[i], delivered[i] = int64(o.attempts), stamp(o.next), stamp(o.delivered)
		status[i], latency[i] = nullInt(o.status), nullInt64(o.latency)
	}
	b.WriteString("unnest(")
	for i, arg := range []struct {
		value any
		cast  string
	}{
		{pq.Array(ids), "uuid[]"}, {pq.Array(leases), "timestamptz[]"}, {pq.Array(states), "text[]"}, {pq.Array(attempts), "bigint[]"},
		{pq.GenericArray{A: next}, "timestamptz[]"}, {pq.GenericArray{A: status}, "bigint[]"}, {pq.GenericArray{A: latency}, "bigint[]"},
		{pq.Array(excerpts), "text[]"}, {pq.Array(errs), "text[]"}, {pq.GenericArray{A: delivered}, "timestamptz[]"},
	} {
		if i > 0 {
			b.Comma()
		}
		b.Arg(arg.value).WriteString("::" + arg.cast)
	}
	b.WriteString(`) AS "v" ("` + strings.Join(outcomeColumns, `", "`) + `")`)
}

func nullTime(t *time.Time) any {
	if t == nil {
		return nil
	}
	return *t
}

func nullInt(n *int) sql.NullInt64 {
	if n == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: int64(*n), Valid: true}
}

func nullInt64(n *int64) sql.NullInt64 {
	if n == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: *n, Valid: true}
}

// writeHealth keeps the endpoints' failure counts, and disables those that
// have failed for long enough. Endpoints are updated in the order of their
// ids (replicas recording at once lock them in one order).
func (d *Dispatcher) writeHealth(ctx context.Context, tx *ent.Tx, endpoints map[uuid.UUID]*health) error {
	order := make([]uuid.UUID, 0, len(endpoints))
	var recovered []uuid.UUID
	for id, h := range endpoints {
		if h.succeeded && h.failures == 0 {
			recovered = append(recovered, id)
			continue
		}
		order = append(order, id)
	}
	if len(recovered) > 0 {
		// Most batches: an UPDATE that matches nothing.
		slices.SortFunc(recovered, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
		if err := tx.WebhookEndpoint.Update().Where(webhookendpoint.IDIn(recovered...),
			webhookendpoint.Or(webhookendpoint.ConsecutiveFailuresGT(0), webhookendpoint.FailingSinceNotNil())).
			SetConsecutiveFailures(0).ClearFailingSince().Modify(keepUpdatedAt).Exec(ctx); err != nil {
			return err
		}
	}
	slices.SortFunc(order, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
	for _, id := range order {
		h := endpoints[id]
		u := tx.WebhookEndpoint.Update().Where(webhookendpoint.ID(id)).Modify(keepUpdatedAt)
		if h.succeeded {
			u.SetConsecutiveFailures(h.failures).SetFailingSince(h.firstFailure)
		} else {
			first := h.firstFailure
			u.AddConsecutiveFailures(h.failures).Modify(func(u *entsql.UpdateBuilder) {
				u.Set(webhookendpoint.FieldFailingSince, entsql.ExprFunc(func(b *entsql.Builder) {
					b.WriteString("COALESCE(").Ident(webhookendpoint.FieldFailingSince).Comma().Arg(first).WriteString(")")
				}))
			})
		}
		if err := u.Exec(ctx); err != nil {
			return err
		}
		reason := fmt.Sprintf("disabled at %s: every delivery failed for at least %s, at least %d in a row; the last: %s",
			h.lastFailureAt.Format(time.RFC3339), d.opts.DisableAfter, d.opts.DisableFailures, h.lastFailure)
		n, err := tx.WebhookEndpoint.Update().Where(webhookendpoint.ID(id), webhookendpoint.Enabled(true),
			webhookendpoint.ConsecutiveFailuresGTE(d.opts.DisableFailures),
			webhookendpoint.FailingSinceLTE(h.lastFailureAt.Add(-d.opts.DisableAfter))).
			SetEnabled(false).SetDisabledReason(reason).Save(ctx)
		if err != nil {
			return err
		}
		if n > 0 {
			d.log.Warn("webhooks: endpoint disabled after failing too long", "endpoint_id", id.String(), "reason", reason)
		}
	}
	return nil
}
