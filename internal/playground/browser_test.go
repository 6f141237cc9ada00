package playground

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/procsvc/procsvc/internal/browsertest"
)

// TestBrowserAgainstServer runs the real-browser test against a running
// procsvc: set PROCSVC_PLAYGROUND_URL (e.g. http://127.0.0.1:8080) and
// PROCSVC_PLAYGROUND_TOKEN (the token procsvc printed). Skipped when unset.
func TestBrowserAgainstServer(t *testing.T) {
	baseURL := os.Getenv("PROCSVC_PLAYGROUND_URL")
	token := os.Getenv("PROCSVC_PLAYGROUND_TOKEN")
	if baseURL == "" || token == "" {
		t.Skip("set PROCSVC_PLAYGROUND_URL and PROCSVC_PLAYGROUND_TOKEN to run the playground in a browser against a running procsvc")
	}
	if ok, why := browsertest.BrowserAvailable(); !ok {
		t.Fatalf("PROCSVC_PLAYGROUND_URL is set but the browser test cannot run: %s (bash .ci/browser-test.sh installs it)", why)
	}
	shot := filepath.Join(browsertest.ScreenshotDir(t), "procsvc-playground.png")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := browsertest.RunBrowserTest(ctx, baseURL, token, shot); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", shot)
}

// TestBrowserWithStubBackend runs the real-browser test against this
// package's handler and stubBackend, a stand-in /graphql, so that the page,
// its CSP, its assets and GraphiQL's wiring are exercised without a
// database. Skipped when chromium, node or playwright-core are missing (see
// .ci/browser-test.sh), except under CI, where a skip would hide a
// regression.
func TestBrowserWithStubBackend(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	if ok, why := browsertest.BrowserAvailable(); !ok {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the playground browser test cannot run under CI: %s (run bash .ci/browser-test.sh)", why)
		}
		t.Skip("browser test unavailable: " + why)
	}
	const token = "procsvc_stub_token_for_the_browser_test"
	mux := http.NewServeMux()
	h := Handler()
	mux.Handle(Path, h)
	mux.Handle(Path+"/", h)
	mux.Handle("/graphql", RedirectBrowsers(stubBackend{token: token}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	shot := filepath.Join(browsertest.ScreenshotDir(t), "procsvc-playground-stub.png")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := browsertest.RunBrowserTest(ctx, srv.URL, token, shot); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", shot)
}

// stubBackend stands in for procsvc's /graphql in the browser test. Over
// HTTP it refuses a request without token the way procsvc does (401, a
// GraphQL error coded unauthenticated: "missing bearer token" or "unknown
// token"), answers introspection with stubIntrospection, { __typename }
// with Query, and anything else with canned data shaped like the starter
// query's. Over WebSocket (graphql-transport-ws) it closes a connection
// whose connection_init lacks the token with 4403 "Forbidden:
// unauthenticated", as procsvc does; it runs no subscriptions (each gets an
// error message).
type stubBackend struct{ token string }

func (s stubBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Upgrade") != "" {
		s.serveWebSocket(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch auth := r.Header.Get("Authorization"); {
	case auth == "":
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"errors":[{"extensions":{"code":"unauthenticated"},"message":"missing bearer token: send Authorization: Bearer <token>"}]}`))
		return
	case auth != "Bearer "+s.token:
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"errors":[{"extensions":{"code":"unauthenticated"},"message":"unknown token"}]}`))
		return
	}
	var req struct {
		Query string `json:"query"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	switch {
	case strings.Contains(req.Query, "__schema"):
		_, _ = w.Write([]byte(stubIntrospection))
	case strings.TrimSpace(req.Query) == "{ __typename }":
		_, _ = w.Write([]byte(`{"data":{"__typename":"Query"}}`))
	default:
		_, _ = w.Write([]byte(`{"data":{"viewer":{"name":"Demo Admin","role":"ADMIN"},"procedures":{"totalCount":1,"nodes":[` +
			`{"shortId":"PRC-1","name":"Stub procedure","state":"OPEN","dueAt":null,"doer":null,"project":{"name":"Demo"}}]}}}`))
	}
}

func (s stubBackend) serveWebSocket(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		return // Accept answered
	}
	defer func() { _ = c.CloseNow() }()
	ctx := r.Context()
	var init struct {
		Type    string `json:"type"`
		Payload struct {
			Authorization string `json:"authorization"`
		} `json:"payload"`
	}
	if err := wsjson.Read(ctx, c, &init); err != nil {
		return
	}
	if init.Type != "connection_init" || init.Payload.Authorization != "Bearer "+s.token {
		_ = c.Close(4403, "Forbidden: unauthenticated")
		return
	}
	if err := wsjson.Write(ctx, c, map[string]string{"type": "connection_ack"}); err != nil {
		return
	}
	for {
		var msg struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		}
		if err := wsjson.Read(ctx, c, &msg); err != nil {
			return
		}
		if msg.Type == "subscribe" {
			err := wsjson.Write(ctx, c, map[string]any{"id": msg.ID, "type": "error",
				"payload": []map[string]string{{"message": "the stub backend runs no subscriptions"}}})
			if err != nil {
				return
			}
		}
	}
}

// stubIntrospection is a minimal schema answering the starter query's
// shape, enough for GraphiQL's docs explorer to show its root types.
const stubIntrospection = `{"data":{"__schema":{
"description":null,
"queryType":{"name":"Query"},"mutationType":null,"subscriptionType":null,
"types":[
 {"kind":"OBJECT","name":"Query","description":"The stub's root query.","specifiedByURL":null,"fields":[
  {"name":"viewer","description":"Who is asking.","args":[],"type":{"kind":"NON_NULL","name":null,"ofType":{"kind":"OBJECT","name":"User","ofType":null}},"isDeprecated":false,"deprecationReason":null},
  {"name":"procedures","description":"Procedures.","args":[{"name":"first","description":null,"type":{"kind":"SCALAR","name":"Int","ofType":null},"defaultValue":null,"isDeprecated":false,"deprecationReason":null}],"type":{"kind":"NON_NULL","name":null,"ofType":{"kind":"OBJECT","name":"ProcedureConnection","ofType":null}},"isDeprecated":false,"deprecationReason":null}
 ],"inputFields":null,"interfaces":[],"enumValues":null,"possibleTypes":null},
 {"kind":"OBJECT","name":"User","description":null,"specifiedByURL":null,"fields":[
  {"name":"name","description":null,"args":[],"type":{"kind":"SCALAR","name":"String","ofType":null},"isDeprecated":false,"deprecationReason":null},
  {"name":"role","description":null,"args":[],"type":{"kind":"SCALAR","name":"String","ofType":null},"isDeprecated":false,"deprecationReason":null}
 ],"inputFields":null,"interfaces":[],"enumValues":null,"possibleTypes":null},
 {"kind":"OBJECT","name":"Project","description":null,"specifiedByURL":null,"fields":[
  {"name":"name","description":null,"args":[],"type":{"kind":"SCALAR","name":"String","ofType":null},"isDeprecated":false,"deprecationReason":null}
 ],"inputFields":null,"interfaces":[],"enumValues":null,"possibleTypes":null},
 {"kind":"OBJECT","name":"Procedure","description":null,"specifiedByURL":null,"fields":[
  {"name":"shortId","description":null,"args":[],"type":{"kind":"SCALAR","name":"String","ofType":null},"isDeprecated":false,"deprecationReason":null},
  {"name":"name","description":null,"args":[],"type":{"kind":"SCALAR","name":"String","ofType":null},"isDeprecated":false,"deprecationReason":null},
  {"name":"state","description":null,"args":[],"type":{"kind":"SCALAR","name":"String","ofType":null},"isDeprecated":false,"deprecationReason":null},
  {"name":"dueAt","description":null,"args":[],"type":{"kind":"SCALAR","name":"String","ofType":null},"isDeprecated":false,"deprecationReason":null},
  {"name":"doer","description":null,"args":[],"type":{"kind":"OBJECT","name":"User","ofType":null},"isDeprecated":false,"deprecationReason":null},
  {"name":"project","description":null,"args":[],"type":{"kind":"OBJECT","name":"Project","ofType":null},"isDeprecated":false,"deprecationReason":null}
 ],"inputFields":null,"interfaces":[],"enumValues":null,"possibleTypes":null},
 {"kind":"OBJECT","name":"ProcedureConnection","description":null,"specifiedByURL":null,"fields":[
  {"name":"totalCount","description":null,"args":[],"type":{"kind":"NON_NULL","name":null,"ofType":{"kind":"SCALAR","name":"Int","ofType":null}},"isDeprecated":false,"deprecationReason":null},
  {"name":"nodes","description":null,"args":[],"type":{"kind":"LIST","name":null,"ofType":{"kind":"OBJECT","name":"Procedure","ofType":null}},"isDeprecated":false,"deprecationReason":null}
 ],"inputFields":null,"interfaces":[],"enumValues":null,"possibleTypes":null},
 {"kind":"SCALAR","name":"String","description":null,"specifiedByURL":null,"fields":null,"inputFields":null,"interfaces":null,"enumValues":null,"possibleTypes":null},
 {"kind":"SCALAR","name":"Int","description":null,"specifiedByURL":null,"fields":null,"inputFields":null,"interfaces":null,"enumValues":null,"possibleTypes":null},
 {"kind":"SCALAR","name":"Boolean","description":null,"specifiedByURL":null,"fields":null,"inputFields":null,"interfaces":null,"enumValues":null,"possibleTypes":null}
],
"directives":[]}}}`
