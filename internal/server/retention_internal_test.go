package server

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"entgo.io/ent/dialect/sql"

	"github.com/procsvc/procsvc/ent/event"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/viewer"
)

// TestRetentionPrunesLogAndDeliveries: the retention loop prunes, at its
// start, the events and the webhook deliveries older than the retention,
// and keeps the newer ones.
func TestRetentionPrunesLogAndDeliveries(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		ctx := viewer.System(context.Background())
		svc := core.New(db.Client)
		b, err := svc.CreateWorkspace(context.Background(), core.NewWorkspace{Name: "R", Key: "RET", AdminName: "A", AdminEmail: "a@ret.example"})
		if err != nil {
			t.Fatal(err)
		}
		admin, err := svc.ActAsAdmin(context.Background(), b.Workspace.ID.String())
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"old", "new"} {
			if _, err := svc.CreateCategory(admin, name); err != nil {
				t.Fatal(err)
			}
		}
		evs, err := db.Client.Event.Query().Order(event.ByVersion()).All(ctx)
		if err != nil || len(evs) < 2 {
			t.Fatalf("events: %d, %v", len(evs), err)
		}
		old := time.Now().UTC().Add(-48 * time.Hour)
		// Every event but the last is old (created_at is immutable to
		// ent's setters).
		if _, err := db.Client.Event.Update().Where(event.VersionLT(evs[len(evs)-1].Version)).
			Modify(func(u *sql.UpdateBuilder) { u.Set(event.FieldCreatedAt, old) }).Save(ctx); err != nil {
			t.Fatal(err)
		}
		for _, at := range []time.Time{old, time.Now().UTC()} {
			if err := db.Client.WebhookDelivery.Create().SetWorkspaceID(b.Workspace.ID).SetEndpointID(b.Workspace.ID).
				SetEventID(evs[0].ID).SetEventVersion(1).SetNextAttemptAt(at).SetCreatedAt(at).Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
		stop := startRetention(context.Background(), svc, db, 24*time.Hour, time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)))
		deadline := time.Now().Add(30 * time.Second)
		for {
			events, _ := db.Client.Event.Query().Count(ctx)
			deliveries, _ := db.Client.WebhookDelivery.Query().Count(ctx)
			if events == 1 && deliveries == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after pruning: %d events, %d deliveries; want 1 of each", events, deliveries)
			}
			time.Sleep(10 * time.Millisecond)
		}
		stop()
	})
}
