package rest_test

// The OpenAPI 3.1 document (GET /openapi.json): served without a token,
// valid, listing exactly the routes served, and describing real traffic of
// every endpoint — validated with kin-openapi (openapi3filter.ValidateRequest
// and ValidateResponse over a gorillamux router). A last test tampers with
// real answers and requests to show that the validation is not vacuous for
// the 3.1 constructs the document uses (oneOf with "type": "null", const,
// additionalProperties: false, pattern, format).

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/limits"
	"github.com/procsvc/procsvc/rest"
)

func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		for _, auth := range []struct{ name, header string }{
			{"without a token", ""},
			{"with a bad token", "Bearer nonsense-nonsense-nonsense"},
			{"with a good token", "Bearer " + e.ws.ViewToken},
		} {
			t.Run("served "+auth.name, func(t *testing.T) {
				c := call{method: "GET", path: "/openapi.json"}
				if auth.header != "" {
					c.header = map[string]string{"Authorization": auth.header}
				}
				r := e.send(t, c)
				if r.Status != http.StatusOK {
					t.Fatalf("GET /openapi.json: %s", r)
				}
				if !bytes.Equal(r.Raw, rest.DocumentJSON()) {
					t.Fatalf("the served document differs from rest.DocumentJSON()")
				}
			})
		}
		t.Run("is a valid OpenAPI 3.1 document", func(t *testing.T) {
			r := e.send(t, call{method: "GET", path: "/openapi.json"})
			loader := openapi3.NewLoader()
			doc, err := loader.LoadFromData(r.Raw)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			if err := doc.Validate(loader.Context); err != nil {
				t.Fatalf("validate: %v", err)
			}
			if doc.OpenAPI != "3.1.0" || !doc.IsOpenAPI31OrLater() {
				t.Fatalf("openapi = %q, want 3.1.0", doc.OpenAPI)
			}
			if doc.Info == nil || doc.Info.Version != "1.0.0" {
				t.Fatalf("info.version = %+v, want docs/contract.md §9's 1.0.0", doc.Info)
			}
			if len(doc.Security) != 1 || doc.Components.SecuritySchemes["bearer"] == nil ||
				doc.Components.SecuritySchemes["bearer"].Value.Scheme != "bearer" {
				t.Fatalf("the document does not require the bearer scheme everywhere")
			}
		})
		t.Run("every operation documents its success and the contract's 400 and 401", func(t *testing.T) {
			doc := loadSpec(t).doc
			for path, item := range doc.Paths.Map() {
				for method, op := range item.Operations() {
					var successes []string
					for status := range op.Responses.Map() {
						if strings.HasPrefix(status, "2") {
							successes = append(successes, status)
						}
					}
					if len(successes) != 1 {
						t.Errorf("%s %s documents the successes %v, want one", method, path, successes)
					}
					for _, status := range append(successes, "400", "401", "500") {
						resp := op.Responses.Value(status)
						if status == "204" {
							if resp.Value.Content != nil {
								t.Errorf("%s %s documents a body with 204", method, path)
							}
							continue
						}
						if resp == nil || resp.Value.Content.Get("application/json") == nil {
							t.Errorf("%s %s documents no JSON %s answer", method, path, status)
						}
					}
					if ref := op.Responses.Value("400").Value.Content.Get("application/json").Schema.Ref; ref != "#/components/schemas/Error" {
						t.Errorf("%s %s: 400 is %q, want the Error schema", method, path, ref)
					}
				}
			}
		})
	})
}

// TestOpenAPIRoutesMatchServer holds the document and the routes together:
// rest.Routes() and the document's operations must be the same set, and the
// live server must serve each documented operation (401 without a token,
// never 404 or 405) and answer 405 to every other method on those paths.
func TestOpenAPIRoutesMatchServer(t *testing.T) {
	t.Parallel()
	doc := loadSpec(t).doc
	served := map[string]bool{}
	for _, r := range rest.Routes() {
		served[r] = true
	}
	documented := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	var all []string
	for r := range served {
		all = append(all, r)
	}
	for r := range documented {
		if !served[r] {
			all = append(all, r)
		}
	}
	sort.Strings(all)
	for _, r := range all {
		switch {
		case !documented[r]:
			t.Errorf("%s is served but not in the OpenAPI document", r)
		case !served[r]:
			t.Errorf("%s is in the OpenAPI document but not served", r)
		}
	}
	if len(served) != 29 {
		t.Errorf("%d routes served, want docs/design.md §5's 13 + 8 = 21, and the 8 of webhooks", len(served))
	}

	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		for path := range doc.Paths.Map() {
			concrete := strings.ReplaceAll(path, "{id}", e.ws.ProjectID)
			for _, method := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
				route := method + " " + path
				t.Run(route, func(t *testing.T) {
					r := e.do(t, method, concrete, "", nil)
					if documented[route] {
						wantError(t, r, http.StatusUnauthorized, "unauthenticated", "")
					} else {
						wantError(t, r, http.StatusMethodNotAllowed, "method_not_allowed", "")
					}
				})
			}
		}
	})
}

// TestOpenAPIPagingParametersAreBoundedIntegers: page and the page size
// (limit and its aliases) are integers in the document, with the bounds and
// defaults the server enforces, so that generated clients send and check
// numbers; no query parameter is a string of digits any more.
func TestOpenAPIPagingParametersAreBoundedIntegers(t *testing.T) {
	t.Parallel()
	type bounds struct{ def, min, max int }
	page := bounds{1, 1, rest.MaxPageNumber}
	procedures := bounds{core.DefaultProcedurePageSize, 1, core.MaxProcedurePageSize}
	comments := bounds{core.DefaultCommentPageSize, 1, core.MaxCommentPageSize}
	lists := bounds{core.DefaultListPageSize, 1, core.MaxListPageSize}
	history := bounds{core.DefaultHistoryPageSize, 1, core.MaxHistoryPageSize}
	events := bounds{core.DefaultEventPageSize, 1, core.MaxEventPageSize}
	want := map[string]bounds{}
	for route, size := range map[string]bounds{
		"GET /procedures": procedures, "GET /procedures/{id}/comments": comments,
		"GET /projects": lists, "GET /categories": lists, "GET /members": lists,
		"GET /webhooks/{id}/deliveries": lists,
		"GET /procedures/{id}/history":  history, "GET /events": events,
	} {
		if route != "GET /webhooks/{id}/deliveries" { // paged by cursor
			want[route+" page"] = page
		}
		for _, name := range []string{"limit", "pageSize", "perPage"} {
			want[route+" "+name] = size
		}
	}
	seen := map[string]bool{}
	doc := loadSpec(t).doc
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for _, p := range op.Parameters {
				if p.Value.In != "query" {
					continue
				}
				key := method + " " + path + " " + p.Value.Name
				schema := p.Value.Schema.Value
				if schema.Pattern == `^[0-9]+$` {
					t.Errorf("%s is a string of digits; declare it an integer", key)
				}
				w, ok := want[key]
				if !ok {
					continue
				}
				seen[key] = true
				if !schema.Type.Is("integer") || schema.Min == nil || schema.Max == nil ||
					*schema.Min != float64(w.min) || *schema.Max != float64(w.max) || schema.Default != float64(w.def) {
					t.Errorf("%s: type %v, minimum %v, maximum %v, default %v; want integer %d..%d, default %d",
						key, schema.Type, ptrValue(schema.Min), ptrValue(schema.Max), schema.Default, w.min, w.max, w.def)
				}
			}
		}
	}
	for key := range want {
		if !seen[key] {
			t.Errorf("%s is not in the document", key)
		}
	}
}

func ptrValue(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}

type docValidity int

const (
	anyRequest     docValidity = iota // the document may accept or reject it
	validRequest                      // the document must accept it
	invalidRequest                    // the document must reject it
)

// TestOpenAPITraffic sends real requests to every endpoint — successes and
// representative errors — and validates each request and answer against the
// document explicitly. Every route must have at least one success and one
// error here.
func TestOpenAPITraffic(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		tg := e.newTargets(t) // procedure RST-1 in the workspace's project, empty project and category
		other := &env{srv: e.srv, ws: e.srv.NewWorkspace(t, "Other", "OTH")}
		M, V, A := e.ws.MemberToken, e.ws.ViewToken, e.ws.AdminToken
		js := func(v any) []byte { return mustJSON(t, v) }
		proc, proj, cat := "/procedures/"+tg.procedure, "/projects/"+tg.project, "/categories/"+tg.category
		const huge = 1<<20 + 10

		rows := []struct {
			name   string
			c      call
			status int
			code   string
			req    docValidity
		}{
			// GET /procedures
			{"list procedures", call{method: "GET", path: "/procedures", token: V}, 200, "", validRequest},
			{"list procedures with every parameter", call{method: "GET", token: V, path: "/procedures?search=target&page=1&limit=5&sortBy=project.name&sortOrder=asc&categoryId=" +
				e.ws.CategoryID + "&doerId=" + e.ws.MemberID + "&projectId=" + e.ws.ProjectID + "&state=TODO&priority=MEDIUM&startedAt=2030-01-01&dueAt=2031-01-01T00:00:00Z"}, 200, "", validRequest},
			{"list procedures with aliases", call{method: "GET", path: "/procedures?q=x&pageSize=3&order=desc", token: V}, 200, "", validRequest},
			{"list procedures with a bad sortBy", call{method: "GET", path: "/procedures?sortBy=bogus", token: V}, 400, "validation_failed", invalidRequest},
			{"list procedures with a bad state", call{method: "GET", path: "/procedures?state=DONE", token: V}, 400, "validation_failed", invalidRequest},
			{"list procedures with limit=abc", call{method: "GET", path: "/procedures?limit=abc", token: V}, 400, "validation_failed", invalidRequest},
			{"list procedures with limit=0", call{method: "GET", path: "/procedures?limit=0", token: V}, 400, "validation_failed", invalidRequest},
			{"list procedures with limit=101", call{method: "GET", path: "/procedures?limit=101", token: V}, 400, "validation_failed", invalidRequest},
			{"list procedures at the largest page and size", call{method: "GET", path: "/procedures?limit=100&page=" + strconv.Itoa(rest.MaxPageNumber), token: V}, 200, "", validRequest},
			{"list procedures past the largest page", call{method: "GET", path: "/procedures?page=" + strconv.Itoa(rest.MaxPageNumber+1), token: V}, 400, "validation_failed", invalidRequest},
			{"list procedures without a token", call{method: "GET", path: "/procedures"}, 401, "unauthenticated", invalidRequest},
			// POST /procedures
			{"create a procedure with JSON content", call{method: "POST", path: "/procedures", token: M, body: js(e.procBody(map[string]any{
				"content": map[string]any{"any": "json"}, "contentType": "code", "docStyle": "technical", "language": "typescript"}))},
				200, "", validRequest},
			{"create with a language outside the enum", call{method: "POST", path: "/procedures", token: M, body: js(e.procBody(map[string]any{
				"language": "rust"}))}, 400, "validation_failed", invalidRequest},
			{"create a procedure with every field", call{method: "POST", path: "/procedures", token: M, body: js(e.procBody(map[string]any{
				"content": "text", "generateProcedure": false, "contentType": "process", "docStyle": "simplified", "language": "other",
				"captureId": nil, "displayVideo": true, "isFineTunedData": false}))}, 200, "", validRequest},
			{"create a minimal procedure", call{method: "POST", path: "/procedures", token: M, body: js(e.procBody(nil))}, 200, "", validRequest},
			{"create with a wrong type", call{method: "POST", path: "/procedures", token: M, body: js(e.procBody(map[string]any{"name": 5}))}, 400, "validation_failed", invalidRequest},
			{"create without a required field", call{method: "POST", path: "/procedures", token: M, body: js(e.procBody(map[string]any{"projectId": absent}))}, 400, "validation_failed", invalidRequest},
			{"create with an unknown field", call{method: "POST", path: "/procedures", token: M, body: js(e.procBody(map[string]any{"colour": "red"}))}, 400, "validation_failed", invalidRequest},
			{"create with another workspace's category", call{method: "POST", path: "/procedures", token: M, body: js(e.procBody(map[string]any{"categoryId": other.ws.CategoryID}))}, 400, "validation_failed", validRequest},
			{"create as a viewer", call{method: "POST", path: "/procedures", token: V, body: js(e.procBody(nil))}, 403, "forbidden", validRequest},
			{"create with a text body", call{method: "POST", path: "/procedures", token: M, body: []byte("name"), contentType: "text/plain"}, 415, "unsupported_media_type", invalidRequest},
			{"create with a non-object body", call{method: "POST", path: "/procedures", token: M, body: []byte("[]")}, 400, "bad_request", invalidRequest},
			{"create with a huge body", call{method: "POST", path: "/procedures", token: M, body: []byte(`{"name":"` + strings.Repeat("x", huge) + `"}`)}, 413, "payload_too_large", anyRequest},
			{"create with generation unavailable", call{method: "POST", path: "/procedures", token: M, body: js(e.procBody(map[string]any{"generateProcedure": true}))}, 502, "generation_failed", validRequest},
			// GET /procedures/{id}
			{"get a procedure", call{method: "GET", path: proc, token: V}, 200, "", validRequest},
			{"get a procedure by shortId", call{method: "GET", path: "/procedures/RST-1", token: V}, 200, "", validRequest},
			{"get an unknown procedure", call{method: "GET", path: "/procedures/RST-404", token: V}, 404, "not_found", validRequest},
			{"get another workspace's procedure", call{method: "GET", path: "/procedures/" + other.createProcedure(t, nil)["id"].(string), token: V}, 404, "not_found", validRequest},
			// PUT /procedures/{id}
			{"update a procedure", call{method: "PUT", path: proc, token: M, body: js(map[string]any{"name": "Updated", "state": "WAITING", "position": 3.5, "content": nil, "doerId": nil})}, 200, "", validRequest},
			{"update with an unknown field", call{method: "PUT", path: proc, token: M, body: js(map[string]any{"colour": "red"})}, 400, "validation_failed", invalidRequest},
			{"update with a null name", call{method: "PUT", path: proc, token: M, body: js(map[string]any{"name": nil})}, 400, "validation_failed", invalidRequest},
			{"update an unknown procedure", call{method: "PUT", path: "/procedures/RST-404", token: M, body: js(map[string]any{"name": "x"})}, 404, "not_found", validRequest},
			{"update with a revoked token", call{method: "PUT", path: proc, token: revokedToken(t, e), body: js(map[string]any{"name": "x"})}, 400, "disconnected", validRequest},
			// GET /procedures/{id}/comments
			{"list a procedure's comments", call{method: "GET", path: proc + "/comments?page=1&limit=5", token: V}, 200, "", validRequest},
			{"list comments by shortId with an alias", call{method: "GET", path: "/procedures/RST-1/comments?perPage=3", token: V}, 200, "", validRequest},
			{"list comments past the last page", call{method: "GET", path: proc + "/comments?page=9&pageSize=100", token: V}, 200, "", validRequest},
			{"list comments with page=x", call{method: "GET", path: proc + "/comments?page=x", token: V}, 400, "validation_failed", invalidRequest},
			{"list comments with limit=101", call{method: "GET", path: proc + "/comments?limit=101", token: V}, 400, "validation_failed", invalidRequest},
			{"list the comments of an unknown procedure", call{method: "GET", path: "/procedures/RST-404/comments", token: V}, 404, "not_found", validRequest},
			{"list another workspace's comments", call{method: "GET", path: "/procedures/" + other.createProcedure(t, nil)["id"].(string) + "/comments", token: V}, 404, "not_found", validRequest},
			{"list comments without a token", call{method: "GET", path: proc + "/comments"}, 401, "unauthenticated", invalidRequest},
			// POST /procedures/{id}/comments
			{"comment", call{method: "POST", path: proc + "/comments", token: M, body: js(map[string]any{"text": "Looks right"})}, 200, "", validRequest},
			{"comment without text", call{method: "POST", path: proc + "/comments", token: M, body: js(map[string]any{})}, 400, "validation_failed", invalidRequest},
			{"comment on an unknown procedure", call{method: "POST", path: "/procedures/RST-404/comments", token: M, body: js(map[string]any{"text": "x"})}, 404, "not_found", validRequest},
			// GET /procedures/{id}/history
			{"a procedure's history", call{method: "GET", path: proc + "/history", token: V}, 200, "", validRequest},
			{"a history by shortId, a page by number", call{method: "GET", path: "/procedures/RST-1/history?page=2&limit=1", token: V}, 200, "", validRequest},
			{"a history after a cursor", call{method: "GET", path: proc + "/history?limit=1&cursor=" + historyCursor(t, e, proc), token: V}, 200, "", validRequest},
			{"a history with limit=101", call{method: "GET", path: proc + "/history?limit=101", token: V}, 400, "validation_failed", invalidRequest},
			{"a history after a malformed cursor", call{method: "GET", path: proc + "/history?cursor=nope", token: V}, 400, "validation_failed", validRequest},
			{"the history of an unknown procedure", call{method: "GET", path: "/procedures/RST-404/history", token: V}, 404, "not_found", validRequest},
			{"another workspace's history", call{method: "GET", path: "/procedures/" + other.createProcedure(t, nil)["id"].(string) + "/history", token: V}, 404, "not_found", validRequest},
			// GET /events
			{"the workspace's events", call{method: "GET", path: "/events", token: V}, 200, "", validRequest},
			{"events with every parameter", call{method: "GET", token: V, path: "/events?after=1&order=asc&kind=procedure.created&kind=comment.created&limit=5&page=1" +
				"&procedureId=" + tg.procedure + "&projectId=" + e.ws.ProjectID + "&entityId=" + tg.procedure + "&actorId=" + e.ws.MemberID}, 200, "", validRequest},
			{"events by kinds separated by commas", call{method: "GET", path: "/events?kind=procedure.created,comment.created&sortOrder=desc", token: V}, 200, "", anyRequest},
			{"events with limit=500", call{method: "GET", path: "/events?limit=500", token: V}, 200, "", validRequest},
			{"events with an unknown kind", call{method: "GET", path: "/events?kind=procedure.renamed", token: V}, 400, "validation_failed", invalidRequest},
			{"events after a negative version", call{method: "GET", path: "/events?after=-1", token: V}, 400, "validation_failed", invalidRequest},
			{"events with a malformed actor", call{method: "GET", path: "/events?actorId=me", token: V}, 400, "validation_failed", validRequest},
			{"events with limit=501", call{method: "GET", path: "/events?limit=501", token: V}, 400, "validation_failed", invalidRequest},
			{"events without a token", call{method: "GET", path: "/events"}, 401, "unauthenticated", invalidRequest},
			// GET /projects
			{"list projects", call{method: "GET", path: "/projects?search=project&page=1&limit=10", token: V}, 200, "", validRequest},
			{"list projects with limit=501", call{method: "GET", path: "/projects?limit=501", token: V}, 400, "validation_failed", invalidRequest},
			{"list projects with limit=500", call{method: "GET", path: "/projects?limit=500", token: V}, 200, "", validRequest},
			// POST /projects
			{"create a project", call{method: "POST", path: "/projects", token: M, body: js(map[string]any{"name": "Docs", "startedAt": "2030-01-01", "dueAt": nil})}, 200, "", validRequest},
			{"create a project ending before it starts", call{method: "POST", path: "/projects", token: M, body: js(map[string]any{"name": "Docs", "startedAt": "2030-01-02", "dueAt": "2030-01-01"})}, 400, "validation_failed", validRequest},
			{"create a project without a name", call{method: "POST", path: "/projects", token: M, body: js(map[string]any{})}, 400, "validation_failed", invalidRequest},
			// GET /projects/{id}
			{"get a project", call{method: "GET", path: proj, token: V}, 200, "", validRequest},
			{"get an unknown project", call{method: "GET", path: "/projects/" + tg.category, token: V}, 404, "not_found", validRequest},
			// PUT /projects/{id}
			{"update a project", call{method: "PUT", path: proj, token: M, body: js(map[string]any{"name": "Renamed", "dueAt": "2031-01-01T00:00:00+02:00"})}, 200, "", validRequest},
			{"update a project with a wrong type", call{method: "PUT", path: proj, token: M, body: js(map[string]any{"name": 5})}, 400, "validation_failed", invalidRequest},
			{"update a project as a viewer", call{method: "PUT", path: proj, token: V, body: js(map[string]any{"name": "x"})}, 403, "forbidden", validRequest},
			// GET /categories
			{"list categories", call{method: "GET", path: "/categories?q=cat&pageSize=5", token: V}, 200, "", validRequest},
			{"list categories with an unknown parameter", call{method: "GET", path: "/categories?bogus=1", token: V}, 400, "validation_failed", anyRequest},
			// POST /categories
			{"create a category", call{method: "POST", path: "/categories", token: M, body: js(map[string]any{"name": "Runbooks"})}, 200, "", validRequest},
			{"create a category from an array", call{method: "POST", path: "/categories", token: M, body: []byte(`["Runbooks"]`)}, 400, "bad_request", invalidRequest},
			{"create a category without Content-Type", call{method: "POST", path: "/categories", token: M, body: js(map[string]any{"name": "x"}), contentType: noContentType}, 415, "unsupported_media_type", invalidRequest},
			// GET /categories/{id}
			{"get a category", call{method: "GET", path: cat, token: V}, 200, "", validRequest},
			{"get an unknown category", call{method: "GET", path: "/categories/nope", token: V}, 404, "not_found", validRequest},
			// PUT /categories/{id}
			{"update a category", call{method: "PUT", path: cat, token: M, body: js(map[string]any{"name": "Renamed"})}, 200, "", validRequest},
			{"update a category with a blank name", call{method: "PUT", path: cat, token: M, body: js(map[string]any{"name": " "})}, 400, "validation_failed", validRequest},
			// GET /members
			{"list members", call{method: "GET", path: "/members?search=a&page=1&perPage=2", token: V}, 200, "", validRequest},
			{"list members without a token", call{method: "GET", path: "/members"}, 401, "unauthenticated", invalidRequest},
			// GET /members/{id}
			{"get a member", call{method: "GET", path: "/members/" + e.ws.AdminID, token: V}, 200, "", validRequest},
			{"get another workspace's member", call{method: "GET", path: "/members/" + other.ws.AdminID, token: V}, 404, "not_found", validRequest},
			// DELETE, last: they remove the targets.
			{"delete a project that has procedures", call{method: "DELETE", path: "/projects/" + e.ws.ProjectID, token: M}, 409, "conflict", validRequest},
			{"delete a procedure as a viewer", call{method: "DELETE", path: proc, token: V}, 403, "forbidden", validRequest},
			{"delete a procedure", call{method: "DELETE", path: proc, token: M}, 200, "", validRequest},
			{"delete it again", call{method: "DELETE", path: proc, token: M}, 404, "not_found", validRequest},
			{"the history of the deleted procedure, by id", call{method: "GET", path: proc + "/history", token: V}, 200, "", validRequest},
			{"delete a project", call{method: "DELETE", path: proj, token: A}, 200, "", validRequest},
			{"delete an unknown project", call{method: "DELETE", path: proj, token: A}, 404, "not_found", validRequest},
			{"delete a category", call{method: "DELETE", path: cat, token: M}, 200, "", validRequest},
			{"delete a category without a token", call{method: "DELETE", path: cat}, 401, "unauthenticated", invalidRequest},
			// Outside the document: still the Error body.
			{"unknown route", call{method: "GET", path: "/nope", token: V}, 404, "not_found", anyRequest},
			{"wrong method", call{method: "PATCH", path: "/procedures", token: V}, 405, "method_not_allowed", anyRequest},
			// Webhooks, ADMIN's (tg.webhook has one delivery, tg.delivery).
			{"create a webhook", call{method: "POST", path: "/webhooks", token: A, body: js(map[string]any{
				"url": "https://hooks.example.com/doc", "kinds": []string{"procedure.created", "token.revoked"}, "projectId": e.ws.ProjectID})}, 201, "", validRequest},
			{"create a webhook with nulls", call{method: "POST", path: "/webhooks", token: A, body: js(map[string]any{
				"url": "https://hooks.example.com/doc", "kinds": nil, "projectId": nil})}, 201, "", validRequest},
			{"create a webhook with an unknown kind", call{method: "POST", path: "/webhooks", token: A, body: js(map[string]any{
				"url": "https://hooks.example.com/doc", "kinds": []string{"procedure.renamed"}})}, 400, "validation_failed", invalidRequest},
			{"create a webhook without a url", call{method: "POST", path: "/webhooks", token: A, body: js(map[string]any{})}, 400, "validation_failed", invalidRequest},
			{"create a webhook as a member", call{method: "POST", path: "/webhooks", token: M, body: js(map[string]any{"url": "https://hooks.example.com/doc"})}, 403, "forbidden", validRequest},
			{"list webhooks", call{method: "GET", path: "/webhooks", token: A}, 200, "", validRequest},
			{"list webhooks as a viewer", call{method: "GET", path: "/webhooks", token: V}, 403, "forbidden", validRequest},
			{"get a webhook", call{method: "GET", path: "/webhooks/" + tg.webhook, token: A}, 200, "", validRequest},
			{"get another workspace's webhook", call{method: "GET", path: "/webhooks/" + other.createWebhook(t, map[string]any{"url": "https://hooks.example.com/o"})["id"].(string), token: A}, 404, "not_found", validRequest},
			{"update a webhook", call{method: "PUT", path: "/webhooks/" + tg.webhook, token: A, body: js(map[string]any{"url": "https://hooks.example.com/v2", "kinds": nil, "projectId": "", "enabled": true})}, 200, "", validRequest},
			{"update a webhook's url to null", call{method: "PUT", path: "/webhooks/" + tg.webhook, token: A, body: js(map[string]any{"url": nil})}, 400, "validation_failed", invalidRequest},
			{"rotate a webhook's secret", call{method: "POST", path: "/webhooks/" + tg.webhook + "/secret", token: A}, 200, "", validRequest},
			{"rotate an unknown webhook's secret", call{method: "POST", path: "/webhooks/" + tg.project + "/secret", token: A}, 404, "not_found", validRequest},
			{"list a webhook's deliveries", call{method: "GET", path: "/webhooks/" + tg.webhook + "/deliveries?limit=1", token: A}, 200, "", validRequest},
			{"list deliveries with an alias", call{method: "GET", path: "/webhooks/" + tg.webhook + "/deliveries?perPage=500", token: A}, 200, "", validRequest},
			{"list deliveries with limit=501", call{method: "GET", path: "/webhooks/" + tg.webhook + "/deliveries?limit=501", token: A}, 400, "validation_failed", invalidRequest},
			{"list deliveries after a bad cursor", call{method: "GET", path: "/webhooks/" + tg.webhook + "/deliveries?after=x", token: A}, 400, "validation_failed", validRequest},
			{"redeliver", call{method: "POST", path: "/webhook-deliveries/" + tg.delivery + "/redeliver", token: A}, 202, "", validRequest},
			{"redeliver while one is pending", call{method: "POST", path: "/webhook-deliveries/" + tg.delivery + "/redeliver", token: A}, 409, "conflict", validRequest},
			{"delete a webhook", call{method: "DELETE", path: "/webhooks/" + tg.webhook, token: A}, 204, "", validRequest},
			{"delete it again", call{method: "DELETE", path: "/webhooks/" + tg.webhook, token: A}, 404, "not_found", validRequest},
		}

		s := loadSpec(t)
		okSeen, errSeen := map[string]bool{}, map[string]bool{}
		for _, row := range rows {
			t.Run(row.name, func(t *testing.T) {
				r := e.send(t, row.c)
				if row.status < 300 {
					wantSuccess(t, r, row.status)
				} else {
					wantError(t, r, row.status, row.code, "")
				}
				x := s.validate(t, row.c, r)
				if x.resErr != nil {
					t.Fatalf("the answer does not match the document: %v\n%s", x.resErr, r)
				}
				if x.route == nil {
					if row.status != 404 && row.status != 405 {
						t.Fatalf("%s %s is not in the document: %v", row.c.method, row.c.path, x.reqErr)
					}
					return
				}
				route := strings.ToUpper(x.route.Method) + " " + x.route.Path
				if row.status < 300 {
					okSeen[route] = true
				} else {
					errSeen[route] = true
				}
				switch {
				case row.req == validRequest && x.reqErr != nil:
					t.Fatalf("the document rejects this request: %v", x.reqErr)
				case row.req == invalidRequest && x.reqErr == nil:
					t.Fatalf("the document accepts a request the server rejects with %d %s", row.status, row.code)
				}
			})
		}
		t.Run("every route has a validated success and error", func(t *testing.T) {
			for _, route := range rest.Routes() {
				if !okSeen[route] {
					t.Errorf("%s: no success validated against the document", route)
				}
				if !errSeen[route] {
					t.Errorf("%s: no error validated against the document", route)
				}
			}
		})
	})
}

// historyCursor is the cursor after the newest event of the procedure at
// path.
func historyCursor(t testing.TB, e *env, path string) string {
	t.Helper()
	body := wantOK(t, e.do(t, "GET", path+"/history?limit=1", e.ws.ViewToken, nil))
	meta := asObject(t, body["meta"], "meta")
	c, ok := meta["nextCursor"].(string)
	if !ok {
		t.Fatalf("no next cursor: %v", meta)
	}
	return url.QueryEscape(c)
}

// revokedToken returns a fresh MEMBER token of e's workspace, revoked
// through GraphQL's revokeToken.
func revokedToken(t testing.TB, e *env) string {
	t.Helper()
	r := e.srv.GraphQL(t, e.ws.AdminToken, `mutation($in: CreateTokenInput!) { createToken(input: $in) { secret token { id } } }`,
		map[string]any{"in": map[string]any{"memberId": e.ws.MemberID, "name": "short-lived"}})
	var out struct {
		CreateToken struct {
			Secret string
			Token  struct{ ID string }
		}
	}
	r.Decode(t, &out)
	r = e.srv.GraphQL(t, e.ws.AdminToken, `mutation($id: ID!) { revokeToken(id: $id) { id revokedAt } }`,
		map[string]any{"id": out.CreateToken.Token.ID})
	var rev struct {
		RevokeToken struct {
			ID        string
			RevokedAt *string
		}
	}
	r.Decode(t, &rev)
	if rev.RevokeToken.RevokedAt == nil {
		t.Fatalf("revokeToken did not revoke: %+v", rev)
	}
	return out.CreateToken.Secret
}

// answer is a real exchange and a change to its answer that the document
// must reject.
type answer struct {
	name   string
	c      call
	r      *response
	change func(v any) any
	status int
	header map[string]string // response headers to replace
}

// TestOpenAPIValidatorCatchesDrift tampers with real answers and requests:
// each change must be caught, so that the traffic tests above cannot pass
// vacuously (for instance if kin-openapi ignored a 3.1 keyword).
func TestOpenAPIValidatorCatchesDrift(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		tg := e.newTargets(t)
		s := loadSpec(t)

		// tamper re-validates a real exchange with its JSON body changed.
		tamper := func(t *testing.T, c call, r *response, change func(v any) any, status int, header map[string]string) error {
			t.Helper()
			var v any
			if err := json.Unmarshal(r.Raw, &v); err != nil {
				t.Fatal(err)
			}
			raw, err := json.Marshal(change(v))
			if err != nil {
				t.Fatal(err)
			}
			fake := &response{Status: status, Header: r.Header.Clone(), Raw: raw}
			for k, v := range header {
				fake.Header.Set(k, v)
			}
			if err := json.Unmarshal(raw, &fake.JSON); err != nil {
				t.Fatal(err)
			}
			return s.validate(t, c, fake).resErr
		}
		obj := func(v any) map[string]any { return v.(map[string]any) }
		set := func(key string, val any) func(v any) any {
			return func(v any) any { obj(v)[key] = val; return v }
		}
		del := func(key string) func(v any) any {
			return func(v any) any { delete(obj(v), key); return v }
		}
		same := func(v any) any { return v }

		getProc := call{method: "GET", path: "/procedures/" + tg.procedure, token: e.ws.ViewToken}
		procResp := e.send(t, getProc)
		wantOK(t, procResp)
		answers := []answer{
			{"procedure without a required field", getProc, procResp, del("shortId"), 200, nil},
			{"procedure with an extra field", getProc, procResp, set("extra", 1), 200, nil},
			{"procedure timestamp without milliseconds", getProc, procResp, set("dueAt", "2030-01-02T03:04:05Z"), 200, nil},
			{"procedure timestamp not a date", getProc, procResp, set("createdAt", "yesterday"), 200, nil},
			{"procedure id not a UUID", getProc, procResp, set("id", "not-a-uuid"), 200, nil},
			{"procedure priority outside the enum", getProc, procResp, set("priority", "URGENT"), 200, nil},
			{"nullable string given a number", getProc, procResp, set("content", 5), 200, nil},
			{"nullable id given garbage", getProc, procResp, set("categoryId", "x"), 200, nil},
			{"nullable object given a string", getProc, procResp, set("category", "x"), 200, nil},
			{"embedded object with an extra field", getProc, procResp, set("category", map[string]any{"id": e.ws.CategoryID, "name": "c", "x": 1}), 200, nil},
			{"embedded doer without email", getProc, procResp, set("doer", map[string]any{"id": e.ws.MemberID, "name": "n"}), 200, nil},
			{"comments not an array", getProc, procResp, set("comments", "none"), 200, nil},
			{"comment without text", getProc, procResp, set("comments", []any{map[string]any{"id": tg.procedure, "createdAt": "2030-01-02T03:04:05.000Z"}}), 200, nil},
			{"position as a string", getProc, procResp, set("position", "1"), 200, nil},
			{"boolean given null", getProc, procResp, set("displayVideo", nil), 200, nil},
			{"undocumented status", getProc, procResp, same, 418, nil},
			{"a procedure as a 404 body", getProc, procResp, same, 404, nil},
			{"X-Request-Id header not a UUID", getProc, procResp, same, 200, map[string]string{"X-Request-Id": "abc"}},
			{"RateLimit-Policy without its window", getProc, procResp, same, 200, map[string]string{"RateLimit-Policy": "200"}},
		}
		listCall := call{method: "GET", path: "/procedures", token: e.ws.ViewToken}
		listResp := e.send(t, listCall)
		answers = append(answers, []answer{
			{"list without meta", listCall, listResp, del("meta"), 200, nil},
			{"list with a negative total", listCall, listResp, set("meta", map[string]any{"total": -1}), 200, nil},
			{"list with a fractional total", listCall, listResp, set("meta", map[string]any{"total": 1.5}), 200, nil},
			{"list data not an array", listCall, listResp, set("data", map[string]any{}), 200, nil},
			{"list item of the wrong resource", listCall, listResp, set("data", []any{map[string]any{"id": tg.project, "name": "p"}}), 200, nil},
		}...)
		embedded := procResp.JSON.(map[string]any)["comments"].([]any)
		if len(embedded) != 1 {
			t.Fatalf("the target embeds %d comments, want its one", len(embedded))
		}
		tooMany := make([]any, limits.EmbeddedComments+1)
		for i := range tooMany {
			tooMany[i] = embedded[0]
		}
		commentsCall := call{method: "GET", path: "/procedures/" + tg.procedure + "/comments", token: e.ws.ViewToken}
		commentsResp := e.send(t, commentsCall)
		item := func(change func(map[string]any)) []any {
			c := map[string]any{}
			for k, v := range embedded[0].(map[string]any) {
				c[k] = v
			}
			change(c)
			return []any{c}
		}
		answers = append(answers, []answer{
			{"more embedded comments than the bound", getProc, procResp, set("comments", tooMany), 200, nil},
			{"procedure without its commentCount", getProc, procResp, del("commentCount"), 200, nil},
			{"a negative commentCount", getProc, procResp, set("commentCount", -1), 200, nil},
			{"a fractional commentCount", getProc, procResp, set("commentCount", 1.5), 200, nil},
			{"comment listed with its author", commentsCall, commentsResp, set("data", item(func(c map[string]any) { c["authorId"] = e.ws.MemberID })), 200, nil},
			{"comment listed without createdAt", commentsCall, commentsResp, set("data", item(func(c map[string]any) { delete(c, "createdAt") })), 200, nil},
			{"comment list without meta", commentsCall, commentsResp, del("meta"), 200, nil},
		}...)
		delCall := call{method: "DELETE", path: "/categories/" + tg.category, token: e.ws.MemberToken}
		delResp := e.send(t, delCall)
		checkDeleted(t, delResp)
		errCall := call{method: "GET", path: "/procedures/nope", token: e.ws.ViewToken}
		errResp := e.send(t, errCall)
		answers = append(answers, []answer{
			{"delete answering success false (const)", delCall, delResp, set("success", false), 200, nil},
			{"delete answering an extra field", delCall, delResp, set("deletedId", tg.category), 200, nil},
			{"error without requestId", errCall, errResp, del("requestId"), 404, nil},
			{"error with an unknown code", errCall, errResp, set("code", "teapot"), 404, nil},
			{"error with a requestId not a UUID", errCall, errResp, set("requestId", "abc"), 404, nil},
			{"error with an extra field", errCall, errResp, set("detail", "x"), 404, nil},
			{"error fields without message", errCall, errResp, set("fields", []any{map[string]any{"field": "x"}}), 404, nil},
		}...)
		for _, a := range answers {
			t.Run("catches answer: "+a.name, func(t *testing.T) {
				if err := tamper(t, a.c, a.r, same, a.r.Status, nil); err != nil {
					t.Fatalf("the untouched answer fails: %v", err)
				}
				if err := tamper(t, a.c, a.r, a.change, a.status, a.header); err == nil {
					t.Fatalf("the document accepts the tampered answer")
				}
			})
		}

		requests := []struct {
			name  string
			c     call
			valid bool
		}{
			{"create: valid", call{method: "POST", path: "/procedures", token: "t", body: mustJSON(t, e.procBody(map[string]any{"content": []any{1}}))}, true},
			{"create: missing name", call{method: "POST", path: "/procedures", token: "t", body: mustJSON(t, e.procBody(map[string]any{"name": absent}))}, false},
			{"create: priority outside the enum", call{method: "POST", path: "/procedures", token: "t", body: mustJSON(t, e.procBody(map[string]any{"priority": "URGENT"}))}, false},
			{"create: unknown field", call{method: "POST", path: "/procedures", token: "t", body: mustJSON(t, e.procBody(map[string]any{"x": 1}))}, false},
			{"create: captureId null", call{method: "POST", path: "/procedures", token: "t", body: mustJSON(t, e.procBody(map[string]any{"captureId": nil}))}, true},
			{"update: categoryId null", call{method: "PUT", path: "/procedures/x", token: "t", body: mustJSON(t, map[string]any{"categoryId": nil})}, true},
			{"update: name null", call{method: "PUT", path: "/procedures/x", token: "t", body: mustJSON(t, map[string]any{"name": nil})}, false},
			{"update: read-only fields echoed", call{method: "PUT", path: "/procedures/x", token: "t", body: mustJSON(t, map[string]any{"id": "x", "comments": nil, "commentCount": 3, "doer": map[string]any{}})}, true},
			{"project: startedAt null", call{method: "POST", path: "/projects", token: "t", body: mustJSON(t, map[string]any{"name": "p", "startedAt": nil})}, true},
			{"project: startedAt a number", call{method: "POST", path: "/projects", token: "t", body: mustJSON(t, map[string]any{"name": "p", "startedAt": 5})}, false},
			{"query: sortOrder outside the enum", call{method: "GET", path: "/procedures?sortOrder=up", token: "t"}, false},
			{"query: page not a number", call{method: "GET", path: "/projects?page=x", token: "t"}, false},
			{"comments: page and limit", call{method: "GET", path: "/procedures/PRC-1/comments?page=2&limit=10", token: "t"}, true},
			{"comments: limit not a number", call{method: "GET", path: "/procedures/PRC-1/comments?limit=ten", token: "t"}, false},
			{"comments: limit above its maximum", call{method: "GET", path: "/procedures/PRC-1/comments?limit=101", token: "t"}, false},
			{"projects: page 0", call{method: "GET", path: "/projects?page=0", token: "t"}, false},
			{"no bearer token", call{method: "GET", path: "/members"}, false},
			{"wrong Content-Type", call{method: "POST", path: "/categories", token: "t", body: []byte(`{"name":"x"}`), contentType: "text/plain"}, false},
		}
		for _, rq := range requests {
			t.Run("judges request: "+rq.name, func(t *testing.T) {
				x := s.validate(t, rq.c, &response{Status: 200, JSON: map[string]any{}})
				if x.route == nil {
					t.Fatalf("no route: %v", x.reqErr)
				}
				if rq.valid && x.reqErr != nil {
					t.Fatalf("rejected: %v", x.reqErr)
				}
				if !rq.valid && x.reqErr == nil {
					t.Fatalf("accepted")
				}
			})
		}
	})
}
