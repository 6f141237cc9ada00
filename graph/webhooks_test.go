package graph_test

// Webhook endpoints over GraphQL (webhooks.graphqls): an admin's whole
// round (create, list, read, update, rotate, the delivery log, redeliver,
// delete), the secret shown only by createWebhook and rotateWebhookSecret,
// validation naming the field, every call forbidden below ADMIN and
// not_found across workspaces, the bounds (50 endpoints, page sizes), and
// reads that are never served stale from the response cache.

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/event"
	"github.com/procsvc/procsvc/ent/webhookdelivery"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/egress/egresstest"
	"github.com/procsvc/procsvc/internal/viewer"
)

const (
	hookURL        = "https://hooks.example.com/procsvc"
	webhookFields  = `id url kinds projectId enabled disabledReason consecutiveFailures failingSince createdAt updatedAt`
	deliveryFields = `id endpointId eventId eventVersion state attempts nextAttemptAt statusCode latencyMs responseExcerpt error manual createdAt deliveredAt`

	createWebhookQuery = `mutation($in: CreateWebhookInput!) { createWebhook(input: $in) { secret webhook { ` + webhookFields + ` } } }`
	updateWebhookQuery = `mutation($id: ID!, $in: UpdateWebhookInput!) { updateWebhook(id: $id, input: $in) { ` + webhookFields + ` } }`
	rotateQuery        = `mutation($id: ID!) { rotateWebhookSecret(id: $id) { secret webhook { ` + webhookFields + ` } } }`
	deleteWebhookQuery = `mutation($id: ID!) { deleteWebhook(id: $id) { success deletedId } }`
	redeliverQuery     = `mutation($id: ID!) { redeliverWebhookDelivery(id: $id) { ` + deliveryFields + ` } }`
	webhooksQuery      = `{ webhooks { ` + webhookFields + ` } }`
	webhookQuery       = `query($id: ID!) { webhook(id: $id) { ` + webhookFields + ` } }`
	deliveriesQuery    = `query($id: ID!, $first: Int, $after: String) { webhook(id: $id) { deliveries(first: $first, after: $after) {
		totalCount pageInfo { hasNextPage endCursor } edges { cursor node { id } } nodes { ` + deliveryFields + ` } } } }`
)

type webhookT struct {
	ID                  string
	URL                 string
	Kinds               []string
	ProjectID           *string
	Enabled             bool
	DisabledReason      string
	ConsecutiveFailures int
	FailingSince        *string
	CreatedAt           string
	UpdatedAt           string
}

type deliveryT struct {
	ID, EndpointID, EventID string
	EventVersion            int64
	State                   string
	Attempts                int
	NextAttemptAt           string
	StatusCode              *int
	LatencyMs               *int64
	ResponseExcerpt, Error  string
	Manual                  bool
	CreatedAt               string
	DeliveredAt             *string
}

type secretPayload struct {
	Secret  string
	Webhook webhookT
}

type deliveryPage struct {
	TotalCount int
	PageInfo   struct {
		HasNextPage bool
		EndCursor   *string
	}
	Edges []struct {
		Cursor string
		Node   struct{ ID string }
	}
	Nodes []deliveryT
}

func createWebhook(t testing.TB, s *apitest.Server, token string, in map[string]any) secretPayload {
	t.Helper()
	var out struct{ CreateWebhook secretPayload }
	ok(t, s.GraphQL(t, token, createWebhookQuery, obj("in", in)), &out)
	return out.CreateWebhook
}

func listDeliveries(t testing.TB, s *apitest.Server, token, id string, first int, after *string) deliveryPage {
	t.Helper()
	vars := obj("id", id, "first", first)
	if after != nil {
		vars["after"] = *after
	}
	var out struct {
		Webhook struct{ Deliveries deliveryPage }
	}
	ok(t, s.GraphQL(t, token, deliveriesQuery, vars), &out)
	return out.Webhook.Deliveries
}

// firstEvent is the oldest event of the workspace's change log.
func firstEvent(t testing.TB, db *database.DB, workspaceID string) *ent.Event {
	t.Helper()
	ev, err := db.Client.Event.Query().Where(event.WorkspaceID(uuid.MustParse(workspaceID))).Order(event.ByVersion()).
		First(viewer.System(context.Background()))
	if err != nil {
		t.Fatalf("read an event: %v", err)
	}
	return ev
}

// plantDelivery inserts a delivery of ev to the endpoint id names, as the
// delivery engine does: outside any write, the workspace's version left
// alone.
func plantDelivery(t testing.TB, db *database.DB, workspaceID, endpointID string, ev *ent.Event, created time.Time,
	state webhookdelivery.State, set func(*ent.WebhookDeliveryCreate)) *ent.WebhookDelivery {
	t.Helper()
	c := db.Client.WebhookDelivery.Create().SetWorkspaceID(uuid.MustParse(workspaceID)).SetEndpointID(uuid.MustParse(endpointID)).
		SetEventID(ev.ID).SetEventVersion(ev.Version).SetState(state).SetNextAttemptAt(created).SetCreatedAt(created)
	if set != nil {
		set(c)
	}
	d, err := c.Save(viewer.System(context.Background()))
	if err != nil {
		t.Fatalf("plant delivery: %v", err)
	}
	return d
}

func TestWebhooks(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Hooks", "HOOK")
		var hook secretPayload

		t.Run("Create", func(t *testing.T) {
			hook = createWebhook(t, s, w.AdminToken, obj("url", " "+hookURL+" ", "kinds", []string{"procedure.created", "comment.deleted"}, "projectId", w.ProjectID))
			if !strings.HasPrefix(hook.Secret, core.WebhookSecretPrefix) || len(hook.Secret) != len(core.WebhookSecretPrefix)+43 {
				t.Fatalf("secret %q", hook.Secret)
			}
			h := hook.Webhook
			if h.URL != hookURL || !same(h.Kinds, []string{"procedure.created", "comment.deleted"}) || deref(h.ProjectID) != w.ProjectID ||
				!h.Enabled || h.DisabledReason != "" || h.ConsecutiveFailures != 0 || h.FailingSince != nil || h.CreatedAt == "" || h.UpdatedAt == "" {
				t.Fatalf("created %s", dump(h))
			}
		})
		t.Run("CreateEveryKind", func(t *testing.T) {
			all := createWebhook(t, s, w.AdminToken, obj("url", "http://hooks.example.com:8080/all"))
			if all.Webhook.Kinds == nil || len(all.Webhook.Kinds) != 0 || all.Webhook.ProjectID != nil {
				t.Fatalf("created %s", dump(all.Webhook))
			}
			ok(t, s.GraphQL(t, w.AdminToken, deleteWebhookQuery, obj("id", all.Webhook.ID)), &struct{}{})
		})
		t.Run("ListAndGetShowNoSecret", func(t *testing.T) {
			r := s.GraphQL(t, w.AdminToken, webhooksQuery, nil)
			var list struct{ Webhooks []webhookT }
			ok(t, r, &list)
			if len(list.Webhooks) != 1 || !same(list.Webhooks[0], hook.Webhook) {
				t.Fatalf("webhooks %s, want %s", dump(list.Webhooks), dump(hook.Webhook))
			}
			g := s.GraphQL(t, w.AdminToken, webhookQuery, obj("id", hook.Webhook.ID))
			var one struct{ Webhook webhookT }
			ok(t, g, &one)
			if !same(one.Webhook, hook.Webhook) {
				t.Fatalf("webhook %s", dump(one.Webhook))
			}
			for _, raw := range []string{string(r.Data), string(g.Data)} {
				if strings.Contains(raw, core.WebhookSecretPrefix) || strings.Contains(raw, strings.TrimPrefix(hook.Secret, core.WebhookSecretPrefix)) {
					t.Fatalf("a read shows the secret: %s", raw)
				}
			}
		})

		// Each update applies to the endpoint as the one before left it:
		// absent fields stay, null clears what may be cleared.
		for _, tc := range []struct {
			name string
			in   map[string]any
			want func(h *webhookT)
		}{
			{"URL", obj("url", "https://hooks.example.com/v2"), func(h *webhookT) { h.URL = "https://hooks.example.com/v2" }},
			{"KindsNullIsEvery", obj("kinds", nil), func(h *webhookT) { h.Kinds = []string{} }},
			{"Kinds", obj("kinds", []string{"project.deleted"}), func(h *webhookT) { h.Kinds = []string{"project.deleted"} }},
			{"KindsEmptyIsEvery", obj("kinds", []string{}), func(h *webhookT) { h.Kinds = []string{} }},
			{"ProjectNull", obj("projectId", nil), func(h *webhookT) { h.ProjectID = nil }},
			{"Project", obj("projectId", w.ProjectID), func(h *webhookT) { h.ProjectID = &w.ProjectID }},
			{"ProjectEmptyIsNone", obj("projectId", ""), func(h *webhookT) { h.ProjectID = nil }},
			{"Disable", obj("enabled", false), func(h *webhookT) { h.Enabled, h.DisabledReason = false, core.WebhookDisabledByAdmin }},
			{"Enable", obj("enabled", true), func(h *webhookT) { h.Enabled, h.DisabledReason = true, "" }},
			{"Nothing", obj(), func(h *webhookT) {}},
		} {
			t.Run("Update"+tc.name, func(t *testing.T) {
				var before struct{ Webhook webhookT }
				ok(t, s.GraphQL(t, w.AdminToken, webhookQuery, obj("id", hook.Webhook.ID)), &before)
				var out struct{ UpdateWebhook webhookT }
				ok(t, s.GraphQL(t, w.AdminToken, updateWebhookQuery, obj("id", hook.Webhook.ID, "in", tc.in)), &out)
				want := before.Webhook
				tc.want(&want)
				want.UpdatedAt = out.UpdateWebhook.UpdatedAt
				if !same(out.UpdateWebhook, want) {
					t.Fatalf("updated %s, want %s", dump(out.UpdateWebhook), dump(want))
				}
			})
		}

		var rotated secretPayload
		t.Run("Rotate", func(t *testing.T) {
			var out struct{ RotateWebhookSecret secretPayload }
			ok(t, s.GraphQL(t, w.AdminToken, rotateQuery, obj("id", hook.Webhook.ID)), &out)
			rotated = out.RotateWebhookSecret
			if !strings.HasPrefix(rotated.Secret, core.WebhookSecretPrefix) || rotated.Secret == hook.Secret || rotated.Webhook.ID != hook.Webhook.ID {
				t.Fatalf("rotated %s (the first secret %s)", dump(rotated), hook.Secret)
			}
			stored, err := db.Client.WebhookEndpoint.Get(viewer.System(context.Background()), uuid.MustParse(hook.Webhook.ID))
			if err != nil || stored.Secret != rotated.Secret {
				t.Fatalf("stored secret is not the rotated one (%v)", err)
			}
		})

		ev := firstEvent(t, db, w.ID)
		base := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
		var planted []*ent.WebhookDelivery
		for i := range 3 {
			planted = append(planted, plantDelivery(t, db, w.ID, hook.Webhook.ID, ev, base.Add(time.Duration(i)*time.Minute), webhookdelivery.StateFailed,
				func(c *ent.WebhookDeliveryCreate) {
					c.SetAttempts(i + 1).SetStatusCode(500 + i).SetLatencyMs(int64(10 * i)).SetResponseExcerpt("oops").SetDeliveredAt(base)
				}))
		}
		t.Run("Deliveries", func(t *testing.T) {
			first := listDeliveries(t, s, w.AdminToken, hook.Webhook.ID, 2, nil)
			if first.TotalCount != 3 || len(first.Nodes) != 2 || !first.PageInfo.HasNextPage || first.PageInfo.EndCursor == nil ||
				len(first.Edges) != 2 || first.Edges[1].Cursor != *first.PageInfo.EndCursor {
				t.Fatalf("first page %s", dump(first))
			}
			// Newest first.
			newest := first.Nodes[0]
			if newest.ID != planted[2].ID.String() || first.Nodes[1].ID != planted[1].ID.String() {
				t.Fatalf("order %s", dump(first.Nodes))
			}
			want := deliveryT{ID: planted[2].ID.String(), EndpointID: hook.Webhook.ID, EventID: ev.ID.String(), EventVersion: ev.Version,
				State: "FAILED", Attempts: 3, NextAttemptAt: "2020-01-01T00:02:00.000Z", StatusCode: ptr(502), LatencyMs: ptr(int64(20)),
				ResponseExcerpt: "oops", CreatedAt: "2020-01-01T00:02:00.000Z", DeliveredAt: strp("2020-01-01T00:00:00.000Z")}
			if !same(newest, want) {
				t.Fatalf("delivery %s, want %s", dump(newest), dump(want))
			}
			rest := listDeliveries(t, s, w.AdminToken, hook.Webhook.ID, 2, first.PageInfo.EndCursor)
			if rest.TotalCount != 3 || len(rest.Nodes) != 1 || rest.Nodes[0].ID != planted[0].ID.String() || rest.PageInfo.HasNextPage {
				t.Fatalf("second page %s", dump(rest))
			}
		})
		t.Run("DeliveriesAreNeverServedFromTheCache", func(t *testing.T) {
			before := listDeliveries(t, s, w.AdminToken, hook.Webhook.ID, 10, nil)
			// The engine adds a delivery and counts a failure without a
			// write: no version moves.
			added := plantDelivery(t, db, w.ID, hook.Webhook.ID, ev, base.Add(time.Hour), webhookdelivery.StatePending, nil)
			if _, err := db.Client.WebhookEndpoint.UpdateOneID(uuid.MustParse(hook.Webhook.ID)).SetConsecutiveFailures(4).
				Save(viewer.System(context.Background())); err != nil {
				t.Fatal(err)
			}
			after := listDeliveries(t, s, w.AdminToken, hook.Webhook.ID, 10, nil)
			if after.TotalCount != before.TotalCount+1 || after.Nodes[0].ID != added.ID.String() || after.Nodes[0].State != "PENDING" {
				t.Fatalf("after the engine's insert: %s (before %d)", dump(after), before.TotalCount)
			}
			for _, q := range []string{webhooksQuery, webhookQuery} {
				var out map[string]any
				ok(t, s.GraphQL(t, w.AdminToken, q, obj("id", hook.Webhook.ID)), &out)
				if !strings.Contains(dump(out), `"consecutiveFailures":4`) {
					t.Fatalf("%s answered a stale failure count: %s", q, dump(out))
				}
			}
			if err := db.Client.WebhookDelivery.DeleteOneID(added.ID).Exec(viewer.System(context.Background())); err != nil {
				t.Fatal(err)
			}
		})
		t.Run("DeliveriesPageSize", func(t *testing.T) {
			wantError(t, s.GraphQL(t, w.AdminToken, deliveriesQuery, obj("id", hook.Webhook.ID, "first", 101)), "validation_failed", "first")
			wantError(t, s.GraphQL(t, w.AdminToken, deliveriesQuery, obj("id", hook.Webhook.ID, "first", -1)), "validation_failed", "first")
			wantError(t, s.GraphQL(t, w.AdminToken, deliveriesQuery, obj("id", hook.Webhook.ID, "first", 1, "after", "nope")), "validation_failed", "after")
			if p := listDeliveries(t, s, w.AdminToken, hook.Webhook.ID, 100, nil); len(p.Nodes) != 3 {
				t.Fatalf("a page of 100: %d", len(p.Nodes))
			}
		})

		var redelivered deliveryT
		t.Run("Redeliver", func(t *testing.T) {
			var out struct{ RedeliverWebhookDelivery deliveryT }
			ok(t, s.GraphQL(t, w.AdminToken, redeliverQuery, obj("id", planted[0].ID.String())), &out)
			redelivered = out.RedeliverWebhookDelivery
			if redelivered.ID == planted[0].ID.String() || !redelivered.Manual || redelivered.State != "PENDING" || redelivered.Attempts != 0 ||
				redelivered.EventID != ev.ID.String() || redelivered.EndpointID != hook.Webhook.ID || redelivered.StatusCode != nil {
				t.Fatalf("redelivered %s", dump(redelivered))
			}
			// One pending redelivery of an event at a time.
			wantError(t, s.GraphQL(t, w.AdminToken, redeliverQuery, obj("id", planted[1].ID.String())), "conflict")
			if p := listDeliveries(t, s, w.AdminToken, hook.Webhook.ID, 10, nil); p.TotalCount != 4 || p.Nodes[0].ID != redelivered.ID {
				t.Fatalf("the log after a redelivery: %s", dump(p))
			}
		})
		t.Run("RedeliverToADisabledEndpoint", func(t *testing.T) {
			second := createWebhook(t, s, w.AdminToken, obj("url", hookURL+"/2"))
			d := plantDelivery(t, db, w.ID, second.Webhook.ID, ev, base, webhookdelivery.StateSucceeded, nil)
			ok(t, s.GraphQL(t, w.AdminToken, updateWebhookQuery, obj("id", second.Webhook.ID, "in", obj("enabled", false))), &struct{}{})
			wantError(t, s.GraphQL(t, w.AdminToken, redeliverQuery, obj("id", d.ID.String())), "conflict")
			ok(t, s.GraphQL(t, w.AdminToken, deleteWebhookQuery, obj("id", second.Webhook.ID)), &struct{}{})
			// Its log went with it.
			wantError(t, s.GraphQL(t, w.AdminToken, redeliverQuery, obj("id", d.ID.String())), "not_found")
		})
		for _, tc := range []struct{ name, id string }{
			{"Unknown", "01900000-0000-7000-8000-00000000000a"},
			{"Malformed", "nope"},
			{"IdOfAnEndpoint", hook.Webhook.ID},
		} {
			t.Run("RedeliverErr"+tc.name, func(t *testing.T) {
				wantError(t, s.GraphQL(t, w.AdminToken, redeliverQuery, obj("id", tc.id)), "not_found")
			})
		}

		t.Run("SecretShownOnlyByCreateAndRotate", func(t *testing.T) {
			for _, r := range []*apitest.GQLResponse{
				s.GraphQL(t, w.AdminToken, webhooksQuery, nil),
				s.GraphQL(t, w.AdminToken, webhookQuery, obj("id", hook.Webhook.ID)),
				s.GraphQL(t, w.AdminToken, deliveriesQuery, obj("id", hook.Webhook.ID, "first", 10)),
				s.GraphQL(t, w.AdminToken, updateWebhookQuery, obj("id", hook.Webhook.ID, "in", obj("url", hookURL))),
			} {
				if len(r.Errors) > 0 || strings.Contains(string(r.Data), core.WebhookSecretPrefix) {
					t.Fatalf("%s %+v", r.Data, r.Errors)
				}
			}
		})

		t.Run("Delete", func(t *testing.T) {
			var out struct {
				DeleteWebhook struct {
					Success   bool
					DeletedID string
				}
			}
			ok(t, s.GraphQL(t, w.AdminToken, deleteWebhookQuery, obj("id", hook.Webhook.ID)), &out)
			if !out.DeleteWebhook.Success || out.DeleteWebhook.DeletedID != hook.Webhook.ID {
				t.Fatalf("deleted %s", dump(out))
			}
			wantError(t, s.GraphQL(t, w.AdminToken, webhookQuery, obj("id", hook.Webhook.ID)), "not_found")
			wantError(t, s.GraphQL(t, w.AdminToken, deleteWebhookQuery, obj("id", hook.Webhook.ID)), "not_found")
			wantError(t, s.GraphQL(t, w.AdminToken, redeliverQuery, obj("id", redelivered.ID)), "not_found")
			var list struct{ Webhooks []webhookT }
			ok(t, s.GraphQL(t, w.AdminToken, webhooksQuery, nil), &list)
			if len(list.Webhooks) != 0 {
				t.Fatalf("left %s", dump(list.Webhooks))
			}
		})
	})
}

// TestWebhookValidation: each mistake is validation_failed naming its
// field, and writes nothing.
func TestWebhookValidation(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Valid", "VAL")
		other := s.NewWorkspace(t, "Other", "OTH")
		hook := createWebhook(t, s, w.AdminToken, obj("url", hookURL))
		count := func(t *testing.T) int {
			var out struct{ Webhooks []webhookT }
			ok(t, s.GraphQL(t, w.AdminToken, webhooksQuery, nil), &out)
			return len(out.Webhooks)
		}
		for _, tc := range []struct {
			name  string
			in    map[string]any
			field string
		}{
			{"URLEmpty", obj("url", " "), "url"},
			{"URLNull", obj("url", nil), "url"},
			{"URLNotHTTP", obj("url", "ftp://hooks.example.com"), "url"},
			{"URLRelative", obj("url", "/hooks"), "url"},
			{"URLWithCredentials", obj("url", "https://user:pass@hooks.example.com"), "url"},
			{"URLWithFragment", obj("url", hookURL+"#x"), "url"},
			{"URLBadPort", obj("url", "https://hooks.example.com:70000/"), "url"},
			{"URLTooLong", obj("url", hookURL+"/"+strings.Repeat("a", core.MaxWebhookURLLen)), "url"},
			{"KindUnknown", obj("url", hookURL, "kinds", []string{"procedure.exploded"}), "kinds"},
			{"KindTwice", obj("url", hookURL, "kinds", []string{"procedure.created", "procedure.created"}), "kinds"},
			{"KindNullElement", obj("url", hookURL, "kinds", []any{nil}), "kinds"},
			{"KindNotAString", obj("url", hookURL, "kinds", []any{5}), "kinds"},
			{"ProjectMalformed", obj("url", hookURL, "projectId", "nope"), "projectId"},
			{"ProjectOfAnotherWorkspace", obj("url", hookURL, "projectId", other.ProjectID), "projectId"},
			{"ProjectUnknown", obj("url", hookURL, "projectId", "01900000-0000-7000-8000-000000000003"), "projectId"},
		} {
			t.Run("Create"+tc.name, func(t *testing.T) {
				before := count(t)
				wantError(t, s.GraphQL(t, w.AdminToken, createWebhookQuery, obj("in", tc.in)), "validation_failed", tc.field)
				if after := count(t); after != before {
					t.Fatalf("endpoints %d -> %d", before, after)
				}
			})
		}
		for _, tc := range []struct {
			name  string
			in    map[string]any
			field string
		}{
			{"URLNull", obj("url", nil), "url"},
			{"URLNotHTTP", obj("url", "mailto:x@example.com"), "url"},
			{"EnabledNull", obj("enabled", nil), "enabled"},
			{"KindUnknown", obj("kinds", []string{"nope"}), "kinds"},
			{"ProjectOfAnotherWorkspace", obj("projectId", other.ProjectID), "projectId"},
		} {
			t.Run("Update"+tc.name, func(t *testing.T) {
				wantError(t, s.GraphQL(t, w.AdminToken, updateWebhookQuery, obj("id", hook.Webhook.ID, "in", tc.in)), "validation_failed", tc.field)
				var now struct{ Webhook webhookT }
				ok(t, s.GraphQL(t, w.AdminToken, webhookQuery, obj("id", hook.Webhook.ID)), &now)
				if !same(now.Webhook, hook.Webhook) {
					t.Fatalf("a refused update changed %s into %s", dump(hook.Webhook), dump(now.Webhook))
				}
			})
		}
		// Every spelling of a non-public host (the review's zoned
		// loopback among them), on create and on an update's new URL.
		t.Run("RefusedAddresses", func(t *testing.T) {
			for _, tc := range egresstest.Refused {
				raw := "http://" + tc.Authority + "/hook"
				before := count(t)
				r := s.GraphQL(t, w.AdminToken, createWebhookQuery, obj("in", obj("url", raw)))
				wantError(t, r, "validation_failed", "url")
				wantURLMessage(t, raw, r, tc.Says)
				if after := count(t); after != before {
					t.Fatalf("%s: endpoints %d -> %d", raw, before, after)
				}
				r = s.GraphQL(t, w.AdminToken, updateWebhookQuery, obj("id", hook.Webhook.ID, "in", obj("url", raw)))
				wantError(t, r, "validation_failed", "url")
				wantURLMessage(t, raw, r, tc.Says)
				var now struct{ Webhook webhookT }
				ok(t, s.GraphQL(t, w.AdminToken, webhookQuery, obj("id", hook.Webhook.ID)), &now)
				if !same(now.Webhook, hook.Webhook) {
					t.Fatalf("a refused update changed %s into %s", dump(hook.Webhook), dump(now.Webhook))
				}
			}
		})
		t.Run("UpdateUnknownIsNotFoundWhateverTheInput", func(t *testing.T) {
			wantError(t, s.GraphQL(t, w.AdminToken, updateWebhookQuery, obj("id", "01900000-0000-7000-8000-000000000009", "in", obj("url", nil))), "not_found")
		})
	})
}

// wantURLMessage asserts r's first error names url with a message saying
// says.
func wantURLMessage(t *testing.T, raw string, r *apitest.GQLResponse, says string) {
	t.Helper()
	for _, f := range r.Errors[0].Extensions.Fields {
		if f.Field == "url" && strings.Contains(f.Message, says) {
			return
		}
	}
	t.Fatalf("%s: %+v, want url refused saying %q", raw, r.Errors[0].Extensions.Fields, says)
}

// TestWebhookBound: a workspace holds at most core.MaxWebhooksPerWorkspace
// endpoints; one more is conflict, and webhooks lists them all.
func TestWebhookBound(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Bound", "BND")
		for made := 0; made < core.MaxWebhooksPerWorkspace; {
			// Twenty root fields a mutation at most (gqlhttp.MaxMutationRootFields).
			var b strings.Builder
			b.WriteString("mutation {")
			for i := 0; i < 20 && made < core.MaxWebhooksPerWorkspace; i++ {
				fmt.Fprintf(&b, ` h%d: createWebhook(input: {url: %q}) { webhook { id } }`, made, fmt.Sprintf("%s/%d", hookURL, made))
				made++
			}
			b.WriteString(" }")
			ok(t, s.GraphQL(t, w.AdminToken, b.String(), nil), &map[string]any{})
		}
		wantError(t, s.GraphQL(t, w.AdminToken, createWebhookQuery, obj("in", obj("url", hookURL))), "conflict")
		var out struct{ Webhooks []webhookT }
		ok(t, s.GraphQL(t, w.AdminToken, webhooksQuery, nil), &out)
		if len(out.Webhooks) != core.MaxWebhooksPerWorkspace || out.Webhooks[0].URL != fmt.Sprintf("%s/%d", hookURL, core.MaxWebhooksPerWorkspace-1) {
			t.Fatalf("%d endpoints, the newest %s", len(out.Webhooks), dump(out.Webhooks[0]))
		}
	})
}

// TestWebhookAccess: below ADMIN every webhook call is forbidden and
// writes nothing; another workspace's endpoint or delivery is not_found,
// like one that does not exist, and its list is its own.
func TestWebhookAccess(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Access", "ACC")
		other := s.NewWorkspace(t, "Elsewhere", "ELS")
		hook := createWebhook(t, s, w.AdminToken, obj("url", hookURL))
		d := plantDelivery(t, db, w.ID, hook.Webhook.ID, firstEvent(t, db, w.ID), time.Now(), webhookdelivery.StateFailed, nil)
		id, did := hook.Webhook.ID, d.ID.String()
		calls := []struct {
			name, query string
			vars        map[string]any
		}{
			{"Webhooks", webhooksQuery, nil},
			{"Webhook", webhookQuery, obj("id", id)},
			{"Deliveries", deliveriesQuery, obj("id", id, "first", 5)},
			{"Create", createWebhookQuery, obj("in", obj("url", hookURL))},
			{"Update", updateWebhookQuery, obj("id", id, "in", obj("enabled", false))},
			{"Rotate", rotateQuery, obj("id", id)},
			{"Redeliver", redeliverQuery, obj("id", did)},
			{"Delete", deleteWebhookQuery, obj("id", id)},
		}
		stored := func(t *testing.T) string {
			t.Helper()
			es, err := db.Client.WebhookEndpoint.Query().All(viewer.System(context.Background()))
			if err != nil {
				t.Fatal(err)
			}
			n, err := db.Client.WebhookDelivery.Query().Count(viewer.System(context.Background()))
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, e := range es {
				fmt.Fprintf(&b, "%s %s %v %s %s|", e.ID, e.URL, e.Enabled, e.Secret, e.UpdatedAt)
			}
			return fmt.Sprintf("%s %d deliveries", b.String(), n)
		}
		for _, role := range []struct{ name, token string }{{"MEMBER", w.MemberToken}, {"VIEWER", w.ViewToken}} {
			for _, c := range calls {
				t.Run(c.name+"_"+role.name+"_ErrForbidden", func(t *testing.T) {
					before := stored(t)
					r := s.GraphQL(t, role.token, c.query, c.vars)
					wantError(t, r, "forbidden")
					if strings.Contains(string(r.Data), hookURL) {
						t.Fatalf("a forbidden call answered %s", r.Data)
					}
					if after := stored(t); after != before {
						t.Fatalf("a forbidden call wrote:\nbefore %s\nafter  %s", before, after)
					}
				})
			}
		}
		for _, c := range calls[1:] {
			if c.name == "Create" {
				continue
			}
			t.Run(c.name+"_OtherWorkspace_ErrNotFound", func(t *testing.T) {
				before := stored(t)
				wantError(t, s.GraphQL(t, other.AdminToken, c.query, c.vars), "not_found")
				if after := stored(t); after != before {
					t.Fatalf("another workspace's admin wrote:\nbefore %s\nafter  %s", before, after)
				}
			})
		}
		t.Run("OtherWorkspaceListsItsOwn", func(t *testing.T) {
			var out struct{ Webhooks []webhookT }
			ok(t, s.GraphQL(t, other.AdminToken, webhooksQuery, nil), &out)
			if len(out.Webhooks) != 0 {
				t.Fatalf("another workspace lists %s", dump(out.Webhooks))
			}
		})
		t.Run("WithoutAToken", func(t *testing.T) {
			r := s.GraphQL(t, "", webhooksQuery, nil)
			if r.Status != http.StatusUnauthorized || r.Code() != "unauthenticated" {
				t.Fatalf("%d %+v", r.Status, r.Errors)
			}
		})
	})
}

// TestWebhookSecretAnswersAreNotKept: a keyed createWebhook or
// rotateWebhookSecret runs once, and its answer, which holds a secret, is
// not kept for a replay (docs/api.md, "Idempotency-Key").
func TestWebhookSecretAnswersAreNotKept(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Keyed", "KEY")
		hook := createWebhook(t, s, w.AdminToken, obj("url", hookURL))
		for i, q := range []struct {
			query string
			vars  map[string]any
		}{
			{createWebhookQuery, obj("in", obj("url", hookURL+"/keyed"))},
			{`mutation($id: ID!) { r: rotateWebhookSecret(id: $id) { s: secret } }`, obj("id", hook.Webhook.ID)},
		} {
			body := []byte(fmt.Sprintf(`{"query":%s,"variables":%s}`, quote(q.query), dump(q.vars)))
			header := bearer(w.AdminToken)
			header.Set("Idempotency-Key", fmt.Sprintf("hook-%d", i))
			first := rawGraphQL(t, s, "POST", "/graphql", header, "application/json", body)
			if len(first.Errors) > 0 || !strings.Contains(string(first.Data), core.WebhookSecretPrefix) {
				t.Fatalf("%d: %s %+v", i, first.Data, first.Errors)
			}
			again := rawGraphQL(t, s, "POST", "/graphql", header, "application/json", body)
			wantError(t, again, "conflict", "Idempotency-Key")
			if strings.Contains(string(again.Data), core.WebhookSecretPrefix) || again.Header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("%d: the retry was answered %s", i, again.Data)
			}
		}
		var out struct{ Webhooks []webhookT }
		ok(t, s.GraphQL(t, w.AdminToken, webhooksQuery, nil), &out)
		if len(out.Webhooks) != 2 {
			t.Fatalf("%d endpoints, want the keyed create to have run once", len(out.Webhooks))
		}
	})
}

func ptr[T any](v T) *T { return &v }
