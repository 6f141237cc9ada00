package server_test

// What a refused credential costs, through the whole handler on both
// faces: a secret whose checksum fails costs no SQL; a client address past
// its burst of failed authentications is refused 429 rate_limited with
// Retry-After before any lookup, on REST, GraphQL and WebSockets alike; the
// client-IP header counts only when configured, and then only its
// right-most entry. The limiter's clock is the test's.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/procsvc/procsvc/graph/live"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/auth"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/server"
)

// credentialServer serves db's full handler with limit on failed
// authentications per client address, read from header when set.
func credentialServer(t *testing.T, db *database.DB, clk *testClock, limit auth.FailureLimit, header string) *apitest.Server {
	t.Helper()
	svc := core.New(db.Client)
	ts := httptest.NewServer(server.NewHandler(server.Deps{DB: db, Service: svc, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		ResponseCacheBytes: 16 << 20, Auth: []auth.Option{auth.WithFailureLimit(limit), auth.WithClock(clk.Now)}, ClientIPHeader: header}))
	t.Cleanup(ts.Close)
	return &apitest.Server{URL: ts.URL, DB: db, Service: svc, HTTP: ts.Client()}
}

// call sends one request with secret on REST (GET /projects) or GraphQL,
// with forwarded as X-Forwarded-For lines, and returns the status, the
// error code of either face's shape ("" for none), and the headers.
func call(t *testing.T, s *apitest.Server, graphQL bool, secret string, forwarded ...string) (int, string, http.Header) {
	t.Helper()
	var req *http.Request
	if graphQL {
		req, _ = http.NewRequest(http.MethodPost, s.URL+"/graphql", strings.NewReader(`{"query":"{ viewer { id } }"}`))
		req.Header.Set("Content-Type", "application/json")
	} else {
		req, _ = http.NewRequest(http.MethodGet, s.URL+"/projects", nil)
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	for _, f := range forwarded {
		req.Header.Add("X-Forwarded-For", f)
	}
	resp, err := s.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var body struct {
		Code   string             `json:"code"`
		Errors []apitest.GQLError `json:"errors"`
		Data   json.RawMessage    `json:"data"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("%d %s", resp.StatusCode, raw)
	}
	code := body.Code
	if graphQL && len(body.Errors) > 0 {
		code = body.Errors[0].Extensions.Code
		if body.Data != nil || body.Errors[0].Extensions.RequestID == "" {
			t.Fatalf("a refused GraphQL request: %s, want errors with a request id and no data", raw)
		}
	}
	return resp.StatusCode, code, resp.Header
}

// unknownSecret returns a secret of an older release's format (no
// checksum) that no token has: only a lookup tells.
func unknownSecret() string {
	s, _ := auth.NewSecret()
	return s[:auth.SecretLen-6]
}

// forgedSecret returns a secret of the checksummed format whose checksum
// fails.
func forgedSecret() string {
	for {
		s, _ := auth.NewSecret()
		if s = s[:auth.SecretLen-6] + "zzzzzz"; auth.BadChecksum(s) {
			return s
		}
	}
}

// initWebSocket opens a graphql-transport-ws socket, sends
// connection_init with secret, and returns the close error the server
// ends it with (nil if it acknowledged).
func initWebSocket(t *testing.T, s *apitest.Server, secret string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a hang fails, below
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.URL, "http")+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if err := wsjson.Write(ctx, c, map[string]any{"type": "connection_init", "payload": map[string]any{"authorization": "Bearer " + secret}}); err != nil {
		t.Fatal(err)
	}
	var m struct{ Type string }
	err = wsjson.Read(ctx, c, &m)
	switch {
	case err == nil && m.Type == "connection_ack":
		return nil
	case websocket.CloseStatus(err) == -1:
		t.Fatalf("connection_init answered %q, %v; want an acknowledgement or a close", m.Type, err)
	}
	return err
}

// TestFailedAuthenticationsLimitedPerAddress: past its burst of failed
// authentications, an address is refused 429 rate_limited with Retry-After
// on REST and GraphQL (each in its own error shape) and at a WebSocket's
// connection_init, valid token or not, without a lookup; X-Forwarded-For
// is not read when no header is configured; the bucket refills.
func TestFailedAuthenticationsLimitedPerAddress(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		clk := newClock()
		s := credentialServer(t, db, clk, auth.FailureLimit{Rate: 0.25, Burst: 100}, "")
		w := s.NewWorkspace(t, "Credentials", "CRD")
		for i := range 100 {
			// Each claims another address: not read, as no header is
			// configured.
			status, code, _ := call(t, s, i%2 == 0, unknownSecret(), fmt.Sprintf("203.0.113.%d", i))
			if status != http.StatusUnauthorized || code != "unauthenticated" {
				t.Fatalf("failure %d: %d %q, want 401 unauthenticated", i+1, status, code)
			}
		}
		n := db.Statements()
		for _, graphQL := range []bool{false, true} {
			for _, secret := range []string{unknownSecret(), forgedSecret(), w.AdminToken} {
				status, code, h := call(t, s, graphQL, secret)
				if status != http.StatusTooManyRequests || code != "rate_limited" || h.Get("Retry-After") != "4" {
					t.Fatalf("GraphQL %v, past the burst: %d %q Retry-After %q; want 429 rate_limited, Retry-After 4 (one failure at 0.25 a second)", graphQL, status, code, h.Get("Retry-After"))
				}
			}
		}
		var ce websocket.CloseError
		if err := initWebSocket(t, s, w.AdminToken); !errors.As(err, &ce) || ce.Code != live.CloseTooManyRequests || !strings.Contains(ce.Reason, "rate_limited") {
			t.Fatalf("WebSocket past the burst: %v, want a close with %d naming rate_limited", err, live.CloseTooManyRequests)
		}
		if got := db.Statements() - n; got != 0 {
			t.Fatalf("refusals past the burst cost %d statements, want 0", got)
		}
		clk.Advance(20 * time.Second)
		if status, code, _ := call(t, s, true, w.AdminToken); status != http.StatusOK || code != "" {
			t.Fatalf("after the bucket refilled: %d %q", status, code)
		}
		if err := initWebSocket(t, s, w.AdminToken); err != nil {
			t.Fatalf("WebSocket after the bucket refilled: %v", err)
		}
	})
}

// TestClientIPHeader: with --client-ip-header X-Forwarded-For, failures
// count against the right-most entry of the header's last line (what the
// proxy appended); the entries left of it are the client's own and are
// ignored; a request without the header counts against its connection's
// address.
func TestClientIPHeader(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := credentialServer(t, db, newClock(), auth.FailureLimit{Rate: 5, Burst: 3}, "X-Forwarded-For")
		w := s.NewWorkspace(t, "Credentials", "CRD")
		for i, forwarded := range [][]string{{"198.51.100.1, 203.0.113.9"}, {"10.0.0.1,203.0.113.9"}, {"192.0.2.1", "203.0.113.9"}} {
			if status, _, _ := call(t, s, i == 1, unknownSecret(), forwarded...); status != http.StatusUnauthorized {
				t.Fatalf("failure %d: %d, want 401", i+1, status)
			}
		}
		for _, tc := range []struct {
			forwarded []string
			want      int
		}{
			{[]string{"203.0.113.9"}, http.StatusTooManyRequests},
			{[]string{"[::ffff:203.0.113.9]:4711"}, http.StatusTooManyRequests},
			{[]string{"203.0.113.9, 203.0.113.10"}, http.StatusOK},
			{[]string{"203.0.113.9", "203.0.113.11"}, http.StatusOK},
			{nil, http.StatusOK}, // the connection's address
			{[]string{"not an address"}, http.StatusOK},
		} {
			if status, _, _ := call(t, s, false, w.AdminToken, tc.forwarded...); status != tc.want {
				t.Fatalf("X-Forwarded-For %q: %d, want %d", tc.forwarded, status, tc.want)
			}
		}
	})
}

// TestForgedSecretsCostNoStatements: secrets of the checksummed format
// whose checksum fails are refused 401 on both faces without one SQL
// statement.
func TestForgedSecretsCostNoStatements(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := credentialServer(t, db, newClock(), auth.FailureLimit{}, "")
		n := db.Statements()
		for i := range 1000 {
			if status, code, _ := call(t, s, i%2 == 1, forgedSecret()); status != http.StatusUnauthorized || code != "unauthenticated" {
				t.Fatalf("forged secret %d: %d %q", i+1, status, code)
			}
		}
		if got := db.Statements() - n; got != 0 {
			t.Fatalf("1000 forged secrets cost %d statements, want 0", got)
		}
	})
}

// TestRevokedWebSocketEndsFromASpentAddress: a WebSocket opened before its
// address spent its failures re-checks its token on every operation; once
// the token is revoked, the next operation is refused and the socket
// closed, never answered rate_limited (which would leave it running on the
// revoked token).
func TestRevokedWebSocketEndsFromASpentAddress(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := credentialServer(t, db, newClock(), auth.FailureLimit{Rate: 5, Burst: 3}, "")
		w := s.NewWorkspace(t, "Credentials", "CRD")
		admin, err := s.Service.ActAsAdmin(context.Background(), w.ID)
		if err != nil {
			t.Fatal(err)
		}
		tok, secret, err := s.Service.CreateToken(admin, core.TokenInput{Name: "socket"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a hang fails, below
		defer cancel()
		c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.URL, "http")+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		type msg struct {
			ID      string          `json:"id,omitempty"`
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload,omitempty"`
		}
		send := func(m msg) {
			if err := wsjson.Write(ctx, c, m); err != nil {
				t.Fatal(err)
			}
		}
		send(msg{Type: "connection_init", Payload: json.RawMessage(`{"authorization":"Bearer ` + secret + `"}`)})
		var m msg
		if err := wsjson.Read(ctx, c, &m); err != nil || m.Type != "connection_ack" {
			t.Fatalf("connection_init: %s %v", m.Type, err)
		}
		for range 3 {
			call(t, s, false, unknownSecret())
		}
		if status, _, _ := call(t, s, false, w.AdminToken); status != http.StatusTooManyRequests {
			t.Fatalf("the address is not spent: %d", status)
		}
		if _, err := s.Service.RevokeToken(admin, tok.ID.String()); err != nil {
			t.Fatal(err)
		}
		send(msg{ID: "1", Type: "subscribe", Payload: json.RawMessage(`{"query":"{ viewer { id } }"}`)})
		for {
			var m msg
			err := wsjson.Read(ctx, c, &m)
			if err != nil {
				if websocket.CloseStatus(err) == -1 {
					t.Fatalf("the socket ended without a close: %v", err)
				}
				return // closed by the server
			}
			if strings.Contains(string(m.Payload), `"viewer"`) || strings.Contains(string(m.Payload), "rate_limited") {
				t.Fatalf("an operation on a revoked token was answered: %s %s", m.Type, m.Payload)
			}
		}
	})
}
