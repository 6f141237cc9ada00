package server_test

// An admin unlinks a member from the person signed in as it, through the
// whole handler with the real provider, on both databases: the person's
// open subscriptions end as at a removal (the WebSocket closed 4403, the
// event stream ended with the refusal), and their next REST and GraphQL
// requests are refused with the reason, though their provider's tokens are
// still valid.

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/graph/live"
	"github.com/procsvc/procsvc/internal/auth"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/oidctest"
)

func TestUnlinkingEndsThePersonsSubscriptionsAndRequests(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			db, dsn := openDB(t, dialect)
			max := oidctest.User{Subject: "u-max", Username: "max", Password: "max-pw", Email: "member@unl.example", EmailVerified: true}
			p := oidctest.Start(t, max)
			s := startLive(t, db, liveConfig{dsn: dsn, auth: []auth.Option{auth.WithOIDC(trusting(t, p, 0))}})
			w := s.NewWorkspace(t, "Unlink", "UNL") // invites member@unl.example as a MEMBER
			tokens, err := p.SignIn(context.Background(), oidctest.ClientID, max.Username, max.Password)
			if err != nil {
				t.Fatal(err)
			}
			const events = `subscription { procedureEvents { kind procedure { name } } }`
			socket := openWS(t, s, tokens.AccessToken)
			socket.subscribe("1", events, nil)
			stream, status, body := postSSEWith(t, s, tokens.IDToken, nil, events, nil)
			if status != http.StatusOK {
				t.Fatalf("event stream: %d %s", status, body)
			}
			ready(t, s, 2)
			createProcedure(t, s, w, w.AdminToken, "Before", "")
			if e := socket.next("1"); e.Procedure == nil || e.Procedure.Name != "Before" {
				t.Fatalf("the socket heard %+v", e)
			}
			if e := string(stream.next()); !strings.Contains(e, "Before") {
				t.Fatalf("the stream heard %s", e)
			}

			// The admin's unlink, retried with its Idempotency-Key: the
			// retry is answered from the first, and one unlink is logged.
			unlink := func(key string) (string, string) {
				t.Helper()
				status, body, header := requestWith(t, s.Server, http.MethodPost, "/graphql",
					`{"query":"mutation($id: ID!) { unlinkMember(id: $id) { id } }","variables":{"id":"`+w.MemberID+`"}}`,
					w.AdminToken, http.Header{"Idempotency-Key": {key}})
				if status != http.StatusOK || !strings.Contains(body, `"unlinkMember":{"id":"`+w.MemberID+`"}`) {
					t.Fatalf("unlinkMember: %d %s", status, body)
				}
				return body, header.Get("Idempotent-Replayed")
			}
			first, _ := unlink("unlink-max")

			// Closed as at a removal (live.CloseForbidden), the reason the
			// refusal's: the person is no member any more.
			if code := socket.waitClosed(); code != live.CloseForbidden || socket.closeReason() != "Forbidden: unauthenticated" {
				t.Fatalf("the socket after the unlink: closed %d %q, want %d", code, socket.closeReason(), live.CloseForbidden)
			}
			var last []byte
			for e := stream.next(); e != nil; e = stream.next() {
				if strings.Contains(string(e), `"data"`) && !strings.Contains(string(e), `"errors"`) {
					t.Fatalf("the stream after the unlink: %s", e)
				}
				last = e
			}
			if !strings.Contains(string(last), "unauthenticated") {
				t.Fatalf("the stream's last event: %s", last)
			}

			for name, token := range map[string]string{"access token": tokens.AccessToken, "ID token": tokens.IDToken} {
				for _, req := range []struct{ method, path, body string }{
					{http.MethodGet, "/projects", ""},
					{http.MethodPost, "/graphql", `{"query":"{ viewer { id } }"}`},
					{http.MethodGet, "/graphql?query=" + url.QueryEscape("{ viewer { id } }"), ""},
				} {
					status, body := request(t, s.Server, req.method, req.path, req.body, token, "")
					if status != http.StatusUnauthorized || !strings.Contains(body, `"unauthenticated"`) || !strings.Contains(body, auth.UnlinkedMessage) {
						t.Fatalf("%s: %s %s after the unlink: %d %s", name, req.method, req.path, status, body)
					}
				}
			}
			if again, replayed := unlink("unlink-max"); again != first || replayed != "true" {
				t.Fatalf("the unlink retried: %s (replayed %q), want %s replayed", again, replayed, first)
			}
			// Unlinked already: answered with the member (unlink checks
			// it), nothing written, so no workspaceVersion extension; its
			// own key's retry is answered from it.
			noop, replayed := unlink("unlink-max-again")
			if replayed != "" || strings.Contains(noop, "workspaceVersion") {
				t.Fatalf("the member unlinked already: %s (replayed %q), want no write", noop, replayed)
			}
			if again, replayed := unlink("unlink-max-again"); again != noop || replayed != "true" {
				t.Fatalf("the member unlinked already, retried: %s (replayed %q), want %s replayed", again, replayed, noop)
			}
			if status, body := request(t, s.Server, http.MethodGet, "/events?kind=member.unlinked", "", w.AdminToken, ""); status != http.StatusOK ||
				strings.Count(body, `"member.unlinked"`) != 1 {
				t.Fatalf("the unlinks logged: %d %s, want one", status, body)
			}
			// The member stays, and its pms_ token works.
			if status, body := request(t, s.Server, http.MethodGet, "/members/"+w.MemberID, "", w.MemberToken, ""); status != http.StatusOK {
				t.Fatalf("the member's pms_ token after the unlink: %d %s", status, body)
			}
		})
	}
}
