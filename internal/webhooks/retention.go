package webhooks

import (
	"context"
	"time"

	entsql "entgo.io/ent/dialect/sql"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/webhookdelivery"
	"github.com/procsvc/procsvc/ent/webhookendpoint"
	"github.com/procsvc/procsvc/internal/viewer"
)

// DefaultPruneBatch bounds the deliveries one pruning statement deletes.
const DefaultPruneBatch = 1000

// Prune deletes the deliveries created before cutoff (the events'
// retention: their events are gone, so even a pending one could no
// longer be sent), at most batch per statement (0: DefaultPruneBatch),
// until none is left, and returns how many it deleted. It runs as the
// system (every workspace).
func Prune(ctx context.Context, client *ent.Client, cutoff time.Time, batch int) (int, error) {
	if batch <= 0 {
		batch = DefaultPruneBatch
	}
	ctx = viewer.System(ctx)
	total := 0
	for {
		ids, err := client.WebhookDelivery.Query().Where(webhookdelivery.CreatedAtLT(cutoff)).
			Order(webhookdelivery.ByCreatedAt()).Limit(batch).IDs(ctx)
		if err != nil || len(ids) == 0 {
			return total, err
		}
		n, err := client.WebhookDelivery.Delete().Where(webhookdelivery.IDIn(ids...)).Exec(ctx)
		total += n
		if err != nil || len(ids) < batch {
			return total, err
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
}

// Prune is Prune over the dispatcher's database.
func (d *Dispatcher) Prune(ctx context.Context, cutoff time.Time, batch int) (int, error) {
	return Prune(ctx, d.client, cutoff, batch)
}

// PendingCountCap bounds Pending's count: counting a backlog of millions
// at every scrape would cost more than the figure is worth.
const PendingCountCap = 100_000

// Pending counts the deliveries still to be sent, of every workspace and
// endpoint, up to PendingCountCap: endpoint by endpoint, on the index the
// claims use.
func (d *Dispatcher) Pending(ctx context.Context) (int, error) {
	var rows []struct {
		N int `json:"n"`
	}
	err := d.client.WebhookDelivery.Query().Modify(func(s *entsql.Selector) {
		s.From(entsql.Table("pending")).Select(entsql.As(entsql.Count("*"), "n"))
		s.Prefix(entsql.ExprFunc(func(b *entsql.Builder) {
			b.WriteString(`WITH "pending" AS (SELECT 1 FROM "` + webhookendpoint.Table + `" AS "e" JOIN "` + webhookdelivery.Table +
				`" AS "d" ON "d"."endpoint_id" = "e"."id" AND "d"."state" = `).Arg(webhookdelivery.StatePending.String()).
				WriteString(" LIMIT ").Arg(PendingCountCap).WriteString(")")
		}))
	}).Scan(viewer.System(ctx), &rows)
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	return rows[0].N, nil
}
