package server_test

// People sign in with their identity provider, through the whole handler on
// both databases: a real OpenID Provider (internal/oidctest) is signed in to
// through its login form, and its tokens call REST and GraphQL (POST and
// GET, a read and a write) as the member the person's verified email was
// invited as; a person with no member is refused with the reason; removing
// the member takes effect on the next request though the provider's token
// is still valid; pms_ tokens work beside them.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/auth"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/oidc"
	"github.com/procsvc/procsvc/internal/oidctest"
	"github.com/procsvc/procsvc/internal/ratelimit"
	"github.com/procsvc/procsvc/internal/server"
)

// trusting is a verifier of p's tokens for its ClientID, with the clock
// skew given (0: the default).
func trusting(t *testing.T, p *oidctest.Provider, skew time.Duration) *oidc.Verifier {
	t.Helper()
	verifier, err := oidc.New(oidc.Config{Issuers: []string{p.Issuer}, Audiences: []string{oidctest.ClientID},
		ClockSkew: skew, HTTPClient: &http.Client{Timeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	return verifier
}

// request sends one request with a bearer and an optional workspace
// choice, and returns the status and the body.
func request(t *testing.T, s *apitest.Server, method, path, body, token, workspace string) (int, string) {
	t.Helper()
	header := http.Header{}
	if workspace != "" {
		header.Set(auth.WorkspaceHeader, workspace)
	}
	status, raw, _ := requestWith(t, s, method, path, body, token, header)
	return status, raw
}

// requestWith sends one request with a bearer and the headers given, and
// returns the status, the body and the response's headers.
func requestWith(t *testing.T, s *apitest.Server, method, path, body, token string, header http.Header) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for name, values := range header {
		req.Header[name] = values
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(raw), resp.Header
}

func TestPeopleSignInWithTheirIdentityProvider(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		ctx := context.Background()
		max := oidctest.User{Subject: "u-max", Username: "max", Password: "max-pw", Email: "member@sgn.example", EmailVerified: true}
		eve := oidctest.User{Subject: "u-eve", Username: "eve", Password: "eve-pw", Email: "eve@elsewhere.example", EmailVerified: true}
		p := oidctest.Start(t, max, eve)
		verifier := trusting(t, p, 0)
		s := apitest.StartWith(t, db, server.Deps{Auth: []auth.Option{auth.WithOIDC(verifier)}})
		w := s.NewWorkspace(t, "Signin", "SGN") // invites member@SGN.example as a MEMBER
		s.NewWorkspace(t, "Elsewhere", "ELS")   // Max is no member of this one

		maxTokens, err := p.SignIn(ctx, oidctest.ClientID, max.Username, max.Password)
		if err != nil {
			t.Fatal(err)
		}
		for name, token := range map[string]string{"access token": maxTokens.AccessToken, "ID token": maxTokens.IDToken} {
			// REST, as the member (without the header: Max has one workspace).
			status, body := request(t, s, http.MethodGet, "/members/"+w.MemberID, "", token, "")
			if status != http.StatusOK || !strings.Contains(body, `"member@sgn.example"`) {
				t.Fatalf("%s: GET /members/{id}: %d %s", name, status, body)
			}
			// A write, as the member (the header naming the workspace).
			status, body = request(t, s, http.MethodPost, "/projects", `{"name":"Signed in with `+name+`"}`, token, w.ID)
			if status != http.StatusOK && status != http.StatusCreated {
				t.Fatalf("%s: POST /projects: %d %s", name, status, body)
			}
			// GraphQL POST and GET: the viewer is the member.
			status, body = request(t, s, http.MethodPost, "/graphql", `{"query":"{ viewer { id role email } }"}`, token, "")
			if status != http.StatusOK || !strings.Contains(body, `"id":"`+w.MemberID+`"`) || !strings.Contains(body, `"role":"MEMBER"`) {
				t.Fatalf("%s: GraphQL POST viewer: %d %s", name, status, body)
			}
			status, body = request(t, s, http.MethodGet, "/graphql?query="+url.QueryEscape("{ viewer { id } }"), "", token, "")
			if status != http.StatusOK || !strings.Contains(body, w.MemberID) {
				t.Fatalf("%s: GraphQL GET viewer: %d %s", name, status, body)
			}
		}
		// The projects were written in the member's workspace: read back with a pms_ token.
		status, body := request(t, s, http.MethodPost, "/graphql",
			`{"query":"{ projects(first: 10) { nodes { name } } }"}`, w.MemberToken, "")
		if status != http.StatusOK || !strings.Contains(body, "Signed in with access token") || !strings.Contains(body, "Signed in with ID token") {
			t.Fatalf("the member's projects, read with a pms_ token: %d %s", status, body)
		}

		// A workspace Max is no member of, named: refused.
		if status, body := request(t, s, http.MethodGet, "/projects", "", maxTokens.AccessToken, "00000000-0000-7000-8000-000000000001"); status != http.StatusUnauthorized {
			t.Fatalf("a workspace of no member of his: %d %s", status, body)
		}

		// Eve signs in, but no member was invited with her email.
		eveTokens, err := p.SignIn(ctx, oidctest.ClientID, eve.Username, eve.Password)
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"/projects", "/graphql?query=" + url.QueryEscape("{ viewer { id } }")} {
			status, body := request(t, s, http.MethodGet, path, "", eveTokens.IDToken, "")
			if status != http.StatusUnauthorized || !strings.Contains(body, auth.NoMemberMessage) || !strings.Contains(body, `"unauthenticated"`) {
				t.Fatalf("GET %s as a person with no member: %d %s", path, status, body)
			}
		}

		// The admin removes Max's member: his next request is refused,
		// though his provider's tokens are still valid.
		status, body = request(t, s, http.MethodPost, "/graphql", `{"query":"mutation($id: ID!) { removeMember(id: $id) { id } }","variables":{"id":"`+w.MemberID+`"}}`, w.AdminToken, "")
		if status != http.StatusOK || strings.Contains(body, `"errors"`) {
			t.Fatalf("removeMember: %d %s", status, body)
		}
		for name, token := range map[string]string{"access token": maxTokens.AccessToken, "ID token": maxTokens.IDToken} {
			status, body := request(t, s, http.MethodGet, "/projects", "", token, "")
			var refusal struct {
				Code, Reason string
			}
			_ = json.Unmarshal([]byte(body), &refusal)
			if status != http.StatusBadRequest || refusal.Code != "disconnected" || refusal.Reason != "member_removed" {
				t.Fatalf("%s after the removal: %d %s", name, status, body)
			}
		}
		// pms_ tokens are unchanged: the viewer's still works.
		if status, body := request(t, s, http.MethodGet, "/projects", "", w.ViewToken, ""); status != http.StatusOK {
			t.Fatalf("a pms_ token beside them: %d %s", status, body)
		}
	})
}

// TestPersonSubscribesInEachOfTheirWorkspaces: one provider token, two
// workspaces picked by X-Procsvc-Workspace, a Server-Sent Events
// subscription in each: each hears its own workspace only, and removing
// the person's member in one ends that subscription alone (its re-checks
// are made, and shared, per workspace).
func TestPersonSubscribesInEachOfTheirWorkspaces(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			db, dsn := openDB(t, dialect)
			max := oidctest.User{Subject: "u-max", Username: "max", Password: "max-pw", Email: "member@one.example", EmailVerified: true}
			p := oidctest.Start(t, max)
			verifier := trusting(t, p, 0)
			s := startLive(t, db, liveConfig{dsn: dsn, auth: []auth.Option{auth.WithOIDC(verifier)}})
			one, two := s.NewWorkspace(t, "One", "ONE"), s.NewWorkspace(t, "Two", "TWO")
			// Max is invited to Two too, by the same email.
			r := s.GraphQL(t, two.AdminToken, `mutation { addMember(input: {name: "Max", email: "member@one.example"}) { id } }`, nil)
			var added struct {
				AddMember struct{ ID string } `json:"addMember"`
			}
			r.Decode(t, &added)
			tokens, err := p.SignIn(context.Background(), oidctest.ClientID, max.Username, max.Password)
			if err != nil {
				t.Fatal(err)
			}
			const events = `subscription { procedureEvents { kind procedure { name } } }`
			open := func(workspace string) *sseStream {
				t.Helper()
				st, status, body := postSSEWith(t, s, tokens.AccessToken, http.Header{auth.WorkspaceHeader: {workspace}}, events, nil)
				if status != http.StatusOK {
					t.Fatalf("subscription in %s: %d %s", workspace, status, body)
				}
				return st
			}
			inOne, inTwo := open(one.ID), open(two.ID)
			ready(t, s, 2)

			createProcedure(t, s, one, one.AdminToken, "Only in One", "")
			createProcedure(t, s, two, two.AdminToken, "Only in Two", "")
			if e := string(inOne.next()); !strings.Contains(e, "Only in One") {
				t.Fatalf("One's subscription heard %s", e)
			}
			if e := string(inTwo.next()); !strings.Contains(e, "Only in Two") {
				t.Fatalf("Two's subscription heard %s", e)
			}

			// Max's member of One is removed: that subscription ends; Two's goes on.
			gql(t, s, one.AdminToken, `mutation($id: ID!) { removeMember(id: $id) { id } }`, map[string]any{"id": one.MemberID})
			for e := inOne.next(); e != nil; e = inOne.next() {
				if strings.Contains(string(e), `"data"`) && !strings.Contains(string(e), `"errors"`) {
					t.Fatalf("One's subscription after the removal: %s", e)
				}
			}
			createProcedure(t, s, two, two.AdminToken, "Still in Two", "")
			if e := string(inTwo.next()); !strings.Contains(e, "Still in Two") {
				t.Fatalf("Two's subscription after One's removal heard %s", e)
			}
		})
	}
}

// TestEachPersonHasTheirOwnLimits: a provider's token has no token id, so
// limits key it by its member (viewer.Viewer.Credential). Two people of one
// workspace have a rate-limit bucket each, as two pms_ tokens do: one
// spending theirs leaves the other's whole. Keyed by the empty token id,
// every provider token of the replica would share one bucket, across
// workspaces.
func TestEachPersonHasTheirOwnLimits(t *testing.T) {
	db := dbtest.Open(t, "sqlite")
	ctx := context.Background()
	member := oidctest.User{Subject: "u-max", Username: "max", Password: "max-pw", Email: "member@lim.example", EmailVerified: true}
	admin := oidctest.User{Subject: "u-ada", Username: "ada", Password: "ada-pw", Email: "admin@lim.example", EmailVerified: true}
	p := oidctest.Start(t, member, admin)
	verifier := trusting(t, p, 0)
	const burst = 3
	limiter, err := ratelimit.New(ratelimit.Config{Limit: ratelimit.Limit{Rate: 0.001, Burst: burst}})
	if err != nil {
		t.Fatal(err)
	}
	s := apitest.StartWith(t, db, server.Deps{RateLimit: limiter, Auth: []auth.Option{auth.WithOIDC(verifier)}})
	w := s.NewWorkspace(t, "Limits", "LIM")
	tokenOf := func(u oidctest.User) string {
		tokens, err := p.SignIn(ctx, oidctest.ClientID, u.Username, u.Password)
		if err != nil {
			t.Fatal(err)
		}
		return tokens.AccessToken
	}
	maxToken, adaToken := tokenOf(member), tokenOf(admin)
	for i := range burst {
		if status, body := request(t, s, http.MethodGet, "/members/"+w.MemberID, "", maxToken, ""); status != http.StatusOK {
			t.Fatalf("Max's request %d: %d %s", i+1, status, body)
		}
	}
	if status, body := request(t, s, http.MethodGet, "/members/"+w.MemberID, "", maxToken, ""); status != http.StatusTooManyRequests {
		t.Fatalf("Max's request past the burst: %d %s, want 429", status, body)
	}
	if status, body := request(t, s, http.MethodGet, "/members/"+w.MemberID, "", adaToken, ""); status != http.StatusOK {
		t.Fatalf("Ada's first request, after Max spent his bucket: %d %s", status, body)
	}
}

// TestPersonSubscribesOverWebSocketInEachWorkspace: over a WebSocket, where
// a browser sets no header, connection_init's payload names the workspace
// beside the provider's token. A person of two workspaces opens a socket in
// each and hears each workspace alone; a socket that names none is refused
// (4403), as an HTTP request without X-Procsvc-Workspace is; removing the
// person's member in one workspace closes that socket alone.
func TestPersonSubscribesOverWebSocketInEachWorkspace(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			db, dsn := openDB(t, dialect)
			max := oidctest.User{Subject: "u-max", Username: "max", Password: "max-pw", Email: "member@one.example", EmailVerified: true}
			p := oidctest.Start(t, max)
			verifier := trusting(t, p, 0)
			s := startLive(t, db, liveConfig{dsn: dsn, auth: []auth.Option{auth.WithOIDC(verifier)}})
			one, two := s.NewWorkspace(t, "One", "ONE"), s.NewWorkspace(t, "Two", "TWO")
			gql(t, s, two.AdminToken, `mutation { addMember(input: {name: "Max", email: "member@one.example"}) { id } }`, nil)
			tokens, err := p.SignIn(context.Background(), oidctest.ClientID, max.Username, max.Password)
			if err != nil {
				t.Fatal(err)
			}
			bearer := "Bearer " + tokens.AccessToken

			nameless := connectWSWith(t, s, map[string]any{"authorization": bearer})
			if code := nameless.waitClosed(); code != 4403 || !strings.Contains(nameless.closeReason(), "unauthenticated") {
				t.Fatalf("a socket naming no workspace: closed %d %q, want 4403 unauthenticated", code, nameless.closeReason())
			}

			const events = `subscription { procedureEvents { kind procedure { name } } }`
			open := func(workspace string) *wsClient {
				t.Helper()
				w := connectWSWith(t, s, map[string]any{"authorization": bearer, "workspace": workspace})
				if m := w.recv(); m.Type != "connection_ack" {
					t.Fatalf("socket in %s: got %s %s, want connection_ack", workspace, m.Type, m.Payload)
				}
				w.subscribe("1", events, nil)
				return w
			}
			inOne, inTwo := open(one.ID), open(two.ID)
			ready(t, s, 2)
			createProcedure(t, s, one, one.AdminToken, "Only in One", "")
			createProcedure(t, s, two, two.AdminToken, "Only in Two", "")
			if e := inOne.next("1"); e.Procedure == nil || e.Procedure.Name != "Only in One" {
				t.Fatalf("One's socket heard %+v", e)
			}
			if e := inTwo.next("1"); e.Procedure == nil || e.Procedure.Name != "Only in Two" {
				t.Fatalf("Two's socket heard %+v", e)
			}

			gql(t, s, one.AdminToken, `mutation($id: ID!) { removeMember(id: $id) { id } }`, map[string]any{"id": one.MemberID})
			if code := inOne.waitClosed(); code != 4403 {
				t.Fatalf("One's socket after the removal: closed %d (%s)", code, inOne.closeReason())
			}
			createProcedure(t, s, two, two.AdminToken, "Still in Two", "")
			if e := inTwo.next("1"); e.Procedure == nil || e.Procedure.Name != "Still in Two" {
				t.Fatalf("Two's socket after One's removal heard %+v", e)
			}
		})
	}
}

// TestSubscriptionEndsWithItsProviderTokenAndResumes: a subscription opened
// with a provider's JWT is closed 4403 once the token runs out (its exp and
// the verifier's skew), having checked it once then, not in a loop; the
// person signs in again and resumes from the last version they saw, and
// hears what was written while they were away (the change log).
func TestSubscriptionEndsWithItsProviderTokenAndResumes(t *testing.T) {
	db, dsn := openDB(t, "sqlite")
	max := oidctest.User{Subject: "u-max", Username: "max", Password: "max-pw", Email: "member@exp.example", EmailVerified: true}
	p := oidctest.Start(t, max)
	const life, skew = 2 * time.Second, 500 * time.Millisecond
	verifier := trusting(t, p, skew)
	s := startLive(t, db, liveConfig{dsn: dsn, auth: []auth.Option{auth.WithOIDC(verifier)}})
	w := s.NewWorkspace(t, "Expiry", "EXP")
	p.SetTokenLife(life)
	signIn := func() string {
		tokens, err := p.SignIn(context.Background(), oidctest.ClientID, max.Username, max.Password)
		if err != nil {
			t.Fatal(err)
		}
		return tokens.IDToken // a JWT: its expiry is its own
	}
	const events = `subscription($after: Int) { procedureEvents(afterVersion: $after) { kind workspaceVersion procedure { name } } }`
	first := openWS(t, s, signIn())
	first.subscribe("1", events, nil)
	ready(t, s, 1)
	createProcedure(t, s, w, w.AdminToken, "Before expiry", "")
	seen := first.next("1")
	if seen.Procedure == nil || seen.Procedure.Name != "Before expiry" {
		t.Fatalf("heard %+v", seen)
	}
	statements := s.DB.Statements()
	if code := first.waitClosed(); code != 4403 {
		t.Fatalf("at the token's expiry the socket closed %d (%s), want 4403", code, first.closeReason())
	}
	// One check at the expiry, refused before the database; a check
	// that passed within the skew would have been repeated at once, a
	// statement each time, until the skew ran out.
	if n := s.DB.Statements() - statements; n > 5 {
		t.Fatalf("%d statements while the subscription waited for its token's expiry: its credential was checked in a loop", n)
	}
	createProcedure(t, s, w, w.AdminToken, "While away", "")

	again := openWS(t, s, signIn())
	again.subscribe("1", events, map[string]any{"after": seen.WorkspaceVersion})
	if e := again.next("1"); e.Procedure == nil || e.Procedure.Name != "While away" {
		t.Fatalf("resumed after version %d, heard %+v", seen.WorkspaceVersion, e)
	}
}

// TestProviderTokensRetryWritesWithAnIdempotencyKey: a write retried with
// its Idempotency-Key under a provider's token is answered from the first
// (Idempotent-Replayed), and written once; the key belongs to the member,
// whatever credential they present it with.
func TestProviderTokensRetryWritesWithAnIdempotencyKey(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		max := oidctest.User{Subject: "u-max", Username: "max", Password: "max-pw", Email: "member@idm.example", EmailVerified: true}
		p := oidctest.Start(t, max)
		verifier := trusting(t, p, 0)
		s := apitest.StartWith(t, db, server.Deps{Auth: []auth.Option{auth.WithOIDC(verifier)}})
		w := s.NewWorkspace(t, "Keys", "IDM")
		tokens, err := p.SignIn(context.Background(), oidctest.ClientID, max.Username, max.Password)
		if err != nil {
			t.Fatal(err)
		}
		post := func(token string) (int, string, string) {
			req, err := http.NewRequest(http.MethodPost, s.URL+"/projects", strings.NewReader(`{"name":"Once"}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Idempotency-Key", "create-once")
			resp, err := s.HTTP.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(raw), resp.Header.Get("Idempotent-Replayed")
		}
		status, first, _ := post(tokens.AccessToken)
		if status != http.StatusCreated && status != http.StatusOK {
			t.Fatalf("first: %d %s", status, first)
		}
		for name, token := range map[string]string{"the access token again": tokens.AccessToken, "the ID token": tokens.IDToken, "the member's pms_ token": w.MemberToken} {
			status, again, replayed := post(token)
			if again != first || replayed != "true" {
				t.Fatalf("retried with %s: %d %s (replayed %q), want the first answer replayed: %s", name, status, again, replayed, first)
			}
		}
		status, body := request(t, s, http.MethodGet, "/projects", "", w.MemberToken, "")
		if status != http.StatusOK || strings.Count(body, `"Once"`) != 1 {
			t.Fatalf("projects after the retries: %d %s", status, body)
		}
	})
}
