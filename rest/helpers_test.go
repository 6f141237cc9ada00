package rest_test

// Shared helpers of the REST tests: a small client over apitest.Server that
// returns status, headers and decoded JSON; shape checkers for every docs/contract.md
// resource and for docs/design.md §6's error body; a snapshot of the workspace for
// "nothing was written" assertions; and the OpenAPI conformance check that
// every exchange made through the client passes (see openapi_test.go for the
// document itself).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/limits"
	"github.com/procsvc/procsvc/rest"
)

var (
	timestampRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)
	uuidRE      = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

// env is one server over one database with one workspace.
type env struct {
	srv *apitest.Server
	ws  *apitest.Workspace
}

func newEnv(t *testing.T, db *database.DB) *env {
	t.Helper()
	srv := apitest.Start(t, db)
	return &env{srv: srv, ws: srv.NewWorkspace(t, "Rest", "RST")}
}

// rawBody is a request body sent byte for byte (no JSON encoding).
type rawBody string

// noContentType as call.contentType sends a body without a Content-Type.
const noContentType = "-"

// call is one HTTP request.
type call struct {
	method, path, token string
	body                []byte // nil: no body
	contentType         string // default application/json when body is set; noContentType sends none
	header              map[string]string
}

// response is an answer with its JSON decoded into JSON (map[string]any,
// []any, string, float64, bool or nil).
type response struct {
	Status int
	Header http.Header
	Raw    []byte
	JSON   any
}

func (r *response) String() string {
	return fmt.Sprintf("status %d: %s", r.Status, bytes.TrimSpace(r.Raw))
}

// do sends method path as token ("" sends no Authorization header). body is
// nil (no body), a rawBody, or any value encoded as JSON.
func (e *env) do(t testing.TB, method, path, token string, body any) *response {
	t.Helper()
	c := call{method: method, path: path, token: token}
	switch b := body.(type) {
	case nil:
	case rawBody:
		c.body = []byte(b)
	case []byte:
		c.body = b
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		c.body = raw
	}
	return e.send(t, c)
}

// send performs c, checks the transport rules every answer obeys (JSON
// body, or none with 204; X-Request-Id) and that the exchange conforms to
// the OpenAPI document.
func (e *env) send(t testing.TB, c call) *response {
	t.Helper()
	req := c.request(t, e.srv.URL)
	resp, err := e.srv.HTTP.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := &response{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	switch ct := resp.Header.Get("Content-Type"); {
	case resp.StatusCode == http.StatusNoContent:
		// No body, so no Content-Type (DELETE /webhooks/{id}).
		if len(raw) != 0 || ct != "" {
			t.Fatalf("%s %s: 204 with Content-Type %q and body %q", c.method, c.path, ct, raw)
		}
	case !strings.HasPrefix(ct, "application/json"):
		t.Fatalf("%s %s: Content-Type %q, want application/json (%s)", c.method, c.path, ct, out)
	default:
		if err := json.Unmarshal(raw, &out.JSON); err != nil {
			t.Fatalf("%s %s: body is not JSON: %v (%s)", c.method, c.path, err, out)
		}
	}
	if id := resp.Header.Get("X-Request-Id"); !uuidRE.MatchString(id) {
		t.Fatalf("%s %s: X-Request-Id %q is not a UUID", c.method, c.path, id)
	}
	if !strings.HasPrefix(c.path, "/openapi.json") {
		conform(t, c, out)
	}
	return out
}

func (c call) request(t testing.TB, base string) *http.Request {
	t.Helper()
	var body io.Reader
	if c.body != nil {
		body = bytes.NewReader(c.body)
	}
	req, err := http.NewRequest(c.method, base+c.path, body)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case c.contentType == noContentType:
	case c.contentType != "":
		req.Header.Set("Content-Type", c.contentType)
	case c.body != nil:
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	return req
}

// ---------------------------------------------------------------------------
// Assertions on bodies.

func asObject(t testing.TB, v any, what string) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s is %T, want an object: %v", what, v, v)
	}
	return m
}

// wantOK asserts status 200 and an object body, and returns it.
func wantOK(t testing.TB, r *response) map[string]any {
	t.Helper()
	if r.Status != http.StatusOK {
		t.Fatalf("want 200, got %s", r)
	}
	return asObject(t, r.JSON, "body")
}

// wantSuccess asserts a success of status: with 204 no body (nil is
// returned), else an object body, returned.
func wantSuccess(t testing.TB, r *response, status int) map[string]any {
	t.Helper()
	if r.Status != status {
		t.Fatalf("want %d, got %s", status, r)
	}
	if status == http.StatusNoContent {
		return nil
	}
	return asObject(t, r.JSON, "body")
}

// wantKeys asserts that m has exactly keys.
func wantKeys(t testing.TB, what string, m map[string]any, keys ...string) {
	t.Helper()
	got := make([]string, 0, len(m))
	for k := range m {
		got = append(got, k)
	}
	sort.Strings(got)
	want := append([]string(nil), keys...)
	sort.Strings(want)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("%s has keys %v, want exactly %v", what, got, want)
	}
}

// wantError asserts docs/design.md §6's error: status, code, a body of exactly code,
// message, requestId (and optional fields), requestId equal to the
// X-Request-Id header, and, when field is not "", fields[0].field == field.
func wantError(t testing.TB, r *response, status int, code, field string) map[string]any {
	t.Helper()
	if r.Status != status {
		t.Fatalf("want status %d (%s), got %s", status, code, r)
	}
	body := asObject(t, r.JSON, "error body")
	for k := range body {
		switch k {
		case "code", "message", "requestId", "fields", "reason":
		default:
			t.Fatalf("error body has unexpected key %q: %s", k, r)
		}
	}
	for _, k := range []string{"code", "message", "requestId"} {
		s, ok := body[k].(string)
		if !ok || s == "" {
			t.Fatalf("error body: %s must be a non-empty string: %s", k, r)
		}
	}
	if body["code"] != code {
		t.Fatalf("want code %q, got %s", code, r)
	}
	id := body["requestId"].(string)
	if !uuidRE.MatchString(id) {
		t.Fatalf("requestId %q is not a UUID", id)
	}
	if h := r.Header.Get("X-Request-Id"); h != id {
		t.Fatalf("X-Request-Id header %q != requestId %q", h, id)
	}
	if f, ok := body["fields"]; ok {
		list, ok := f.([]any)
		if !ok || len(list) == 0 {
			t.Fatalf("fields must be a non-empty array: %s", r)
		}
		for i, item := range list {
			fe := asObject(t, item, fmt.Sprintf("fields[%d]", i))
			wantKeys(t, fmt.Sprintf("fields[%d]", i), fe, "field", "message")
			if s, _ := fe["field"].(string); s == "" {
				t.Fatalf("fields[%d].field is empty: %s", i, r)
			}
			if s, _ := fe["message"].(string); s == "" {
				t.Fatalf("fields[%d].message is empty: %s", i, r)
			}
		}
	}
	if field != "" {
		if got := firstField(body); got != field {
			t.Fatalf("want fields[0].field %q, got %q: %s", field, got, r)
		}
	}
	return body
}

func firstField(body map[string]any) string {
	list, _ := body["fields"].([]any)
	if len(list) == 0 {
		return ""
	}
	m, _ := list[0].(map[string]any)
	s, _ := m["field"].(string)
	return s
}

// fieldNames returns every fields[].field of an error body.
func fieldNames(body map[string]any) []string {
	list, _ := body["fields"].([]any)
	var out []string
	for _, item := range list {
		m, _ := item.(map[string]any)
		s, _ := m["field"].(string)
		out = append(out, s)
	}
	return out
}

func wantTimestamp(t testing.TB, what string, v any) string {
	t.Helper()
	s, ok := v.(string)
	if !ok || !timestampRE.MatchString(s) {
		t.Fatalf("%s = %#v, want YYYY-MM-DDTHH:mm:ss.sssZ", what, v)
	}
	return s
}

func wantID(t testing.TB, what string, v any) string {
	t.Helper()
	s, ok := v.(string)
	if !ok || !uuidRE.MatchString(s) {
		t.Fatalf("%s = %#v, want a UUID", what, v)
	}
	return s
}

func wantString(t testing.TB, what string, v any) string {
	t.Helper()
	s, ok := v.(string)
	if !ok {
		t.Fatalf("%s = %#v, want a string", what, v)
	}
	return s
}

func wantBool(t testing.TB, what string, v any) {
	t.Helper()
	if _, ok := v.(bool); !ok {
		t.Fatalf("%s = %#v, want a boolean", what, v)
	}
}

func wantEnum(t testing.TB, what string, v any, allowed ...string) {
	t.Helper()
	s, _ := v.(string)
	for _, a := range allowed {
		if s == a {
			return
		}
	}
	t.Fatalf("%s = %#v, want one of %v", what, v, allowed)
}

// procedureKeys are docs/contract.md §2.1's fields, and commentCount after
// them (docs/design.md §5): a procedure always carries all of them.
var procedureKeys = []string{"id", "shortId", "name", "priority", "state", "content", "categoryId", "doerId",
	"creatorId", "position", "dueAt", "createdAt", "updatedAt", "projectId", "workspaceId", "captureId",
	"displayVideo", "isFineTunedData", "category", "doer", "project", "comments", "commentCount"}

// checkProcedure asserts docs/contract.md §2.1's shape: every field present, optional
// ones null or of their type, embedded objects consistent with their ids.
func checkProcedure(t testing.TB, p map[string]any) {
	t.Helper()
	wantKeys(t, "procedure", p, procedureKeys...)
	wantID(t, "id", p["id"])
	if p["shortId"] != nil {
		wantString(t, "shortId", p["shortId"])
	}
	if s := wantString(t, "name", p["name"]); s == "" {
		t.Fatalf("name is empty")
	}
	wantEnum(t, "priority", p["priority"], "LOW", "MEDIUM", "HIGH")
	wantEnum(t, "state", p["state"], "TODO", "IN_PROGRESS", "COMPLETED", "WAITING")
	if p["content"] != nil {
		wantString(t, "content", p["content"])
	}
	for _, k := range []string{"categoryId", "doerId"} {
		if p[k] != nil {
			wantID(t, k, p[k])
		}
	}
	wantID(t, "creatorId", p["creatorId"])
	if _, ok := p["position"].(float64); !ok {
		t.Fatalf("position = %#v, want a number", p["position"])
	}
	for _, k := range []string{"dueAt", "createdAt", "updatedAt"} {
		wantTimestamp(t, k, p[k])
	}
	wantID(t, "projectId", p["projectId"])
	wantID(t, "workspaceId", p["workspaceId"])
	if p["captureId"] != nil {
		wantString(t, "captureId", p["captureId"])
	}
	wantBool(t, "displayVideo", p["displayVideo"])
	wantBool(t, "isFineTunedData", p["isFineTunedData"])
	embedded := func(key, idKey string, fields ...string) {
		if p[key] == nil {
			if p[idKey] != nil {
				t.Fatalf("%s is null but %s is %v", key, idKey, p[idKey])
			}
			return
		}
		m := asObject(t, p[key], key)
		wantKeys(t, key, m, fields...)
		for _, f := range fields {
			wantString(t, key+"."+f, m[f])
		}
		if m["id"] != p[idKey] {
			t.Fatalf("%s.id = %v but %s = %v", key, m["id"], idKey, p[idKey])
		}
	}
	embedded("category", "categoryId", "id", "name")
	embedded("doer", "doerId", "id", "name", "email")
	embedded("project", "projectId", "id", "name")
	shown := 0
	if p["comments"] != nil {
		list, ok := p["comments"].([]any)
		if !ok {
			t.Fatalf("comments = %#v, want an array or null", p["comments"])
		}
		for i, c := range list {
			m := asObject(t, c, "comment")
			wantKeys(t, fmt.Sprintf("comments[%d]", i), m, "id", "text", "createdAt")
			wantID(t, "comment id", m["id"])
			wantString(t, "comment text", m["text"])
			wantTimestamp(t, "comment createdAt", m["createdAt"])
		}
		shown = len(list)
	}
	// The newest limits.EmbeddedComments of commentCount: all of them when
	// it holds no more.
	count, ok := p["commentCount"].(float64)
	if !ok || count != math.Trunc(count) || int(count) < shown || shown > limits.EmbeddedComments ||
		(shown < limits.EmbeddedComments && int(count) != shown) {
		t.Fatalf("commentCount = %#v with %d comments shown, want the count of which they are the newest %d", p["commentCount"], shown, limits.EmbeddedComments)
	}
}

func checkProject(t testing.TB, p map[string]any) {
	t.Helper()
	wantKeys(t, "project", p, "id", "name", "workspaceId", "startedAt", "dueAt", "createdAt", "updatedAt")
	wantID(t, "id", p["id"])
	wantString(t, "name", p["name"])
	wantID(t, "workspaceId", p["workspaceId"])
	for _, k := range []string{"startedAt", "dueAt"} {
		if p[k] != nil {
			wantTimestamp(t, k, p[k])
		}
	}
	wantTimestamp(t, "createdAt", p["createdAt"])
	wantTimestamp(t, "updatedAt", p["updatedAt"])
}

func checkCategory(t testing.TB, c map[string]any) {
	t.Helper()
	wantKeys(t, "category", c, "id", "name", "workspaceId", "createdAt", "updatedAt")
	wantID(t, "id", c["id"])
	wantString(t, "name", c["name"])
	wantID(t, "workspaceId", c["workspaceId"])
	wantTimestamp(t, "createdAt", c["createdAt"])
	wantTimestamp(t, "updatedAt", c["updatedAt"])
}

func checkMember(t testing.TB, m map[string]any) {
	t.Helper()
	wantKeys(t, "member", m, "id", "name", "email", "role", "workspaceId", "createdAt")
	wantID(t, "id", m["id"])
	wantString(t, "name", m["name"])
	wantString(t, "email", m["email"])
	wantEnum(t, "role", m["role"], "ADMIN", "MEMBER", "VIEWER")
	wantID(t, "workspaceId", m["workspaceId"])
	wantTimestamp(t, "createdAt", m["createdAt"])
}

func checkComment(t testing.TB, c map[string]any) {
	t.Helper()
	wantKeys(t, "comment", c, "id", "procedureId", "authorId", "text", "createdAt", "updatedAt")
	wantID(t, "id", c["id"])
	wantID(t, "procedureId", c["procedureId"])
	wantID(t, "authorId", c["authorId"])
	wantString(t, "text", c["text"])
	wantTimestamp(t, "createdAt", c["createdAt"])
	wantTimestamp(t, "updatedAt", c["updatedAt"])
}

func checkDeleted(t testing.TB, r *response) {
	t.Helper()
	body := wantOK(t, r)
	wantKeys(t, "delete body", body, "success")
	if body["success"] != true {
		t.Fatalf("want {\"success\":true}, got %s", r)
	}
}

// wantList asserts docs/contract.md §2.5's envelope, checks each item, and returns the
// items and meta.total.
func wantList(t testing.TB, r *response, check func(testing.TB, map[string]any)) ([]map[string]any, int) {
	t.Helper()
	body := wantOK(t, r)
	wantKeys(t, "list", body, "data", "meta")
	data, ok := body["data"].([]any)
	if !ok {
		t.Fatalf("data = %#v, want an array", body["data"])
	}
	meta := asObject(t, body["meta"], "meta")
	wantKeys(t, "meta", meta, "total")
	total, ok := meta["total"].(float64)
	if !ok || total != float64(int(total)) || total < float64(len(data)) {
		t.Fatalf("meta.total = %#v with %d items", meta["total"], len(data))
	}
	items := make([]map[string]any, len(data))
	for i, d := range data {
		items[i] = asObject(t, d, "data item")
		check(t, items[i])
	}
	return items, int(total)
}

func ids(items []map[string]any) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i], _ = it["id"].(string)
	}
	return out
}

// ---------------------------------------------------------------------------
// Fixtures.

// absent removes a key from a body built by procBody.
type absentT struct{}

var absent = absentT{}

// procBody is a valid POST /procedures body in e's workspace, changed by over.
func (e *env) procBody(over map[string]any) map[string]any {
	b := map[string]any{
		"name": "Rotate the keys", "priority": "MEDIUM", "state": "TODO", "dueAt": "2030-01-02T03:04:05.678Z",
		"categoryId": e.ws.CategoryID, "doerId": e.ws.MemberID, "projectId": e.ws.ProjectID,
	}
	for k, v := range over {
		if v == absent {
			delete(b, k)
		} else {
			b[k] = v
		}
	}
	return b
}

// createProcedure creates a procedure as the MEMBER and returns it.
func (e *env) createProcedure(t testing.TB, over map[string]any) map[string]any {
	t.Helper()
	p := wantOK(t, e.do(t, "POST", "/procedures", e.ws.MemberToken, e.procBody(over)))
	checkProcedure(t, p)
	return p
}

func (e *env) createProject(t testing.TB, body map[string]any) map[string]any {
	t.Helper()
	p := wantOK(t, e.do(t, "POST", "/projects", e.ws.MemberToken, body))
	checkProject(t, p)
	return p
}

func (e *env) createCategory(t testing.TB, name string) map[string]any {
	t.Helper()
	c := wantOK(t, e.do(t, "POST", "/categories", e.ws.MemberToken, map[string]any{"name": name}))
	checkCategory(t, c)
	return c
}

// snapshot renders everything the REST API can write in e's workspace
// (procedures with their comments, projects, categories, webhook
// endpoints), so that a failed write can be shown to have changed nothing.
func (e *env) snapshot(t testing.TB) string {
	t.Helper()
	var b strings.Builder
	for _, path := range []string{"/procedures?limit=100", "/projects?limit=500", "/categories?limit=500", "/webhooks"} {
		r := e.do(t, "GET", path, e.ws.AdminToken, nil)
		wantOK(t, r)
		b.Write(r.Raw)
	}
	return b.String()
}

// unchanged asserts that the workspace is as before.
func (e *env) unchanged(t testing.TB, before string) {
	t.Helper()
	if after := e.snapshot(t); after != before {
		t.Fatalf("a failed write changed the workspace:\nbefore %s\nafter  %s", before, after)
	}
}

// ---------------------------------------------------------------------------
// OpenAPI conformance.

// apiSpec is the served OpenAPI document, loaded with kin-openapi.
type apiSpec struct {
	doc    *openapi3.T
	router routers.Router
	err    error
}

var (
	specOnce sync.Once
	spec     apiSpec
)

// loadSpec loads rest.DocumentJSON() (the bytes GET /openapi.json serves,
// asserted in openapi_test.go), validates it as an OpenAPI document and
// builds a router over it.
func loadSpec(t testing.TB) *apiSpec {
	t.Helper()
	specOnce.Do(func() {
		// kin-openapi knows no "uuid" format by default; make it enforce
		// RFC 9562's shape so that ids in responses are checked.
		openapi3.DefineStringFormatValidator("uuid", openapi3.NewRegexpFormatValidator(openapi3.FormatOfStringForUUIDOfRFC9562))
		loader := openapi3.NewLoader()
		spec.doc, spec.err = loader.LoadFromData(rest.DocumentJSON())
		if spec.err != nil {
			spec.err = fmt.Errorf("load: %w", spec.err)
			return
		}
		if spec.err = spec.doc.Validate(loader.Context); spec.err != nil {
			spec.err = fmt.Errorf("validate: %w", spec.err)
			return
		}
		spec.router, spec.err = gorillamux.NewRouter(spec.doc)
	})
	if spec.err != nil {
		t.Fatalf("OpenAPI document: %v", spec.err)
	}
	return &spec
}

// bearerAuth satisfies the document's bearer security scheme when the
// request carries a bearer Authorization header (the server decides whether
// the token is good).
func bearerAuth(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	h := in.RequestValidationInput.Request.Header.Get("Authorization")
	if scheme, secret, ok := strings.Cut(h, " "); !ok || !strings.EqualFold(scheme, "Bearer") || secret == "" {
		return errors.New("no bearer token")
	}
	return nil
}

// exchange is a request and its answer, as the OpenAPI validator sees them.
type exchange struct {
	route  *routers.Route // nil when the document has no such operation
	reqIn  *openapi3filter.RequestValidationInput
	reqErr error // request validation (or route lookup) error
	resErr error // response validation error
}

// validate checks c and r against the document.
func (s *apiSpec) validate(t testing.TB, c call, r *response) exchange {
	t.Helper()
	ctx := context.Background()
	req := c.request(t, "http://procsvc.test")
	var x exchange
	route, params, err := s.router.FindRoute(req)
	if err != nil {
		x.reqErr = err
		// No operation: the answer must still be the documented Error body.
		x.resErr = s.visit("Error", r.JSON)
		return x
	}
	x.route = route
	x.reqIn = &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: bearerAuth, MultiError: true},
	}
	x.reqErr = openapi3filter.ValidateRequest(ctx, x.reqIn)
	x.resErr = openapi3filter.ValidateResponse(ctx, &openapi3filter.ResponseValidationInput{
		RequestValidationInput: x.reqIn,
		Status:                 r.Status,
		Header:                 r.Header,
		Body:                   io.NopCloser(bytes.NewReader(r.Raw)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	})
	return x
}

// visit validates v against a component schema.
func (s *apiSpec) visit(name string, v any) error {
	ref := s.doc.Components.Schemas[name]
	if ref == nil || ref.Value == nil {
		return fmt.Errorf("no schema %q", name)
	}
	return ref.Value.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.MultiErrors())
}

// conform holds every exchange of the tests to the document: the answer must
// match the operation's documented response for its status (or, for a path
// or method the document lacks, be a 404/405 Error body), and a request the
// server accepted must be one the document allows.
func conform(t testing.TB, c call, r *response) {
	t.Helper()
	s := loadSpec(t)
	x := s.validate(t, c, r)
	if x.route == nil {
		if r.Status != http.StatusNotFound && r.Status != http.StatusMethodNotAllowed {
			t.Errorf("OpenAPI: %s %s is not documented (%v) but answered %s", c.method, c.path, x.reqErr, r)
		}
	} else if r.Status < 300 && x.reqErr != nil {
		t.Errorf("OpenAPI: the server accepted %s %s %s, which the document rejects: %v", c.method, c.path, c.body, x.reqErr)
	}
	if x.resErr != nil {
		t.Errorf("OpenAPI: the answer to %s %s does not match the document: %v\n%s", c.method, c.path, x.resErr, r)
	}
}
