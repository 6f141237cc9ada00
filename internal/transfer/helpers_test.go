package transfer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/procsvc/procsvc/ent/migrate"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/webhooks"
)

// fixture is a source database holding rows in every table of the schema,
// written through the real server, and what the tests check the copy by.
type fixture struct {
	db         *database.DB
	srv        *apitest.Server
	ws, other  *apitest.Workspace
	procedures []string
	// secret is the webhook endpoint's, as createWebhook answered it.
	secret   string
	endpoint string
	receiver *receiver
}

// emptyURL returns the URL of a database of dialect that does not exist
// yet (SQLite) or is empty and unmigrated (PostgreSQL).
func emptyURL(t *testing.T, dialect string) string {
	t.Helper()
	if dialect == "postgres" {
		return dbtest.CreatePostgres(t)
	}
	return "sqlite://" + filepath.Join(t.TempDir(), "target.db")
}

// openURL opens rawURL for t, without migrating it.
func openURL(t *testing.T, rawURL string) *database.DB {
	t.Helper()
	db, err := database.Open(context.Background(), rawURL, database.Options{ProbeInterval: -1})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// emptyDB is a database of dialect for a copy to write into.
func emptyDB(t *testing.T, dialect string) *database.DB {
	t.Helper()
	return openURL(t, emptyURL(t, dialect))
}

// populate fills a fresh database of dialect: two workspaces, procedures
// with JSON content, comments, a revoked token, a webhook endpoint whose
// deliveries were made by the real dispatcher, an idempotency key and its
// budget. It fails if a table of the schema is left empty, so that a table
// added to the schema must be given rows here, and is then proved copied.
func populate(t *testing.T, dialect string, procedures int) *fixture {
	t.Helper()
	ctx := context.Background()
	db := dbtest.Open(t, dialect)
	srv := apitest.Start(t, db, core.WithPrivateWebhookAddresses(true))
	f := &fixture{db: db, srv: srv}
	f.ws = srv.NewWorkspace(t, "Alpha", "ALP")
	f.other = srv.NewWorkspace(t, "Beta", "BET")
	f.receiver = newReceiver(t)

	var hook struct {
		CreateWebhook struct {
			Webhook struct{ ID string }
			Secret  string
		}
	}
	srv.GraphQL(t, f.ws.AdminToken, `mutation($url: String!) { createWebhook(input: {url: $url}) { webhook { id } secret } }`,
		map[string]any{"url": f.receiver.URL + "/hook"}).Decode(t, &hook)
	f.secret, f.endpoint = hook.CreateWebhook.Secret, hook.CreateWebhook.Webhook.ID

	admin, err := srv.Service.ActAsAdmin(ctx, f.ws.ID)
	if err != nil {
		t.Fatal(err)
	}
	due := time.Date(2027, 3, 1, 12, 30, 0, 123456000, time.UTC)
	for i := range procedures {
		var content any = map[string]any{"step": i, "ratio": 1.5, "tags": []string{"a", "b"}, "z": nil}
		if i%3 == 1 {
			content = nil
		}
		p, err := srv.Service.CreateProcedure(admin, core.CreateProcedureInput{
			Name: fmt.Sprintf("Procedure %03d", i), Priority: []string{"LOW", "MEDIUM", "HIGH"}[i%3], State: []string{"TODO", "IN_PROGRESS", "COMPLETED", "WAITING"}[i%4],
			DueAt: &due, CategoryID: f.ws.CategoryID, DoerID: f.ws.MemberID, ProjectID: f.ws.ProjectID, Content: content,
		})
		if err != nil {
			t.Fatalf("CreateProcedure: %v", err)
		}
		f.procedures = append(f.procedures, p.ID.String())
	}
	for i := range 3 {
		if _, err := srv.Service.AddComment(admin, f.procedures[0], fmt.Sprintf("comment %d", i)); err != nil {
			t.Fatalf("AddComment: %v", err)
		}
	}
	tokens, err := srv.Service.Tokens(admin)
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range tokens {
		if tk.Name == "VIEWER" {
			if _, err := srv.Service.RevokeToken(admin, tk.ID.String()); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A member linked to an identity provider's person, another unlinked
	// from one (no API shows them; a copy keeps them).
	if _, err := db.SQL.ExecContext(ctx, `UPDATE "members" SET "oidc_issuer" = `+param(db, 1)+`, "oidc_subject" = `+param(db, 2)+
		` WHERE "id" = `+param(db, 3), "https://idp.example", "u-admin", f.ws.AdminID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SQL.ExecContext(ctx, `UPDATE "members" SET "oidc_unlinked_issuer" = `+param(db, 1)+`, "oidc_unlinked_subject" = `+param(db, 2)+
		` WHERE "id" = `+param(db, 3), "https://idp.example", "u-member", f.ws.MemberID); err != nil {
		t.Fatal(err)
	}
	// An idempotent REST write: an idempotency key and the workspace's
	// budget row.
	if status, body := f.rest(t, srv, f.ws.AdminToken, "POST", "/categories", `{"name":"Idempotent"}`, "key-1"); status/100 != 2 {
		t.Fatalf("idempotent POST: %d %s", status, body)
	}
	// The deliveries: the real dispatcher fans the log out to the
	// endpoint, and is stopped before the copy.
	d := webhooks.New(db.Client, db.Dialect, webhooks.Options{AllowPrivate: true, PollInterval: 20 * time.Millisecond, Jitter: -1})
	d.Start()
	eventually(t, "deliveries sent", func() bool { return f.receiver.count() >= 3 && rows(t, db, "webhook_deliveries") >= 3 })
	d.Close()

	for _, tbl := range migrate.Tables {
		if rows(t, db, tbl.Name) == 0 {
			t.Fatalf("the fixture leaves table %s empty: give it rows, so that the copy of it is tested", tbl.Name)
		}
	}
	return f
}

// rest sends a REST request; key, when set, is its Idempotency-Key.
func (f *fixture) rest(t *testing.T, srv *apitest.Server, token, method, path, body, key string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := srv.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// rows counts a table's rows.
func rows(t testing.TB, db *database.DB, table string) int {
	t.Helper()
	var n int
	if err := db.SQL.QueryRow(`SELECT count(*) FROM "` + table + `"`).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

// counts is every table's rows.
func counts(t testing.TB, db *database.DB) map[string]int {
	out := map[string]int{}
	for _, tbl := range migrate.Tables {
		out[tbl.Name] = rows(t, db, tbl.Name)
	}
	return out
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

// receiver is a webhook receiver that verifies nothing itself: it keeps
// each request's signature header and body.
type receiver struct {
	*httptest.Server
	mu  sync.Mutex
	got []delivery
}

type delivery struct {
	signature, eventID string
	body               []byte
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, delivery{signature: r.Header.Get(webhooks.HeaderSignature), eventID: r.Header.Get(webhooks.HeaderEventID), body: body})
		rc.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.got)
}

func (rc *receiver) deliveries() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.got...)
}

// gql posts a query as token and returns its data, failing on errors.
func gql(t *testing.T, srv *apitest.Server, token, query string, vars map[string]any) json.RawMessage {
	t.Helper()
	r := srv.GraphQL(t, token, query, vars)
	if len(r.Errors) > 0 || r.Status != http.StatusOK {
		t.Fatalf("GraphQL %d: %+v", r.Status, r.Errors)
	}
	return r.Data
}
