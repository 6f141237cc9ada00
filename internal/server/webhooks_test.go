package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/viewer"
	"github.com/procsvc/procsvc/internal/webhooks"
)

// TestWebhooksSentByTheServer: `procsvc serve` runs the dispatcher: an
// event written through the API reaches an endpoint registered in its
// workspace, signed, and /metrics counts the attempt. With
// --webhook-workers=0 the server sends nothing.
func TestWebhooksSentByTheServer(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			url := "sqlite://" + filepath.Join(t.TempDir(), "hooks.db")
			args := []string{"--database-url=" + url, "--webhook-allow-private-addresses"}
			if dialect == "postgres" {
				url = dbtest.CreatePostgres(t)
				args = []string{"--database-url=" + url, "--migrate", "--webhook-allow-private-addresses"}
			}
			var (
				mu  sync.Mutex
				got []string
			)
			rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body := make([]byte, r.ContentLength)
				_, _ = r.Body.Read(body)
				mu.Lock()
				defer mu.Unlock()
				if err := webhooks.Verify("whsec_server_test", r.Header.Get(webhooks.HeaderSignature), body, 0); err != nil {
					t.Errorf("signature: %v", err)
				}
				got = append(got, r.Header.Get(webhooks.HeaderEventType))
			}))
			defer rc.Close()
			base := startServe(t, args...)
			db, err := database.Open(context.Background(), url, database.Options{ProbeInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			ctx := viewer.System(context.Background())
			ws, err := db.Client.Workspace.Query().Only(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Client.WebhookEndpoint.Create().SetWorkspaceID(ws.ID).SetURL(rc.URL).SetSecret("whsec_server_test").
				SetCursor(ws.Version).Exec(ctx); err != nil {
				t.Fatal(err)
			}
			if code := post(t, base+"/categories", failoverToken, `{"name":"Sent to a webhook"}`); code != http.StatusOK {
				t.Fatalf("POST /categories: %d", code)
			}
			waitFailover(t, 30*time.Second, "the event delivered and counted", func() bool {
				_, metrics := get(t, base+"/metrics", "")
				return sample(t, metrics, `procsvc_webhook_deliveries_total{outcome="succeeded"}`) >= 1
			})
			mu.Lock()
			defer mu.Unlock()
			// The token's first use bumps the version but logs no event.
			if len(got) != 1 || got[0] != "category.created" {
				t.Errorf("the endpoint was sent %v, want [category.created]", got)
			}
			_, metrics := get(t, base+"/metrics", "")
			for _, want := range []string{"procsvc_webhook_deliveries_pending 0", "procsvc_webhook_attempt_duration_seconds_count 1",
				"procsvc_webhook_delivery_lag_seconds_count 1", `procsvc_webhook_deliveries_total{outcome="failed"} 0`} {
				if !strings.Contains(metrics, want) {
					t.Errorf("metrics lack %q", want)
				}
			}
			// A replica with no workers sends none and shows no
			// webhook metrics.
			idle := startServe(t, append(args, "--webhook-workers=0")...)
			if _, metrics := get(t, idle+"/metrics", ""); strings.Contains(metrics, "procsvc_webhook_") {
				t.Error("a replica with --webhook-workers=0 has webhook metrics")
			}
		})
	}
}
