package rest_test

// Failures over REST (docs/design.md §6): routing, transport (body, Content-Type,
// size), field validation, tenancy, authentication and roles, conflicts and
// request ids. Every error body is checked by wantError (exactly code,
// message, requestId and optional fields; requestId == X-Request-Id), and
// after every failed write the workspace is shown to be unchanged.

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/ent/webhookdelivery"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/rest"
)

// targets are records that concrete requests address.
type targets struct {
	procedure, project, category, member string
	webhook, delivery                    string
}

// newTargets creates a procedure (with a comment), an empty project and
// category, and a webhook endpoint with one delivery to address.
func (e *env) newTargets(t testing.TB) targets {
	t.Helper()
	p := e.createProcedure(t, map[string]any{"name": "Target"})
	wantOK(t, e.do(t, "POST", "/procedures/"+p["id"].(string)+"/comments", e.ws.MemberToken, map[string]any{"text": "note"}))
	hook := e.createWebhook(t, map[string]any{"url": "https://hooks.example.com/target"})
	return targets{
		procedure: p["id"].(string),
		project:   e.createProject(t, map[string]any{"name": "Empty project"})["id"].(string),
		category:  e.createCategory(t, "Empty category")["id"].(string),
		member:    e.ws.MemberID,
		webhook:   hook["id"].(string),
		delivery:  e.plantDelivery(t, hook["id"].(string), time.Now(), webhookdelivery.StateFailed).ID.String(),
	}
}

// adminOnly reports whether route ("METHOD /path") needs the ADMIN role:
// the webhook endpoints.
func adminOnly(route string) bool {
	_, path, _ := strings.Cut(route, " ")
	return strings.HasPrefix(path, "/webhook")
}

// concrete returns a request for route ("METHOD /path" of rest.Routes())
// addressing tg, with a valid body for writes. A route this table lacks
// fails the test, so a new endpoint cannot escape the tests that use it.
func (e *env) concrete(t testing.TB, route string, tg targets, token string) call {
	t.Helper()
	bodies := map[string]any{
		"POST /procedures":               e.procBody(nil),
		"PUT /procedures/{id}":           map[string]any{"name": "Changed"},
		"POST /procedures/{id}/comments": map[string]any{"text": "Another note"},
		"POST /projects":                 map[string]any{"name": "New project"},
		"PUT /projects/{id}":             map[string]any{"name": "Changed"},
		"POST /categories":               map[string]any{"name": "New category"},
		"PUT /categories/{id}":           map[string]any{"name": "Changed"},
		"POST /webhooks":                 map[string]any{"url": "https://hooks.example.com/new"},
		"PUT /webhooks/{id}":             map[string]any{"url": "https://hooks.example.com/changed"},
		// Actions without a body.
		"POST /webhooks/{id}/secret":              nil,
		"POST /webhook-deliveries/{id}/redeliver": nil,
	}
	method, path, _ := strings.Cut(route, " ")
	switch {
	case strings.HasPrefix(path, "/procedures/{id}"):
		path = strings.Replace(path, "{id}", tg.procedure, 1)
	case strings.HasPrefix(path, "/projects/{id}"):
		path = strings.Replace(path, "{id}", tg.project, 1)
	case strings.HasPrefix(path, "/categories/{id}"):
		path = strings.Replace(path, "{id}", tg.category, 1)
	case strings.HasPrefix(path, "/members/{id}"):
		path = strings.Replace(path, "{id}", tg.member, 1)
	case strings.HasPrefix(path, "/webhooks/{id}"):
		path = strings.Replace(path, "{id}", tg.webhook, 1)
	case strings.HasPrefix(path, "/webhook-deliveries/{id}"):
		path = strings.Replace(path, "{id}", tg.delivery, 1)
	case !strings.Contains(path, "{"):
	default:
		t.Fatalf("concrete: no target for %s", route)
	}
	c := call{method: method, path: path, token: token}
	if method == "POST" || method == "PUT" {
		b, ok := bodies[route]
		if !ok {
			t.Fatalf("concrete: no body for %s", route)
		}
		if b != nil {
			c.body = mustJSON(t, b)
		}
	}
	return c
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func isWrite(route string) bool { return !strings.HasPrefix(route, "GET ") }

func TestRouting(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		tg := e.newTargets(t)

		unknown := []struct{ method, path string }{
			{"GET", "/nope"},
			{"POST", "/"},
			{"GET", "/procedures/"},
			{"GET", "/procedure"},
			{"GET", "/api/procedures"},
			{"GET", "/procedures/" + tg.procedure + "/comments/x"},
			{"POST", "/projects/" + tg.project + "/procedures"},
			{"DELETE", "/members/" + tg.member + "/tokens"},
		}
		for _, tc := range unknown {
			for _, token := range []string{"", e.ws.MemberToken} {
				name := tc.method + " " + tc.path + " without token"
				if token != "" {
					name = tc.method + " " + tc.path + " with token"
				}
				t.Run("unknown route "+name, func(t *testing.T) {
					wantError(t, e.do(t, tc.method, tc.path, token, nil), http.StatusNotFound, "not_found", "")
				})
			}
		}

		wrong := []struct {
			method, path string
			allow        []string
		}{
			{"PATCH", "/procedures", []string{"GET", "HEAD", "POST"}},
			{"PUT", "/procedures", []string{"GET", "HEAD", "POST"}},
			{"DELETE", "/procedures", []string{"GET", "HEAD", "POST"}},
			{"OPTIONS", "/procedures", []string{"GET", "HEAD", "POST"}},
			{"POST", "/procedures/" + tg.procedure, []string{"DELETE", "GET", "HEAD", "PUT"}},
			{"PATCH", "/procedures/" + tg.procedure, []string{"DELETE", "GET", "HEAD", "PUT"}},
			{"PUT", "/procedures/" + tg.procedure + "/comments", []string{"GET", "HEAD", "POST"}},
			{"DELETE", "/procedures/" + tg.procedure + "/comments", []string{"GET", "HEAD", "POST"}},
			{"DELETE", "/projects", []string{"GET", "HEAD", "POST"}},
			{"POST", "/projects/" + tg.project, []string{"DELETE", "GET", "HEAD", "PUT"}},
			{"PATCH", "/categories/" + tg.category, []string{"DELETE", "GET", "HEAD", "PUT"}},
			{"PUT", "/categories", []string{"GET", "HEAD", "POST"}},
			{"POST", "/members", []string{"GET", "HEAD"}},
			{"PUT", "/members/" + tg.member, []string{"GET", "HEAD"}},
			{"DELETE", "/members/" + tg.member, []string{"GET", "HEAD"}},
		}
		for _, tc := range wrong {
			t.Run("wrong method "+tc.method+" "+strings.Split(tc.path, "/")[1], func(t *testing.T) {
				before := e.snapshot(t)
				var body any
				if tc.method == "POST" || tc.method == "PUT" || tc.method == "PATCH" {
					body = map[string]any{"name": "should not be stored"}
				}
				r := e.do(t, tc.method, tc.path, e.ws.AdminToken, body)
				wantError(t, r, http.StatusMethodNotAllowed, "method_not_allowed", "")
				var allow []string
				for _, m := range strings.Split(r.Header.Get("Allow"), ",") {
					allow = append(allow, strings.TrimSpace(m))
				}
				sort.Strings(allow)
				if strings.Join(allow, ",") != strings.Join(tc.allow, ",") {
					t.Fatalf("Allow = %q, want %v", r.Header.Get("Allow"), tc.allow)
				}
				e.unchanged(t, before)
				// Every method Allow names is really served: without a token
				// it is refused for authentication, not routed away.
				for _, m := range tc.allow {
					if m == "HEAD" {
						continue
					}
					r := e.do(t, m, tc.path, "", nil)
					wantError(t, r, http.StatusUnauthorized, "unauthenticated", "")
				}
			})
		}
	})
}

func TestBodyTransportErrors(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		tg := e.newTargets(t)
		var writes []string
		for _, r := range rest.Routes() {
			if (strings.HasPrefix(r, "POST ") || strings.HasPrefix(r, "PUT ")) && e.concrete(t, r, tg, "").body != nil {
				writes = append(writes, r)
			}
		}
		if len(writes) != 9 {
			t.Fatalf("want 9 endpoints with a body, got %v", writes)
		}
		tooBig := `{"name":"` + strings.Repeat("a", 1<<20) + `"}`
		cases := []struct {
			name, body, contentType string
			status                  int
			code                    string
		}{
			{"unparsable JSON", `{"name":`, "", 400, "bad_request"},
			{"two JSON values", `{"name":"a"}{"name":"b"}`, "", 400, "bad_request"},
			{"trailing garbage", `{"name":"a"} x`, "", 400, "bad_request"},
			{"single quotes", `{'name':'a'}`, "", 400, "bad_request"},
			{"array", `[]`, "", 400, "bad_request"},
			{"array of objects", `[{"name":"a"}]`, "", 400, "bad_request"},
			{"string", `"x"`, "", 400, "bad_request"},
			{"number", `5`, "", 400, "bad_request"},
			{"null", `null`, "", 400, "bad_request"},
			{"boolean", `true`, "", 400, "bad_request"},
			{"empty body", ``, "", 400, "bad_request"},
			{"whitespace body", " \n\t ", "", 400, "bad_request"},
			{"text/plain", `{"name":"a"}`, "text/plain", 415, "unsupported_media_type"},
			{"form encoded", `name=a`, "application/x-www-form-urlencoded", 415, "unsupported_media_type"},
			{"multipart", `{"name":"a"}`, "multipart/form-data; boundary=x", 415, "unsupported_media_type"},
			{"no Content-Type", `{"name":"a"}`, noContentType, 415, "unsupported_media_type"},
			{"malformed Content-Type", `{"name":"a"}`, "application/", 415, "unsupported_media_type"},
			{"body over 1 MiB", tooBig, "", 413, "payload_too_large"},
		}
		for _, route := range writes {
			for _, tc := range cases {
				t.Run(route+" "+tc.name, func(t *testing.T) {
					c := e.concrete(t, route, tg, e.ws.MemberToken)
					c.body, c.contentType = []byte(tc.body), tc.contentType
					before := e.snapshot(t)
					wantError(t, e.send(t, c), tc.status, tc.code, "")
					e.unchanged(t, before)
				})
			}
		}
		t.Run("a body of exactly 1 MiB is accepted", func(t *testing.T) {
			prefix, suffix := `{"name":"Exactly one MiB"`, `}`
			body := prefix + strings.Repeat(" ", 1<<20-len(prefix)-len(suffix)) + suffix
			if len(body) != 1<<20 {
				t.Fatalf("body is %d bytes", len(body))
			}
			checkCategory(t, wantOK(t, e.do(t, "POST", "/categories", e.ws.MemberToken, rawBody(body))))
		})
		t.Run("one byte more is refused", func(t *testing.T) {
			prefix, suffix := `{"name":"One byte too many"`, `}`
			body := prefix + strings.Repeat(" ", 1<<20+1-len(prefix)-len(suffix)) + suffix
			before := e.snapshot(t)
			wantError(t, e.do(t, "POST", "/categories", e.ws.MemberToken, rawBody(body)), 413, "payload_too_large", "")
			e.unchanged(t, before)
		})
	})
}

func TestFieldErrors(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		tg := e.newTargets(t)
		proc := "/procedures/" + tg.procedure
		type fc struct {
			name   string
			method string
			path   string
			body   map[string]any
			fields []string // fields[0] first, then any order
		}
		create := func(name string, over map[string]any, fields ...string) fc {
			return fc{name, "POST", "/procedures", e.procBody(over), fields}
		}
		cases := []fc{
			// Wrong JSON types.
			create("name is a number", map[string]any{"name": 5}, "name"),
			create("name is an object", map[string]any{"name": map[string]any{}}, "name"),
			create("dueAt is a boolean", map[string]any{"dueAt": true}, "dueAt"),
			create("dueAt is a number", map[string]any{"dueAt": 1700000000}, "dueAt"),
			create("displayVideo is a string", map[string]any{"displayVideo": "yes"}, "displayVideo"),
			create("isFineTunedData is a number", map[string]any{"isFineTunedData": 1}, "isFineTunedData"),
			create("generateProcedure is a string", map[string]any{"generateProcedure": "true"}, "generateProcedure"),
			create("captureId is a number", map[string]any{"captureId": 5}, "captureId"),
			create("priority is a number", map[string]any{"priority": 1}, "priority"),
			create("state is a boolean", map[string]any{"state": false}, "state"),
			create("categoryId is a number", map[string]any{"categoryId": 42}, "categoryId"),
			create("doerId is an array", map[string]any{"doerId": []any{}}, "doerId"),
			create("projectId is an object", map[string]any{"projectId": map[string]any{}}, "projectId"),
			create("contentType is a number", map[string]any{"contentType": 3}, "contentType"),
			create("every type error is reported", map[string]any{"name": 5, "dueAt": true}, "name", "dueAt"),
			// Bad enum values.
			create("priority URGENT", map[string]any{"priority": "URGENT"}, "priority"),
			create("priority in lower case", map[string]any{"priority": "low"}, "priority"),
			create("state DONE", map[string]any{"state": "DONE"}, "state"),
			create("contentType pdf", map[string]any{"contentType": "pdf"}, "contentType"),
			create("docStyle fancy", map[string]any{"docStyle": "fancy"}, "docStyle"),
			create("language rust", map[string]any{"language": "rust"}, "language"),
			// GraphQL's spelling of the same values is not REST's.
			create("contentType in GraphQL's spelling", map[string]any{"contentType": "CODE"}, "contentType"),
			create("docStyle in GraphQL's spelling", map[string]any{"docStyle": "TECHNICAL"}, "docStyle"),
			create("language in GraphQL's spelling", map[string]any{"language": "CSHARP"}, "language"),
			// Bad timestamps.
			create("dueAt tomorrow", map[string]any{"dueAt": "tomorrow"}, "dueAt"),
			create("dueAt February 30", map[string]any{"dueAt": "2030-02-30"}, "dueAt"),
			create("dueAt hour 25", map[string]any{"dueAt": "2030-01-02T25:00:00Z"}, "dueAt"),
			create("dueAt without zone", map[string]any{"dueAt": "2030-01-02T03:04:05"}, "dueAt"),
			create("dueAt with a space", map[string]any{"dueAt": "2030-01-02 03:04:05Z"}, "dueAt"),
			create("dueAt empty", map[string]any{"dueAt": ""}, "dueAt"),
			// Missing, malformed, too long.
			create("name missing", map[string]any{"name": absent}, "name"),
			create("name null", map[string]any{"name": nil}, "name"),
			create("name blank", map[string]any{"name": "  "}, "name"),
			create("name over 500 characters", map[string]any{"name": strings.Repeat("n", 501)}, "name"),
			create("priority missing", map[string]any{"priority": absent}, "priority"),
			create("state missing", map[string]any{"state": absent}, "state"),
			create("dueAt missing", map[string]any{"dueAt": absent}, "dueAt"),
			create("categoryId missing", map[string]any{"categoryId": absent}, "categoryId"),
			create("doerId missing", map[string]any{"doerId": absent}, "doerId"),
			create("projectId missing", map[string]any{"projectId": absent}, "projectId"),
			create("categoryId not an id", map[string]any{"categoryId": "abc"}, "categoryId"),
			create("doerId names no member", map[string]any{"doerId": tg.project}, "doerId"),
			create("content over 200000 characters", map[string]any{"content": strings.Repeat("c", 200_001)}, "content"),
			create("captureId over 200 characters", map[string]any{"captureId": strings.Repeat("c", 201)}, "captureId"),
			create("unknown field", map[string]any{"colour": "red"}, "colour"),
			create("id is not accepted on create", map[string]any{"id": tg.procedure}, "id"),
			{"empty object names every required field", "POST", "/procedures", map[string]any{},
				[]string{"name", "priority", "state", "dueAt", "categoryId", "doerId", "projectId"}},
			// PUT /procedures/{id}.
			{"PUT name is a number", "PUT", proc, map[string]any{"name": 5}, []string{"name"}},
			{"PUT dueAt is a boolean", "PUT", proc, map[string]any{"dueAt": true}, []string{"dueAt"}},
			{"PUT displayVideo is a string", "PUT", proc, map[string]any{"displayVideo": "yes"}, []string{"displayVideo"}},
			{"PUT state is a number", "PUT", proc, map[string]any{"state": 1}, []string{"state"}},
			{"PUT categoryId is a number", "PUT", proc, map[string]any{"categoryId": 5}, []string{"categoryId"}},
			{"PUT dueAt February 30", "PUT", proc, map[string]any{"dueAt": "2030-02-30"}, []string{"dueAt"}},
			// Projects, categories, comments.
			{"POST project name is a number", "POST", "/projects", map[string]any{"name": 5}, []string{"name"}},
			{"POST project startedAt is a number", "POST", "/projects", map[string]any{"name": "x", "startedAt": 5}, []string{"startedAt"}},
			{"POST project dueAt is a boolean", "POST", "/projects", map[string]any{"name": "x", "dueAt": true}, []string{"dueAt"}},
			{"POST project startedAt yesterday", "POST", "/projects", map[string]any{"name": "x", "startedAt": "yesterday"}, []string{"startedAt"}},
			{"PUT project name is an array", "PUT", "/projects/" + tg.project, map[string]any{"name": []any{"x"}}, []string{"name"}},
			{"PUT project dueAt before startedAt", "PUT", "/projects/" + tg.project, map[string]any{"startedAt": "2030-02-01", "dueAt": "2030-01-31T23:59:59Z"}, []string{"dueAt"}},
			{"POST category name is a number", "POST", "/categories", map[string]any{"name": 5}, []string{"name"}},
			{"PUT category name is an object", "PUT", "/categories/" + tg.category, map[string]any{"name": map[string]any{}}, []string{"name"}},
			{"POST comment text is a number", "POST", proc + "/comments", map[string]any{"text": 5}, []string{"text"}},
			{"POST comment text missing", "POST", proc + "/comments", map[string]any{}, []string{"text"}},
			{"POST comment text blank", "POST", proc + "/comments", map[string]any{"text": " "}, []string{"text"}},
			{"POST comment text over 20000 characters", "POST", proc + "/comments", map[string]any{"text": strings.Repeat("t", 20_001)}, []string{"text"}},
			{"POST comment unknown field", "POST", proc + "/comments", map[string]any{"text": "x", "authorId": e.ws.AdminID}, []string{"authorId"}},
		}
		for _, tc := range cases {
			t.Run(tc.method+" "+tc.name, func(t *testing.T) {
				before := e.snapshot(t)
				body := wantError(t, e.do(t, tc.method, tc.path, e.ws.MemberToken, tc.body), http.StatusBadRequest, "validation_failed", tc.fields[0])
				got := map[string]bool{}
				for _, f := range fieldNames(body) {
					got[f] = true
				}
				for _, f := range tc.fields {
					if !got[f] {
						t.Errorf("fields %v do not name %q", fieldNames(body), f)
					}
				}
				e.unchanged(t, before)
			})
		}
		t.Run("generation failure writes nothing", func(t *testing.T) {
			before := e.snapshot(t)
			wantError(t, e.do(t, "POST", "/procedures", e.ws.MemberToken, e.procBody(map[string]any{"generateProcedure": true, "content": "x"})),
				http.StatusBadGateway, "generation_failed", "")
			e.unchanged(t, before)
		})
	})
}

func TestOtherWorkspaceIDs(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		tg := e.newTargets(t)
		e2 := &env{srv: e.srv, ws: e.srv.NewWorkspace(t, "Other", "OTH")}
		foreign := e2.newTargets(t) // its procedure is OTH-1
		foreign.member = e2.ws.AdminID
		both := func(t *testing.T, fn func()) {
			t.Helper()
			b1, b2 := e.snapshot(t), e2.snapshot(t)
			fn()
			e.unchanged(t, b1)
			e2.unchanged(t, b2)
		}

		t.Run("in the path: not found", func(t *testing.T) {
			for _, route := range rest.Routes() {
				if !strings.Contains(route, "{id}") {
					continue
				}
				t.Run(route, func(t *testing.T) {
					both(t, func() {
						wantError(t, e.send(t, e.concrete(t, route, foreign, e.ws.AdminToken)), http.StatusNotFound, "not_found", "")
					})
				})
			}
		})
		unknownIDs := []struct{ name, path string }{
			{"another workspace's shortId", "/procedures/OTH-1"},
			{"an unused shortId", "/procedures/RST-999"},
			{"a random UUID", "/procedures/3f1c3a52-5b0e-4c39-9d6f-2a1b8e1c0d11"},
			{"a project id as a procedure id", "/procedures/" + tg.project},
			{"not an id", "/procedures/nope"},
			{"a procedure id as a project id", "/projects/" + tg.procedure},
			{"a project id as a category id", "/categories/" + tg.project},
			{"a category id as a member id", "/members/" + tg.category},
		}
		for _, tc := range unknownIDs {
			for _, method := range []string{"GET", "PUT", "DELETE"} {
				if method != "GET" && strings.HasPrefix(tc.path, "/members/") {
					continue
				}
				t.Run("in the path: "+method+" "+tc.name, func(t *testing.T) {
					var body any
					if method == "PUT" {
						body = map[string]any{"name": "Changed"}
					}
					both(t, func() {
						wantError(t, e.do(t, method, tc.path, e.ws.AdminToken, body), http.StatusNotFound, "not_found", "")
					})
				})
			}
		}

		refs := []struct {
			name   string
			over   map[string]any
			fields []string
		}{
			{"categoryId", map[string]any{"categoryId": foreign.category}, []string{"categoryId"}},
			{"doerId", map[string]any{"doerId": e2.ws.MemberID}, []string{"doerId"}},
			{"projectId", map[string]any{"projectId": foreign.project}, []string{"projectId"}},
			{"all three", map[string]any{"categoryId": foreign.category, "doerId": e2.ws.AdminID, "projectId": foreign.project},
				[]string{"categoryId", "doerId", "projectId"}},
		}
		for _, tc := range refs {
			for _, method := range []string{"POST", "PUT"} {
				t.Run("in the body: "+method+" "+tc.name, func(t *testing.T) {
					path, body := "/procedures", e.procBody(tc.over)
					if method == "PUT" {
						path, body = "/procedures/"+tg.procedure, tc.over
					}
					both(t, func() {
						r := wantError(t, e.do(t, method, path, e.ws.MemberToken, body), http.StatusBadRequest, "validation_failed", tc.fields[0])
						if got := fieldNames(r); strings.Join(got, ",") != strings.Join(tc.fields, ",") {
							t.Errorf("fields = %v, want %v", got, tc.fields)
						}
					})
				})
			}
		}
		t.Run("lists show only the token's workspace", func(t *testing.T) {
			for _, path := range []string{"/procedures", "/projects", "/categories", "/members"} {
				r := e.do(t, "GET", path+"?limit=100", e.ws.ViewToken, nil)
				items, _ := wantList(t, r, func(testing.TB, map[string]any) {})
				for _, it := range items {
					if it["workspaceId"] != e.ws.ID {
						t.Fatalf("%s lists %v of workspace %v", path, it["id"], it["workspaceId"])
					}
				}
			}
			if _, total := wantList(t, e.do(t, "GET", "/procedures?search=OTH", e.ws.ViewToken, nil), checkProcedure); total != 0 {
				t.Fatalf("search finds another workspace's procedure")
			}
		})
	})
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		tg := e.newTargets(t)
		ctx, err := e.srv.Service.ActAsAdmin(context.Background(), e.ws.ID)
		if err != nil {
			t.Fatal(err)
		}

		headers := []struct{ name, value string }{
			{"no Authorization header", ""},
			{"Basic scheme", "Basic dXNlcjpwYXNzd29yZA=="},
			{"Bearer without a token", "Bearer"},
			{"Bearer with a blank token", "Bearer    "},
			{"token too short", "Bearer short"},
			{"token without a scheme", e.ws.MemberToken},
			{"unknown token", "Bearer pms_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
		}
		for _, route := range rest.Routes() {
			for _, h := range headers {
				t.Run("unauthenticated: "+route+" "+h.name, func(t *testing.T) {
					c := e.concrete(t, route, tg, "")
					if h.value != "" {
						c.header = map[string]string{"Authorization": h.value}
					}
					var before string
					if isWrite(route) {
						before = e.snapshot(t)
					}
					r := e.send(t, c)
					wantError(t, r, http.StatusUnauthorized, "unauthenticated", "")
					if w := r.Header.Get("WWW-Authenticate"); !strings.HasPrefix(w, "Bearer") {
						t.Fatalf("WWW-Authenticate = %q, want a Bearer challenge", w)
					}
					if isWrite(route) {
						e.unchanged(t, before)
					}
				})
			}
		}

		t.Run("the scheme is case-insensitive", func(t *testing.T) {
			c := call{method: "GET", path: "/procedures", header: map[string]string{"Authorization": "bearer " + e.ws.ViewToken}}
			wantList(t, e.send(t, c), checkProcedure)
		})

		// A token of its own for the member, revoked through the core.
		tok, secret, err := e.srv.Service.CreateToken(ctx, core.TokenInput{MemberID: e.ws.MemberID, Name: "to revoke"})
		if err != nil {
			t.Fatal(err)
		}
		wantList(t, e.do(t, "GET", "/procedures", secret, nil), checkProcedure)
		if _, err := e.srv.Service.RevokeToken(ctx, tok.ID.String()); err != nil {
			t.Fatal(err)
		}
		// A member removed from the workspace: its token is disconnected too.
		gone, err := e.srv.Service.AddMember(ctx, core.MemberInput{Name: core.Some("Gone Soon"), Email: core.Some("gone@rst.example"), Role: core.Some("MEMBER")})
		if err != nil {
			t.Fatal(err)
		}
		_, goneSecret, err := e.srv.Service.CreateToken(ctx, core.TokenInput{MemberID: gone.ID.String(), Name: "gone"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.srv.Service.RemoveMember(ctx, gone.ID.String()); err != nil {
			t.Fatal(err)
		}
		for _, who := range []struct {
			name, secret string
			reason       apperr.Reason
		}{{"revoked token", secret, apperr.TokenRevoked}, {"removed member", goneSecret, apperr.MemberRemoved}} {
			for _, route := range rest.Routes() {
				t.Run("disconnected: "+who.name+" "+route, func(t *testing.T) {
					var before string
					if isWrite(route) {
						before = e.snapshot(t)
					}
					r := wantError(t, e.send(t, e.concrete(t, route, tg, who.secret)), http.StatusBadRequest, "disconnected", "")
					if r["message"] != apperr.DisconnectedMessage {
						t.Fatalf("message = %q, want docs/contract.md §7's %q", r["message"], apperr.DisconnectedMessage)
					}
					for _, words := range []string{"login details", "credentials", "MFA", "user login is required"} {
						if !strings.Contains(r["message"].(string), words) {
							t.Fatalf("message %q does not say %q", r["message"], words)
						}
					}
					if _, ok := r["fields"]; ok {
						t.Fatalf("disconnected carries fields: %v", r)
					}
					if r["reason"] != string(who.reason) {
						t.Fatalf("reason = %v, want %q", r["reason"], who.reason)
					}
					if isWrite(route) {
						e.unchanged(t, before)
					}
				})
			}
		}

		// The webhook endpoints are ADMIN's: neither a VIEWER nor a MEMBER
		// may call any of them (webhooks_test.go has ADMIN's calls).
		for _, route := range rest.Routes() {
			if !adminOnly(route) {
				continue
			}
			for _, who := range []struct{ role, token string }{{"VIEWER", e.ws.ViewToken}, {"MEMBER", e.ws.MemberToken}} {
				t.Run(who.role+" may not call: "+route, func(t *testing.T) {
					before := e.snapshot(t)
					wantError(t, e.send(t, e.concrete(t, route, tg, who.token)), http.StatusForbidden, "forbidden", "")
					e.unchanged(t, before)
				})
			}
		}
		for _, route := range rest.Routes() {
			if adminOnly(route) {
				continue
			}
			if !isWrite(route) {
				t.Run("VIEWER may read: "+route, func(t *testing.T) {
					wantOK(t, e.send(t, e.concrete(t, route, tg, e.ws.ViewToken)))
				})
				continue
			}
			t.Run("VIEWER may not write: "+route, func(t *testing.T) {
				before := e.snapshot(t)
				wantError(t, e.send(t, e.concrete(t, route, tg, e.ws.ViewToken)), http.StatusForbidden, "forbidden", "")
				e.unchanged(t, before)
			})
		}
		// Last, because they delete the targets: MEMBER may do every write.
		for _, route := range rest.Routes() {
			if isWrite(route) && !strings.HasPrefix(route, "DELETE ") && !adminOnly(route) {
				t.Run("MEMBER may write: "+route, func(t *testing.T) {
					wantOK(t, e.send(t, e.concrete(t, route, tg, e.ws.MemberToken)))
				})
			}
		}
		for _, route := range []string{"DELETE /procedures/{id}", "DELETE /projects/{id}", "DELETE /categories/{id}"} {
			t.Run("MEMBER may delete: "+route, func(t *testing.T) {
				checkDeleted(t, e.send(t, e.concrete(t, route, tg, e.ws.MemberToken)))
			})
		}
	})
}

func TestRequestIDs(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		const incoming = "3f1c3a52-5b0e-4c39-9d6f-2a1b8e1c0d11"
		kept := []struct {
			name string
			c    call
		}{
			{"success", call{method: "GET", path: "/procedures", token: e.ws.ViewToken}},
			{"validation error", call{method: "GET", path: "/procedures?limit=0", token: e.ws.ViewToken}},
			{"not found", call{method: "GET", path: "/procedures/nope", token: e.ws.ViewToken}},
			{"unknown route", call{method: "GET", path: "/nope"}},
			{"wrong method", call{method: "PATCH", path: "/procedures"}},
			{"unauthenticated", call{method: "GET", path: "/procedures"}},
			{"bad request", call{method: "POST", path: "/categories", token: e.ws.MemberToken, body: []byte("[")}},
		}
		for _, tc := range kept {
			t.Run("an incoming UUID is echoed: "+tc.name, func(t *testing.T) {
				tc.c.header = map[string]string{"X-Request-Id": incoming}
				r := e.send(t, tc.c)
				if got := r.Header.Get("X-Request-Id"); got != incoming {
					t.Fatalf("X-Request-Id = %q, want %q", got, incoming)
				}
				if r.Status >= 400 {
					body := asObject(t, r.JSON, "error")
					if body["requestId"] != incoming {
						t.Fatalf("requestId = %v, want %q", body["requestId"], incoming)
					}
				}
			})
		}
		for _, bad := range []string{"not-a-uuid", "3f1c3a525b0e4c399d6f2a1b8e1c0d11", "{3f1c3a52-5b0e-4c39-9d6f-2a1b8e1c0d11}", strings.Repeat("x", 300)} {
			t.Run("an invalid incoming id is replaced: "+bad[:min(len(bad), 20)], func(t *testing.T) {
				r := e.send(t, call{method: "GET", path: "/procedures/nope", token: e.ws.ViewToken, header: map[string]string{"X-Request-Id": bad}})
				body := wantError(t, r, http.StatusNotFound, "not_found", "")
				if body["requestId"] == bad || !uuidRE.MatchString(body["requestId"].(string)) {
					t.Fatalf("requestId = %v", body["requestId"])
				}
			})
		}
		t.Run("every request gets its own id", func(t *testing.T) {
			seen := map[string]bool{}
			for i := 0; i < 5; i++ {
				id := e.do(t, "GET", "/nope", "", nil).Header.Get("X-Request-Id")
				if seen[id] {
					t.Fatalf("request id %s reused", id)
				}
				seen[id] = true
			}
		})
	})
}
