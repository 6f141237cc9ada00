package server_test

// Write guarantees through the whole handler, whatever the transport: a
// request the rate limiter refuses touches no table (its Idempotency-Key
// stays free), and every query or mutation, framed as JSON or as a
// Server-Sent Event, keyed or not, runs under the request deadline.

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/idempotency"
	"github.com/procsvc/procsvc/internal/server"
)

// postKeyed posts a GraphQL body to s with accept and, unless empty, key.
func postKeyed(t *testing.T, s *apitest.Server, token, accept, key, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+"/graphql", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if key != "" {
		req.Header.Set(idempotency.Header, key)
	}
	resp, err := s.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(raw)
}

// TestRefusedKeyedMutationsTouchNoTable: a token over its rate limit sends
// keyed GraphQL mutations; each is refused 429 having run exactly the
// statements of an unkeyed refusal (authentication), none of them on
// idempotency_keys, and its key is still free once the bucket refills: the
// retry runs rather than being answered 409 or a replay.
func TestRefusedKeyedMutationsTouchNoTable(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		clk := newClock()
		s := limitedServer(t, db, clk, "--rate-limit", "1", "--rate-burst", "2")
		w := s.NewWorkspace(t, "Refused", "REF")
		mutation := func(name string) string {
			b, _ := json.Marshal(map[string]any{"query": `mutation { createCategory(input: {name: "` + name + `"}) { name } }`})
			return string(b)
		}
		for i := range 2 {
			if status, _, body := postKeyed(t, s, w.MemberToken, "", "spent-"+string(rune('a'+i)), mutation("spent")); status != http.StatusOK {
				t.Fatalf("within the burst: %d %s", status, body)
			}
		}
		statements := func(key string) (int64, []string) {
			var mu sync.Mutex
			var touching []string
			db.Record(func(st database.Statement) {
				if strings.Contains(st.Query, "idempotency") {
					mu.Lock()
					touching = append(touching, st.Query)
					mu.Unlock()
				}
			})
			defer db.Record(nil)
			n := db.Statements()
			status, _, body := postKeyed(t, s, w.MemberToken, "", key, mutation("refused"))
			if status != http.StatusTooManyRequests || !strings.Contains(body, `"rate_limited"`) {
				t.Fatalf("over the limit: %d %s", status, body)
			}
			return db.Statements() - n, touching
		}
		unkeyed, _ := statements("")
		for _, key := range []string{"refused-1", "refused-2", "refused-1"} {
			n, touching := statements(key)
			if n != unkeyed || len(touching) > 0 {
				t.Fatalf("a refused keyed mutation ran %d statements (an unkeyed refusal %d), on idempotency: %q", n, unkeyed, touching)
			}
		}
		if n := countRows(t, db, "idempotency_keys"); n != 2 {
			t.Fatalf("%d keys stored, want the 2 within the burst", n)
		}
		clk.Advance(time.Minute)
		status, h, body := postKeyed(t, s, w.MemberToken, "", "refused-1", mutation("refused"))
		if status != http.StatusOK || h.Get(idempotency.ReplayedHeader) != "" || !strings.Contains(body, `"refused"`) {
			t.Fatalf("the refused key was not free: %d %v %s", status, h, body)
		}
	})
}

// deadlineRecorder is a content generator that records the deadline of
// the request it runs in.
type deadlineRecorder struct {
	mu        sync.Mutex
	deadlines []time.Time
}

func (g *deadlineRecorder) Generate(ctx context.Context, req core.GenerateRequest) (string, error) {
	d, _ := ctx.Deadline()
	g.mu.Lock()
	g.deadlines = append(g.deadlines, d)
	g.mu.Unlock()
	return "# " + req.Name, nil
}

func (g *deadlineRecorder) last() time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.deadlines) == 0 {
		return time.Time{}
	}
	return g.deadlines[len(g.deadlines)-1]
}

// TestEveryMutationHasTheRequestDeadline: a mutation runs under the
// request deadline (or, keyed, its claim's, which is no later) on every
// transport: answered as JSON or framed as a Server-Sent Event. Content
// generation records the deadline it sees; nothing waits for it.
func TestEveryMutationHasTheRequestDeadline(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		const timeout = 30 * time.Second
		gen := &deadlineRecorder{}
		svc := core.New(db.Client, core.WithGenerator(gen))
		ts := httptest.NewServer(server.NewHandler(server.Deps{DB: db, Service: svc, Log: slog.New(slog.DiscardHandler), RequestTimeout: timeout}))
		t.Cleanup(ts.Close)
		s := &apitest.Server{URL: ts.URL, DB: db, Service: svc, HTTP: ts.Client()}
		w := s.NewWorkspace(t, "Deadline", "DL")
		for i, c := range []struct{ accept, key string }{
			{"", ""},
			{"", "plain-key"},
			{"text/event-stream", ""},
			{"text/event-stream", "framed-key"},
			{"application/json, text/event-stream", "json-key"},
		} {
			vars := map[string]any{"in": map[string]any{"name": "deadline " + string(rune('a'+i)), "priority": "MEDIUM", "state": "TODO",
				"dueAt": "2030-01-01", "projectId": w.ProjectID, "categoryId": w.CategoryID, "doerId": w.MemberID, "generateProcedure": true}}
			body, _ := json.Marshal(map[string]any{"query": `mutation($in: CreateProcedureInput!) { createProcedure(input: $in) { id } }`, "variables": vars})
			sent := time.Now()
			status, h, resp := postKeyed(t, s, w.MemberToken, c.accept, c.key, string(body))
			if status != http.StatusOK || strings.Contains(resp, "errors") {
				t.Fatalf("%q %q: %d %s", c.accept, c.key, status, resp)
			}
			if c.accept == "text/event-stream" && h.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("%q: answered %q", c.accept, h.Get("Content-Type"))
			}
			if d := gen.last(); d.IsZero() || d.After(sent.Add(timeout)) {
				t.Fatalf("%q %q: generation ran with deadline %v, want one within %s of %v", c.accept, c.key, d, timeout, sent)
			}
		}
	})
}

// TestKeyedMutationInDoubtOverWebSocket: a mutation sent over a WebSocket
// with extensions.idempotencyKey whose COMMIT reaches the database but
// whose answer is lost reads its outcome back from its key, answers it as
// committed, and its retry over the socket replays that answer; one whose
// connection breaks before the COMMIT is sent answers unavailable and
// frees its key, and its retry runs, once.
func TestKeyedMutationInDoubtOverWebSocket(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			db, dsn := openDB(t, dialect)
			s := startLive(t, db, liveConfig{dsn: dsn})
			ws := s.NewWorkspace(t, "Doubt", "DBT")
			f := dbtest.InjectFaults(t, db)
			w := openWS(t, s, ws.MemberToken)
			categories := func(name string) int {
				list := s.GraphQL(t, ws.MemberToken, `{ categories(first: 100) { nodes { name } } }`, nil)
				return strings.Count(string(list.Data), `"`+name+`"`)
			}
			send := func(id, name string) wsMsg {
				w.send(wsMsg{ID: id, Type: "subscribe", Payload: mustJSON(map[string]any{
					"query":      `mutation { createCategory(input: {name: "` + name + `"}) { id name } }`,
					"extensions": map[string]any{"idempotencyKey": name}})})
				m := w.recv()
				if m.ID != id || m.Type != "next" {
					t.Fatalf("%s: %s %s", id, m.Type, m.Payload)
				}
				if c := w.recv(); c.Type != "complete" {
					t.Fatalf("%s: %s", id, c.Type)
				}
				return m
			}

			f.LoseCommitAnswer("INSERT INTO categories")
			first := send("lost-1", "Lost answer")
			if f.Pending() != 0 || !strings.Contains(string(first.Payload), `"Lost answer"`) || strings.Contains(string(first.Payload), `"errors"`) {
				t.Fatalf("a committed mutation whose answer was lost: %s", first.Payload)
			}
			if again := send("lost-2", "Lost answer"); string(again.Payload) != string(first.Payload) {
				t.Fatalf("the retry got another answer:\n%s\n%s", first.Payload, again.Payload)
			}
			if n := categories("Lost answer"); n != 1 {
				t.Fatalf("%d categories, want 1", n)
			}

			f.DropCommit("INSERT INTO categories")
			dropped := send("dropped-1", "Dropped commit")
			if f.Pending() != 0 || errorCode(t, dropped) != "unavailable" {
				t.Fatalf("a mutation whose commit was dropped: %s", dropped.Payload)
			}
			if n := categories("Dropped commit"); n != 0 {
				t.Fatalf("%d categories after a dropped commit", n)
			}
			retried := send("dropped-2", "Dropped commit")
			if !strings.Contains(string(retried.Payload), `"Dropped commit"`) || strings.Contains(string(retried.Payload), `"errors"`) {
				t.Fatalf("the retry did not run: %s", retried.Payload)
			}
			if again := send("dropped-3", "Dropped commit"); string(again.Payload) != string(retried.Payload) {
				t.Fatalf("the second retry got another answer:\n%s\n%s", retried.Payload, again.Payload)
			}
			if n := categories("Dropped commit"); n != 1 {
				t.Fatalf("%d categories, want 1", n)
			}
		})
	}
}
