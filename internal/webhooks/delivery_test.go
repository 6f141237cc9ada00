package webhooks_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/ent/webhookdelivery"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// TestDeliverySignedAndVerifiable: each event written after an endpoint's
// creation reaches it once, as core.EventOf renders it, with the headers
// of docs/webhooks.md and a signature the receiver verifies; the delivery
// is recorded as succeeded with its status, latency and the answer's
// first bytes. Events written before the endpoint existed are not sent.
func TestDeliverySignedAndVerifiable(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db)
		f.categories(t, 2) // before the endpoint: not sent
		rc := newReceiver(t, nil)
		ep := f.endpoint(t, rc.URL+"/hook", endpointOpts{})
		cats := f.categories(t, 3)
		start(t, db, options())
		eventually(t, "3 deliveries settled", func() bool { return settled(t, db, ep, 3) })
		got := rc.received()
		if len(got) != 3 {
			t.Fatalf("received %d requests, want 3", len(got))
		}
		// Deliveries to one endpoint are sent concurrently, in no set
		// order: matched by event.
		byEvent := map[string]received{}
		for i, g := range got {
			if g.verified != nil {
				t.Errorf("request %d: %v", i, g.verified)
			}
			byEvent[g.eventID] = g
		}
		for i, d := range deliveries(t, db, ep) {
			g := byEvent[d.EventID.String()]
			if g.eventType != string(core.EventCategoryCreated) || g.event.Type != core.EventCategoryCreated || g.event.ID != d.EventID.String() ||
				g.event.Version != d.EventVersion || g.event.Entity.ID != cats[i].ID.String() || g.event.WorkspaceID != f.boot.Workspace.ID.String() {
				t.Errorf("event %d: headers %s %s, body %+v; want category.created of %s", i, g.eventType, g.eventID, g.event, cats[i].ID)
			}
			if d.State != webhookdelivery.StateSucceeded || d.Attempts != 1 || d.StatusCode == nil || *d.StatusCode != 200 ||
				d.LatencyMs == nil || d.ResponseExcerpt != "thanks" || d.Error != "" || d.DeliveredAt == nil || d.LeaseUntil != nil ||
				d.ID.String() != g.delivery {
				t.Errorf("delivery %d: %+v (request's delivery id %s)", i, d, g.delivery)
			}
		}
	})
}

// TestRetriedThenSucceeds: an attempt that fails (a 500, or no answer
// within the timeout) is retried on the schedule; the delivery succeeds
// at the third attempt, having recorded each failure's cause on the way.
func TestRetriedThenSucceeds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fail    func(w http.ResponseWriter, r *http.Request)
		timeout time.Duration
		cause   string
	}{
		{"500", nil, 2 * time.Second, ""},
		{"timeout", nil, 100 * time.Millisecond, "no answer within 100ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, db *database.DB) {
				f := setup(t, db)
				release := make(chan struct{})
				t.Cleanup(func() { close(release) })
				rc := newReceiver(t, func(r *http.Request, n int) int {
					if n >= 3 {
						return http.StatusNoContent
					}
					if tc.name == "timeout" {
						// Past the dispatcher's timeout: it gives up
						// on this attempt.
						select {
						case <-r.Context().Done():
						case <-release:
						}
						return http.StatusOK
					}
					return http.StatusInternalServerError
				})
				ep := f.endpoint(t, rc.URL, endpointOpts{})
				f.categories(t, 1)
				o := options()
				o.Timeout = tc.timeout
				var history []string
				start(t, db, o)
				eventually(t, "the delivery settled", func() bool {
					ds := deliveries(t, db, ep)
					if len(ds) == 1 && ds[0].Attempts > 0 && ds[0].State == webhookdelivery.StatePending {
						if e := ds[0].Error; len(history) == 0 || history[len(history)-1] != e {
							history = append(history, e)
						}
					}
					return settled(t, db, ep, 1)
				})
				ds := deliveries(t, db, ep)
				if d := ds[0]; d.State != webhookdelivery.StateSucceeded || d.Attempts != 3 || *d.StatusCode != http.StatusNoContent {
					t.Fatalf("delivery: %s", describe(ds))
				}
				if len(rc.received()) != 3 {
					t.Errorf("received %d requests, want 3", len(rc.received()))
				}
				if tc.cause != "" && !strings.Contains(strings.Join(history, "|"), tc.cause) {
					t.Errorf("errors seen while it was retried: %q, want %q among them", history, tc.cause)
				}
			})
		})
	}
}
