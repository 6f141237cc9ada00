package rest_test

// The webhook endpoints over REST (rest/webhook_routes.go): an admin's whole
// round with its status codes (201, 200, 204, 202), the secret answered
// only by POST /webhooks and POST /webhooks/{id}/secret, the delivery log
// by cursor, bodies and parameters refused naming the field, another
// workspace's records not_found, Idempotency-Key on their writes, and reads
// never served stale from the response cache. The roles are
// TestAuthentication's (errors_test.go); OpenAPI conformance is checked on
// every exchange (helpers_test.go's send).

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/event"
	"github.com/procsvc/procsvc/ent/webhookdelivery"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/egress/egresstest"
	"github.com/procsvc/procsvc/internal/viewer"
)

// webhookKeys are the fields of every webhook answer; withSecretKeys adds
// the secret, which only creation and rotation answer.
var (
	webhookKeys    = []string{"id", "url", "kinds", "projectId", "enabled", "disabledReason", "consecutiveFailures", "failingSince", "createdAt", "updatedAt"}
	withSecretKeys = append(append([]string{}, webhookKeys...), "secret")
	deliveryKeys   = []string{"id", "endpointId", "eventId", "eventVersion", "state", "attempts", "nextAttemptAt", "statusCode", "latencyMs",
		"responseExcerpt", "error", "manual", "createdAt", "deliveredAt"}
)

// createWebhook registers an endpoint as the ADMIN and returns the answer,
// secret included.
func (e *env) createWebhook(t testing.TB, body map[string]any) map[string]any {
	t.Helper()
	h := wantSuccess(t, e.do(t, "POST", "/webhooks", e.ws.AdminToken, body), http.StatusCreated)
	wantKeys(t, "created webhook", h, withSecretKeys...)
	return h
}

// plantDelivery inserts a delivery of the workspace's first event to the
// endpoint id names, as the delivery engine does: outside any write, the
// workspace's version left alone.
func (e *env) plantDelivery(t testing.TB, endpointID string, created time.Time, state webhookdelivery.State) *ent.WebhookDelivery {
	t.Helper()
	sys := viewer.System(context.Background())
	ws := uuid.MustParse(e.ws.ID)
	ev, err := e.srv.DB.Client.Event.Query().Where(event.WorkspaceID(ws)).Order(event.ByVersion()).First(sys)
	if err != nil {
		t.Fatalf("read an event: %v", err)
	}
	d, err := e.srv.DB.Client.WebhookDelivery.Create().SetWorkspaceID(ws).SetEndpointID(uuid.MustParse(endpointID)).
		SetEventID(ev.ID).SetEventVersion(ev.Version).SetState(state).SetNextAttemptAt(created).SetCreatedAt(created).Save(sys)
	if err != nil {
		t.Fatalf("plant delivery: %v", err)
	}
	return d
}

// deliveriesPage asserts the cursor list envelope and returns its items,
// total and next cursor ("" on the last page).
func deliveriesPage(t testing.TB, r *response) (items []map[string]any, total int, next string) {
	t.Helper()
	body := wantOK(t, r)
	wantKeys(t, "list", body, "data", "meta")
	meta := asObject(t, body["meta"], "meta")
	wantKeys(t, "meta", meta, "total", "nextCursor")
	if n, ok := meta["nextCursor"].(string); ok {
		next = n
	} else if meta["nextCursor"] != nil {
		t.Fatalf("nextCursor = %#v", meta["nextCursor"])
	}
	for _, d := range body["data"].([]any) {
		item := asObject(t, d, "delivery")
		wantKeys(t, "delivery", item, deliveryKeys...)
		items = append(items, item)
	}
	return items, int(meta["total"].(float64)), next
}

func TestWebhookEndpoints(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		A := e.ws.AdminToken
		var hook map[string]any
		var id string

		t.Run("POST answers 201 with the secret", func(t *testing.T) {
			hook = e.createWebhook(t, map[string]any{"url": "https://hooks.example.com/a", "kinds": []string{"procedure.created"}, "projectId": e.ws.ProjectID})
			id = wantID(t, "id", hook["id"])
			secret := wantString(t, "secret", hook["secret"])
			if !strings.HasPrefix(secret, core.WebhookSecretPrefix) || hook["url"] != "https://hooks.example.com/a" || hook["projectId"] != e.ws.ProjectID ||
				hook["enabled"] != true || hook["disabledReason"] != "" || hook["failingSince"] != nil || hook["consecutiveFailures"] != float64(0) {
				t.Fatalf("created %v", hook)
			}
			if kinds, _ := hook["kinds"].([]any); len(kinds) != 1 || kinds[0] != "procedure.created" {
				t.Fatalf("kinds %v", hook["kinds"])
			}
		})
		t.Run("POST with only a url sends every kind", func(t *testing.T) {
			all := e.createWebhook(t, map[string]any{"url": "https://hooks.example.com/all", "kinds": nil, "projectId": nil})
			if kinds, ok := all["kinds"].([]any); !ok || len(kinds) != 0 || all["projectId"] != nil {
				t.Fatalf("created %v", all)
			}
			r := e.do(t, "DELETE", "/webhooks/"+all["id"].(string), A, nil)
			wantSuccess(t, r, http.StatusNoContent)
		})
		t.Run("GET list and one, without the secret", func(t *testing.T) {
			r := e.do(t, "GET", "/webhooks", A, nil)
			items, total := wantList(t, r, func(t testing.TB, m map[string]any) { wantKeys(t, "webhook", m, webhookKeys...) })
			if total != 1 || items[0]["id"] != id {
				t.Fatalf("list %v", items)
			}
			one := e.do(t, "GET", "/webhooks/"+id, A, nil)
			got := wantOK(t, one)
			wantKeys(t, "webhook", got, webhookKeys...)
			for _, raw := range [][]byte{r.Raw, one.Raw} {
				if strings.Contains(string(raw), core.WebhookSecretPrefix) {
					t.Fatalf("a read shows the secret: %s", raw)
				}
			}
			for k, v := range got {
				if k != "kinds" && hook[k] != v {
					t.Fatalf("%s = %v, created %v", k, v, hook[k])
				}
			}
		})
		t.Run("PUT changes the fields sent", func(t *testing.T) {
			got := wantOK(t, e.do(t, "PUT", "/webhooks/"+id, A, map[string]any{"enabled": false, "kinds": nil}))
			if got["enabled"] != false || got["disabledReason"] != core.WebhookDisabledByAdmin || got["url"] != hook["url"] ||
				got["projectId"] != e.ws.ProjectID || len(got["kinds"].([]any)) != 0 {
				t.Fatalf("updated %v", got)
			}
			// A GET-modify-PUT round trip: the read-only fields are ignored.
			got["enabled"], got["projectId"] = true, nil
			back := wantOK(t, e.do(t, "PUT", "/webhooks/"+id, A, got))
			if back["enabled"] != true || back["disabledReason"] != "" || back["projectId"] != nil {
				t.Fatalf("round trip %v", back)
			}
		})
		t.Run("POST secret rotates it", func(t *testing.T) {
			got := wantOK(t, e.do(t, "POST", "/webhooks/"+id+"/secret", A, nil))
			wantKeys(t, "rotated", got, withSecretKeys...)
			if got["secret"] == hook["secret"] || !strings.HasPrefix(got["secret"].(string), core.WebhookSecretPrefix) || got["id"] != id {
				t.Fatalf("rotated %v (was %v)", got, hook["secret"])
			}
		})

		base := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
		var planted []*ent.WebhookDelivery
		for i := range 3 {
			planted = append(planted, e.plantDelivery(t, id, base.Add(time.Duration(i)*time.Minute), webhookdelivery.StateFailed))
		}
		t.Run("GET deliveries pages by cursor, newest first", func(t *testing.T) {
			var seen []string
			next, pages := "", 0
			for {
				path := "/webhooks/" + id + "/deliveries?limit=2"
				if next != "" {
					path += "&after=" + next
				}
				items, total, cursor := deliveriesPage(t, e.do(t, "GET", path, A, nil))
				if total != 3 {
					t.Fatalf("total %d", total)
				}
				for _, it := range items {
					seen = append(seen, it["id"].(string))
				}
				pages++
				if next = cursor; next == "" {
					break
				}
			}
			want := []string{planted[2].ID.String(), planted[1].ID.String(), planted[0].ID.String()}
			if pages != 2 || strings.Join(seen, ",") != strings.Join(want, ",") {
				t.Fatalf("%d pages: %v, want %v", pages, seen, want)
			}
			items, _, _ := deliveriesPage(t, e.do(t, "GET", "/webhooks/"+id+"/deliveries", A, nil))
			if items[0]["state"] != "failed" || items[0]["endpointId"] != id || items[0]["manual"] != false || items[0]["statusCode"] != nil {
				t.Fatalf("delivery %v", items[0])
			}
		})
		t.Run("GET deliveries sees the engine's writes at once", func(t *testing.T) {
			_, before, _ := deliveriesPage(t, e.do(t, "GET", "/webhooks/"+id+"/deliveries", A, nil))
			wantOK(t, e.do(t, "GET", "/webhooks/"+id, A, nil))
			added := e.plantDelivery(t, id, base.Add(time.Hour), webhookdelivery.StatePending)
			if _, err := db.Client.WebhookEndpoint.UpdateOneID(uuid.MustParse(id)).SetConsecutiveFailures(2).Save(viewer.System(context.Background())); err != nil {
				t.Fatal(err)
			}
			items, after, _ := deliveriesPage(t, e.do(t, "GET", "/webhooks/"+id+"/deliveries", A, nil))
			if after != before+1 || items[0]["id"] != added.ID.String() {
				t.Fatalf("total %d -> %d, newest %v", before, after, items[0])
			}
			if got := wantOK(t, e.do(t, "GET", "/webhooks/"+id, A, nil)); got["consecutiveFailures"] != float64(2) {
				t.Fatalf("a stale failure count: %v", got)
			}
			if err := db.Client.WebhookDelivery.DeleteOneID(added.ID).Exec(viewer.System(context.Background())); err != nil {
				t.Fatal(err)
			}
		})
		t.Run("POST redeliver answers 202 with the new delivery", func(t *testing.T) {
			got := wantSuccess(t, e.do(t, "POST", "/webhook-deliveries/"+planted[0].ID.String()+"/redeliver", A, nil), http.StatusAccepted)
			wantKeys(t, "redelivery", got, deliveryKeys...)
			if got["id"] == planted[0].ID.String() || got["manual"] != true || got["state"] != "pending" || got["attempts"] != float64(0) {
				t.Fatalf("redelivery %v", got)
			}
			wantError(t, e.do(t, "POST", "/webhook-deliveries/"+planted[1].ID.String()+"/redeliver", A, nil), http.StatusConflict, "conflict", "")
		})
		t.Run("DELETE answers 204 and takes the log", func(t *testing.T) {
			wantSuccess(t, e.do(t, "DELETE", "/webhooks/"+id, A, nil), http.StatusNoContent)
			wantError(t, e.do(t, "GET", "/webhooks/"+id, A, nil), http.StatusNotFound, "not_found", "")
			wantError(t, e.do(t, "GET", "/webhooks/"+id+"/deliveries", A, nil), http.StatusNotFound, "not_found", "")
			wantError(t, e.do(t, "POST", "/webhook-deliveries/"+planted[0].ID.String()+"/redeliver", A, nil), http.StatusNotFound, "not_found", "")
			wantError(t, e.do(t, "DELETE", "/webhooks/"+id, A, nil), http.StatusNotFound, "not_found", "")
		})
	})
}

// TestWebhookRequestErrors: bad bodies, ids and parameters are refused
// with the error body naming what is wrong, and write nothing.
func TestWebhookRequestErrors(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		other := &env{srv: e.srv, ws: e.srv.NewWorkspace(t, "Other", "OTH")}
		A := e.ws.AdminToken
		hook := e.createWebhook(t, map[string]any{"url": "https://hooks.example.com/e"})
		id := hook["id"].(string)
		foreign := other.createWebhook(t, map[string]any{"url": "https://hooks.example.com/other"})["id"].(string)
		foreignDelivery := other.plantDelivery(t, foreign, time.Now(), webhookdelivery.StateFailed).ID.String()
		cases := []struct {
			name, method, path string
			body               any
			header             map[string]string
			status             int
			code, field        string
		}{
			{"url missing", "POST", "/webhooks", map[string]any{}, nil, 400, "validation_failed", "url"},
			{"url a number", "POST", "/webhooks", map[string]any{"url": 5}, nil, 400, "validation_failed", "url"},
			{"url not http", "POST", "/webhooks", map[string]any{"url": "ftp://hooks.example.com"}, nil, 400, "validation_failed", "url"},
			{"url with a password", "POST", "/webhooks", map[string]any{"url": "https://a:b@hooks.example.com"}, nil, 400, "validation_failed", "url"},
			{"kinds a string", "POST", "/webhooks", map[string]any{"url": "https://h.example.com", "kinds": "procedure.created"}, nil, 400, "validation_failed", "kinds"},
			{"kinds with a number", "POST", "/webhooks", map[string]any{"url": "https://h.example.com", "kinds": []any{1}}, nil, 400, "validation_failed", "kinds"},
			{"kinds with null", "POST", "/webhooks", map[string]any{"url": "https://h.example.com", "kinds": []any{nil}}, nil, 400, "validation_failed", "kinds"},
			{"kinds unknown", "POST", "/webhooks", map[string]any{"url": "https://h.example.com", "kinds": []string{"procedure.renamed"}}, nil, 400, "validation_failed", "kinds"},
			{"projectId another workspace's", "POST", "/webhooks", map[string]any{"url": "https://h.example.com", "projectId": other.ws.ProjectID}, nil, 400, "validation_failed", "projectId"},
			{"projectId a number", "POST", "/webhooks", map[string]any{"url": "https://h.example.com", "projectId": 7}, nil, 400, "validation_failed", "projectId"},
			{"unknown field", "POST", "/webhooks", map[string]any{"url": "https://h.example.com", "secret": "whsec_mine"}, nil, 400, "validation_failed", "secret"},
			{"bad JSON", "POST", "/webhooks", rawBody(`{"url":`), nil, 400, "bad_request", ""},
			{"PUT url null", "PUT", "/webhooks/" + id, map[string]any{"url": nil}, nil, 400, "validation_failed", "url"},
			{"PUT enabled null", "PUT", "/webhooks/" + id, map[string]any{"enabled": nil}, nil, 400, "validation_failed", "enabled"},
			{"PUT enabled a string", "PUT", "/webhooks/" + id, map[string]any{"enabled": "yes"}, nil, 400, "validation_failed", "enabled"},
			{"PUT unknown field", "PUT", "/webhooks/" + id, map[string]any{"secret": "x"}, nil, 400, "validation_failed", "secret"},
			{"PUT with If-Match", "PUT", "/webhooks/" + id, map[string]any{"enabled": false}, map[string]string{"If-Match": `"abc"`}, 400, "validation_failed", "If-Match"},
			{"DELETE with If-Match", "DELETE", "/webhooks/" + id, nil, map[string]string{"If-Match": `W/"abc"`}, 400, "validation_failed", "If-Match"},
			{"PUT another workspace's", "PUT", "/webhooks/" + foreign, map[string]any{"enabled": false}, nil, 404, "not_found", ""},
			{"PUT an unknown id", "PUT", "/webhooks/nope", map[string]any{"url": nil}, nil, 404, "not_found", ""},
			{"GET another workspace's", "GET", "/webhooks/" + foreign, nil, nil, 404, "not_found", ""},
			{"GET a project id", "GET", "/webhooks/" + e.ws.ProjectID, nil, nil, 404, "not_found", ""},
			{"GET with a parameter", "GET", "/webhooks?page=2", nil, nil, 400, "validation_failed", "page"},
			{"rotate another workspace's", "POST", "/webhooks/" + foreign + "/secret", nil, nil, 404, "not_found", ""},
			{"deliveries of another workspace's", "GET", "/webhooks/" + foreign + "/deliveries", nil, nil, 404, "not_found", ""},
			{"deliveries limit 0", "GET", "/webhooks/" + id + "/deliveries?limit=0", nil, nil, 400, "validation_failed", "limit"},
			{"deliveries limit over 500", "GET", "/webhooks/" + id + "/deliveries?limit=501", nil, nil, 400, "validation_failed", "limit"},
			{"deliveries after a foreign cursor", "GET", "/webhooks/" + id + "/deliveries?after=bm9wZQ", nil, nil, 400, "validation_failed", "after"},
			{"deliveries by page", "GET", "/webhooks/" + id + "/deliveries?page=2", nil, nil, 400, "validation_failed", "page"},
			{"redeliver another workspace's", "POST", "/webhook-deliveries/" + foreignDelivery + "/redeliver", nil, nil, 404, "not_found", ""},
			{"redeliver an endpoint id", "POST", "/webhook-deliveries/" + id + "/redeliver", nil, nil, 404, "not_found", ""},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				before, otherBefore := e.snapshot(t), other.snapshot(t)
				c := call{method: tc.method, path: tc.path, token: A, header: tc.header}
				switch b := tc.body.(type) {
				case nil:
				case rawBody:
					c.body = []byte(b)
				default:
					c.body = mustJSON(t, b)
				}
				wantError(t, e.send(t, c), tc.status, tc.code, tc.field)
				e.unchanged(t, before)
				other.unchanged(t, otherBefore)
			})
		}
		// Every spelling of a non-public host (the review's zoned
		// loopback among them), by POST and by PUT.
		t.Run("refused addresses", func(t *testing.T) {
			for _, tc := range egresstest.Refused {
				raw := "http://" + tc.Authority + "/hook"
				for _, c := range []call{{method: "POST", path: "/webhooks"}, {method: "PUT", path: "/webhooks/" + id}} {
					before := e.snapshot(t)
					c.token, c.body = A, mustJSON(t, map[string]any{"url": raw})
					body := wantError(t, e.send(t, c), http.StatusBadRequest, "validation_failed", "url")
					fe := asObject(t, body["fields"].([]any)[0], "fields[0]")
					if msg, _ := fe["message"].(string); !strings.Contains(msg, tc.Says) {
						t.Fatalf("%s %s: %q, want it to say %q", c.method, raw, msg, tc.Says)
					}
					e.unchanged(t, before)
				}
			}
		})
		t.Run("the bound of 50 endpoints", func(t *testing.T) {
			for i := 1; i < core.MaxWebhooksPerWorkspace; i++ {
				e.createWebhook(t, map[string]any{"url": "https://hooks.example.com/" + strconv.Itoa(i)})
			}
			before := e.snapshot(t)
			wantError(t, e.do(t, "POST", "/webhooks", A, map[string]any{"url": "https://hooks.example.com/one-more"}), http.StatusConflict, "conflict", "")
			e.unchanged(t, before)
			if _, total := wantList(t, e.do(t, "GET", "/webhooks", A, nil), func(testing.TB, map[string]any) {}); total != core.MaxWebhooksPerWorkspace {
				t.Fatalf("%d listed", total)
			}
		})
	})
}

// TestWebhookIdempotencyKeys: the webhook writes honour Idempotency-Key as
// every REST write does (the middleware), except that an answer holding a
// secret is never kept: its retry is 409, and ran once.
func TestWebhookIdempotencyKeys(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		A := e.ws.AdminToken
		keyed := func(method, path, key string, body any) call {
			c := call{method: method, path: path, token: A, header: map[string]string{"Idempotency-Key": key}}
			if body != nil {
				c.body = mustJSON(t, body)
			}
			return c
		}
		create := keyed("POST", "/webhooks", "create-1", map[string]any{"url": "https://hooks.example.com/k"})
		first := e.send(t, create)
		hook := wantSuccess(t, first, http.StatusCreated)
		id := hook["id"].(string)
		for _, c := range []call{create, keyed("POST", "/webhooks/"+id+"/secret", "rotate-1", nil)} {
			if c.path != create.path {
				wantOK(t, e.send(t, c))
			}
			again := e.send(t, c)
			wantError(t, again, http.StatusConflict, "conflict", "Idempotency-Key")
			if strings.Contains(string(again.Raw), core.WebhookSecretPrefix) {
				t.Fatalf("a retry showed a secret: %s", again.Raw)
			}
		}
		if _, total := wantList(t, e.do(t, "GET", "/webhooks", A, nil), func(testing.TB, map[string]any) {}); total != 1 {
			t.Fatalf("%d endpoints after a retried create", total)
		}
		// Answers without a secret replay: a redelivery (which, run twice,
		// would be a conflict), an update, a delete.
		d := e.plantDelivery(t, id, time.Now(), webhookdelivery.StateFailed)
		for _, c := range []call{
			keyed("POST", "/webhook-deliveries/"+d.ID.String()+"/redeliver", "redeliver-1", nil),
			keyed("PUT", "/webhooks/"+id, "put-1", map[string]any{"url": "https://hooks.example.com/k2"}),
			keyed("DELETE", "/webhooks/"+id, "delete-1", nil),
		} {
			first := e.send(t, c)
			if first.Status/100 != 2 {
				t.Fatalf("%s %s: %s", c.method, c.path, first)
			}
			again := e.send(t, c)
			if again.Status != first.Status || string(again.Raw) != string(first.Raw) || again.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("%s %s: retry %s (replayed %q), first %s", c.method, c.path, again, again.Header.Get("Idempotent-Replayed"), first)
			}
		}
	})
}
