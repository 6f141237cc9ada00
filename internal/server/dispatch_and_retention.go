package server

// Webhooks and the change log's retention, as Run starts them: every
// replica runs a dispatcher (internal/webhooks) woken by each commit its
// hub hears, and prunes the log and the delivery log hourly (all replicas
// at once is harmless: each batch deletes what is still there).

import (
	"context"
	"log/slog"
	"time"

	"github.com/procsvc/procsvc/internal/config"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/events"
	"github.com/procsvc/procsvc/internal/metrics"
	"github.com/procsvc/procsvc/internal/periodic"
	"github.com/procsvc/procsvc/internal/webhooks"
)

// DefaultRetentionEvery is the pause between two prunings of the change
// log and the delivery log.
const DefaultRetentionEvery = time.Hour

// startWebhooks starts this replica's dispatcher, woken by every change
// hub hears (this replica's commits and, on PostgreSQL, the others'), with
// its metrics in m. With no workers configured it starts none. stop closes
// it: attempts under way finish (within the webhook timeout) and are
// recorded, and what it held is handed back to the other replicas.
func startWebhooks(cfg config.Webhooks, db *database.DB, hub *events.Hub, m *metrics.Metrics, log *slog.Logger) (stop func()) {
	if cfg.Workers == 0 {
		log.Info("webhooks: not sent by this replica (--webhook-workers=0)")
		return func() {}
	}
	outcomes := m.Counters("procsvc_webhook_deliveries_total",
		"webhook delivery attempts recorded, by outcome: succeeded, retrying (failed, to be retried), failed (failed for the last time, or its event is gone)",
		"outcome", []string{"succeeded", "retrying", "failed"})
	buckets := []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	duration := m.Histogram("procsvc_webhook_attempt_duration_seconds", "how long each webhook delivery attempt took, to its answer or its failure", buckets)
	lag := m.Histogram("procsvc_webhook_delivery_lag_seconds",
		"from an event's commit to the end of each attempt to deliver it (a retry's includes its wait)", append(buckets, 300, 3600, 86400))
	d := webhooks.New(db.Client, db.Dialect, webhooks.Options{
		Workers: cfg.Workers, Timeout: cfg.Timeout, AllowPrivate: cfg.AllowPrivate, Memory: int64(cfg.MemoryMB) << 20, Log: log,
		Observe: func(a webhooks.Attempt) {
			outcomes(a.Outcome)
			if a.Duration > 0 {
				duration(a.Duration.Seconds())
			}
			if a.Lag > 0 {
				lag(a.Lag.Seconds())
			}
		},
	})
	m.Gauge("procsvc_webhook_deliveries_pending",
		"webhook deliveries still to be sent, of every replica and workspace (counted up to 100000 at each scrape; -1 when the count failed)",
		func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			n, err := d.Pending(ctx)
			if err != nil {
				return -1
			}
			return float64(n)
		})
	hub.Observe(func(events.Notification) { d.Notify() })
	d.Start()
	if cfg.AllowPrivate {
		log.Warn("webhooks: deliveries may connect to private addresses (--webhook-allow-private-addresses)")
	}
	return d.Close
}

// startRetention prunes, at once and then every every, the events older
// than retention (core.PruneEvents) and the deliveries older than it
// (webhooks.Prune), until stop is called.
func startRetention(ctx context.Context, svc *core.Service, db *database.DB, retention, every time.Duration, log *slog.Logger) (stop func()) {
	return periodic.Start(ctx, every, func(ctx context.Context) {
		cutoff := time.Now().UTC().Add(-retention)
		events, err := svc.PruneEvents(ctx, cutoff, 0)
		if err != nil && ctx.Err() == nil {
			log.Warn("retention: pruning the change log failed", "error", err.Error(), "deleted", events)
		}
		deliveries, err := webhooks.Prune(ctx, db.Client, cutoff, 0)
		if err != nil && ctx.Err() == nil {
			log.Warn("retention: pruning webhook deliveries failed", "error", err.Error(), "deleted", deliveries)
		}
		if events+deliveries > 0 {
			log.Info("retention: pruned", "events", events, "deliveries", deliveries, "before", cutoff.Format(time.RFC3339))
		}
	})
}
