package webhooks_test

// Shared fixtures of the dispatcher's tests: a workspace with an admin and
// two projects (setup), endpoints inserted as the admin API would insert
// them (cursor at the workspace's version), receivers that verify and
// count what they are sent, and polling with a deadline.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/webhookdelivery"
	"github.com/procsvc/procsvc/ent/workspace"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/viewer"
	"github.com/procsvc/procsvc/internal/webhooks"
)

const secret = "whsec_test_secret"

// fixture is a workspace with an admin and two projects.
type fixture struct {
	db       *database.DB
	svc      *core.Service
	boot     *core.Bootstrapped
	admin    context.Context
	projects [2]*ent.Project
	category *ent.Category
}

func sys() context.Context { return viewer.System(context.Background()) }

func setup(t testing.TB, db *database.DB) *fixture { return setupKey(t, db, "Hooks", "HK") }

// setupKey is setup of a workspace of another name and key (a second
// workspace over one database).
func setupKey(t testing.TB, db *database.DB, name, key string) *fixture {
	t.Helper()
	svc := core.New(db.Client)
	boot, err := svc.CreateWorkspace(context.Background(), core.NewWorkspace{
		Name: name, Key: key, AdminName: "Admin", AdminEmail: "admin@" + strings.ToLower(key) + ".example.com",
	})
	if err != nil {
		t.Fatalf("CreateWorkspace: %v", err)
	}
	admin, err := svc.ActAsAdmin(context.Background(), boot.Workspace.ID.String())
	if err != nil {
		t.Fatalf("ActAsAdmin: %v", err)
	}
	f := &fixture{db: db, svc: svc, boot: boot, admin: admin}
	for i := range f.projects {
		if f.projects[i], err = svc.CreateProject(admin, core.ProjectInput{Name: core.Some(fmt.Sprintf("Project %d", i))}); err != nil {
			t.Fatalf("CreateProject: %v", err)
		}
	}
	if f.category, err = svc.CreateCategory(admin, "General"); err != nil {
		t.Fatalf("CreateCategory: %v", err)
	}
	return f
}

// procedure writes a procedure in project p: one event.
func (f *fixture) procedure(t testing.TB, p *ent.Project, name string) *ent.Procedure {
	t.Helper()
	due := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	proc, err := f.svc.CreateProcedure(f.admin, core.CreateProcedureInput{Name: name, Priority: "MEDIUM", State: "TODO",
		DueAt: &due, CategoryID: f.category.ID.String(), DoerID: f.boot.Admin.ID.String(), ProjectID: p.ID.String()})
	if err != nil {
		t.Fatalf("CreateProcedure: %v", err)
	}
	return proc
}

// endpointOpts are what an endpoint filters on.
type endpointOpts struct {
	kinds   []core.EventKind
	project *uuid.UUID
}

// endpoint registers url as the admin API does: its cursor at the
// workspace's current version (it is sent the events after its creation).
func (f *fixture) endpoint(t testing.TB, url string, o endpointOpts) *ent.WebhookEndpoint {
	t.Helper()
	ws, err := f.db.Client.Workspace.Query().Where(workspace.ID(f.boot.Workspace.ID)).Only(sys())
	if err != nil {
		t.Fatal(err)
	}
	kinds, _ := json.Marshal(o.kinds)
	if o.kinds == nil {
		kinds = []byte("[]")
	}
	ep, err := f.db.Client.WebhookEndpoint.Create().SetWorkspaceID(ws.ID).SetURL(url).SetSecret(secret).
		SetKinds(string(kinds)).SetNillableProjectID(o.project).SetCursor(ws.Version).Save(sys())
	if err != nil {
		t.Fatalf("create endpoint: %v", err)
	}
	return ep
}

// categories writes n categories: n events.
func (f *fixture) categories(t testing.TB, n int) []*ent.Category {
	t.Helper()
	out := make([]*ent.Category, n)
	for i := range n {
		c, err := f.svc.CreateCategory(f.admin, fmt.Sprintf("Category %s", uuid.NewString()[:8]))
		if err != nil {
			t.Fatalf("CreateCategory: %v", err)
		}
		out[i] = c
	}
	return out
}

// received is one request a receiver got.
type received struct {
	endpoint  string
	eventID   string
	eventType string
	delivery  string
	event     core.Event
	verified  error
	at        time.Time
}

// receiver is an HTTP server that verifies and records every request and
// answers as answer says (200 when nil).
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []received
	answer func(r *http.Request, n int) int
}

func newReceiver(t testing.TB, answer func(r *http.Request, n int) int) *receiver {
	rc := &receiver{answer: answer}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		g := received{endpoint: r.URL.Path, eventID: r.Header.Get(webhooks.HeaderEventID), eventType: r.Header.Get(webhooks.HeaderEventType),
			delivery: r.Header.Get(webhooks.HeaderDeliveryID), at: time.Now(),
			verified: webhooks.Verify(secret, r.Header.Get(webhooks.HeaderSignature), body, 0)}
		if err := json.Unmarshal(body, &g.event); err != nil {
			g.verified = fmt.Errorf("body: %w", err)
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			g.verified = fmt.Errorf("content type %q", ct)
		}
		if ua := r.Header.Get("User-Agent"); ua != webhooks.UserAgent {
			g.verified = fmt.Errorf("user agent %q", ua)
		}
		rc.mu.Lock()
		rc.got = append(rc.got, g)
		n := len(rc.got)
		rc.mu.Unlock()
		status := http.StatusOK
		if rc.answer != nil {
			status = rc.answer(r, n)
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte("thanks"))
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) received() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// options are the tests' dispatcher options: private addresses allowed
// (receivers listen on loopback), quick polls and retries.
func options() webhooks.Options {
	return webhooks.Options{AllowPrivate: true, PollInterval: 20 * time.Millisecond,
		Schedule: []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond}, Jitter: -1,
		Timeout: 2 * time.Second}
}

func start(t testing.TB, db *database.DB, o webhooks.Options) *webhooks.Dispatcher {
	t.Helper()
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(tlog{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	d := webhooks.New(db.Client, db.Dialect, o)
	d.Start()
	t.Cleanup(d.Close)
	return d
}

// tlog writes a dispatcher's log to its test's.
type tlog struct{ t testing.TB }

func (l tlog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// eventually polls cond until it holds, failing t after a deadline.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// deliveries reads ep's deliveries, oldest first.
func deliveries(t testing.TB, db *database.DB, ep *ent.WebhookEndpoint) []*ent.WebhookDelivery {
	t.Helper()
	ds, err := db.Client.WebhookDelivery.Query().Where(webhookdelivery.EndpointID(ep.ID)).
		Order(webhookdelivery.ByEventVersion(), webhookdelivery.ByCreatedAt()).All(sys())
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// settled reports whether every delivery of ep is past pending.
func settled(t testing.TB, db *database.DB, ep *ent.WebhookEndpoint, want int) bool {
	ds := deliveries(t, db, ep)
	if len(ds) < want {
		return false
	}
	for _, d := range ds {
		if d.State == webhookdelivery.StatePending {
			return false
		}
	}
	return true
}

func describe(ds []*ent.WebhookDelivery) string {
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "\n  v%d %s attempts=%d status=%v error=%q", d.EventVersion, d.State, d.Attempts, d.StatusCode, d.Error)
	}
	return b.String()
}
