// Package apitest boots procsvc's real HTTP handler over a real database for
// tests, and creates workspaces with members of every role.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/procsvc/procsvc/graph/gqlhttp"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/events"
	"github.com/procsvc/procsvc/internal/server"
)

// Server is a running procsvc over one database.
type Server struct {
	URL     string
	DB      *database.DB
	Service *core.Service
	HTTP    *http.Client
	// Documents is the GraphQL documents it keeps.
	Documents *gqlhttp.Documents
}

// Start serves db's full handler until t ends.
func Start(t testing.TB, db *database.DB, opts ...core.Option) *Server {
	t.Helper()
	return StartWith(t, db, server.Deps{}, opts...)
}

// StartWith is Start with deps' settings; its DB, Service, Log and Hub are
// Start's, and so is the response cache's size unless deps sets one.
func StartWith(t testing.TB, db *database.DB, deps server.Deps, opts ...core.Option) *Server {
	t.Helper()
	// Writes announce their changes as in production (pg_notify on
	// PostgreSQL, the hub on SQLite), so that every API test also runs the
	// announcement inside each write. Nothing LISTENs here: subscription
	// tests on PostgreSQL start their own listener (internal/server).
	hub := events.NewHub(events.HubOptions{})
	svc := core.New(db.Client, append([]core.Option{core.WithAnnouncer(server.Announcer(db, hub)), core.WithLockPolicy(core.LockPolicyFor(db.Dialect))}, opts...)...)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// The response cache is on, as in production, so that every API test
	// also proves that no write leaves a stale cached read behind.
	deps.DB, deps.Service, deps.Log, deps.Hub = db, svc, log, hub
	if deps.ResponseCacheBytes == 0 {
		deps.ResponseCacheBytes = 16 << 20
	}
	h := server.NewHandler(deps)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	// Before ts.Close (cleanups run last first): ending the subscriptions
	// ends their streams, which ts.Close waits for.
	t.Cleanup(hub.Close)
	return &Server{URL: ts.URL, DB: db, Service: svc, HTTP: ts.Client(), Documents: h.Documents}
}

// Workspace is a workspace with one member of each role and their tokens,
// plus a project and a category to hang procedures on.
type Workspace struct {
	ID                                 string
	AdminID, MemberID, ViewerID        string
	AdminToken, MemberToken, ViewToken string
	ProjectID, CategoryID              string
}

// NewWorkspace creates a workspace named name with key (e.g. "PRC").
func (s *Server) NewWorkspace(t testing.TB, name, key string) *Workspace {
	t.Helper()
	ctx := context.Background()
	b, err := s.Service.CreateWorkspace(ctx, core.NewWorkspace{Name: name, Key: key, AdminName: "Ada Admin", AdminEmail: "admin@" + key + ".example"})
	if err != nil {
		t.Fatalf("create workspace: %v", err)
	}
	w := &Workspace{ID: b.Workspace.ID.String(), AdminID: b.Admin.ID.String(), AdminToken: b.Secret}
	actx, err := s.Service.ActAsAdmin(ctx, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	add := func(name, email, role string) (id, token string) {
		m, err := s.Service.AddMember(actx, core.MemberInput{Name: core.Some(name), Email: core.Some(email), Role: core.Some(role)})
		if err != nil {
			t.Fatalf("add member: %v", err)
		}
		_, secret, err := s.Service.CreateToken(actx, core.TokenInput{MemberID: m.ID.String(), Name: role})
		if err != nil {
			t.Fatalf("create token: %v", err)
		}
		return m.ID.String(), secret
	}
	w.MemberID, w.MemberToken = add("Max Member", "member@"+key+".example", "MEMBER")
	w.ViewerID, w.ViewToken = add("Vic Viewer", "viewer@"+key+".example", "VIEWER")
	p, err := s.Service.CreateProject(actx, core.ProjectInput{Name: core.Some(name + " project")})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Service.CreateCategory(actx, name+" category")
	if err != nil {
		t.Fatal(err)
	}
	w.ProjectID, w.CategoryID = p.ID.String(), c.ID.String()
	return w
}

// GQLError is one GraphQL error as the API renders it.
type GQLError struct {
	Message    string `json:"message"`
	Path       []any  `json:"path"`
	Extensions struct {
		Code      string `json:"code"`
		RequestID string `json:"requestId"`
		Reason    string `json:"reason"`
		Fields    []struct {
			Field   string `json:"field"`
			Message string `json:"message"`
		} `json:"fields"`
	} `json:"extensions"`
}

// GQLResponse is a GraphQL response with its HTTP status.
type GQLResponse struct {
	Status int
	Header http.Header
	Data   json.RawMessage `json:"data"`
	Errors []GQLError      `json:"errors"`
}

// Code returns the first error's code, or "".
func (r *GQLResponse) Code() string {
	if len(r.Errors) == 0 {
		return ""
	}
	return r.Errors[0].Extensions.Code
}

// Decode unmarshals data into v, failing t on errors in the response.
func (r *GQLResponse) Decode(t testing.TB, v any) {
	t.Helper()
	if len(r.Errors) > 0 {
		t.Fatalf("unexpected GraphQL errors: %+v", r.Errors)
	}
	if err := json.Unmarshal(r.Data, v); err != nil {
		t.Fatalf("decode data %s: %v", r.Data, err)
	}
}

// GraphQL posts query with vars as token (no Authorization header when
// token is "").
func (s *Server) GraphQL(t testing.TB, token, query string, vars map[string]any) *GQLResponse {
	t.Helper()
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		t.Fatal(err)
	}
	return s.GraphQLRaw(t, token, "application/json", body)
}

// GraphQLRaw posts a raw body with a content type.
func (s *Server) GraphQLRaw(t testing.TB, token, contentType string, body []byte) *GQLResponse {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+"/graphql", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := &GQLResponse{Status: resp.StatusCode, Header: resp.Header}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("response is not JSON (status %d): %s", resp.StatusCode, raw)
	}
	return out
}
