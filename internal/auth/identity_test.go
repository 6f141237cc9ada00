package auth_test

// People signing in with their identity provider's token: the link of a
// person to the members invited with their verified email, the workspace
// they pick, removal, and hostile tokens refused with no statement. The
// provider is a real one (internal/oidctest), signed in through its login
// form; both databases.

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/auth"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/oidc"
	"github.com/procsvc/procsvc/internal/oidctest"
)

var (
	ada   = oidctest.User{Subject: "u-ada", Username: "ada", Password: "ada-pw", Email: "Ada@Example.com", EmailVerified: true}
	bob   = oidctest.User{Subject: "u-bob", Username: "bob", Password: "bob-pw", Email: "bob@example.com"} // unverified
	carol = oidctest.User{Subject: "u-carol", Username: "carol", Password: "carol-pw", Email: "carol@example.com", EmailVerified: true}
)

func signIn(t *testing.T, p *oidctest.Provider, clientID string, u oidctest.User) oidctest.Tokens {
	t.Helper()
	tok, err := p.SignIn(context.Background(), clientID, u.Username, u.Password)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestPeopleSignInAsTheMembersOfTheirVerifiedEmail(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		ctx := context.Background()
		p := oidctest.Start(t, ada, bob, carol)
		verifier, err := oidc.New(oidc.Config{Issuers: []string{p.Issuer}, Audiences: []string{oidctest.ClientID, oidctest.SubjectOnlyClientID},
			HTTPClient: &http.Client{Timeout: 10 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		c := newCredentials(t, db, auth.WithOIDC(verifier))
		// Ada is invited to two workspaces, as a member and an admin
		// (her email lower-cased, as members' are).
		one, err := c.svc.AddMember(c.admin, core.MemberInput{Name: core.Some("Ada"), Email: core.Some("ada@example.com"), Role: core.Some("MEMBER")})
		if err != nil {
			t.Fatal(err)
		}
		other, err := c.svc.CreateWorkspace(ctx, core.NewWorkspace{Name: "Other", Key: "OTH", AdminName: "Ada", AdminEmail: "ada@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		// Bob is invited too, but his provider has not verified his email.
		if _, err := c.svc.AddMember(c.admin, core.MemberInput{Name: core.Some("Bob"), Email: core.Some(bob.Email)}); err != nil {
			t.Fatal(err)
		}
		w1, w2 := c.boot.Workspace.ID.String(), other.Workspace.ID.String()
		as := func(token, workspace string) (*apperr.Error, string, string, int64) {
			t.Helper()
			n := c.db.Statements()
			v, err := c.a.Authenticate(auth.WithWorkspaceChoice(ctx, workspace), "Bearer "+token)
			if err != nil {
				return apperr.From(err), "", "", c.db.Statements() - n
			}
			return nil, v.MemberID.String(), string(v.Role), c.db.Statements() - n
		}
		countMembers := func() int {
			t.Helper()
			var n int
			if err := db.SQL.QueryRowContext(ctx, "SELECT count(*) FROM members").Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}

		// A person no member was invited for is refused, and nothing is created.
		members := countMembers()
		carolTok := signIn(t, p, oidctest.ClientID, carol)
		for _, tok := range []string{carolTok.AccessToken, carolTok.IDToken} {
			if refusal, _, _, _ := as(tok, ""); refusal == nil || refusal.Code != apperr.Unauthenticated || refusal.Message != auth.NoMemberMessage {
				t.Fatalf("carol: %v, want unauthenticated %q", refusal, auth.NoMemberMessage)
			}
		}
		if n := countMembers(); n != members {
			t.Fatalf("refusing carol changed the members: %d, were %d", n, members)
		}

		// A person whose ID token carries no email, never linked: told how.
		adaSubjectOnly := signIn(t, p, oidctest.SubjectOnlyClientID, ada)
		if refusal, _, _, _ := as(adaSubjectOnly.IDToken, ""); refusal == nil || !strings.Contains(refusal.Message, "no verified email") {
			t.Fatalf("ID token without an email, before any link: %v", refusal)
		}

		// Ada's first sign-in links both her members; she is of two
		// workspaces, so she says which.
		adaTok := signIn(t, p, oidctest.ClientID, ada)
		refusal, _, _, _ := as(adaTok.AccessToken, "")
		if refusal == nil || refusal.Code != apperr.Unauthenticated || !strings.Contains(refusal.Message, auth.WorkspaceHeader) ||
			!strings.Contains(refusal.Message, w1) || !strings.Contains(refusal.Message, w2) {
			t.Fatalf("a person of two workspaces, no header: %v", refusal)
		}
		for _, tc := range []struct {
			name, token, workspace, member, role string
		}{
			{"access token (userinfo), first workspace", adaTok.AccessToken, w1, one.ID.String(), "MEMBER"},
			{"access token (userinfo), second workspace", adaTok.AccessToken, w2, other.Admin.ID.String(), "ADMIN"},
			{"ID token with the email", adaTok.IDToken, w1, one.ID.String(), "MEMBER"},
			// Linked now: an ID token with the subject only is enough.
			{"ID token with the subject only", adaSubjectOnly.IDToken, w2, other.Admin.ID.String(), "ADMIN"},
		} {
			refusal, memberID, role, statements := as(tc.token, tc.workspace)
			if refusal != nil || memberID != tc.member || role != tc.role {
				t.Errorf("%s: %v, member %s %s; want %s %s", tc.name, refusal, memberID, role, tc.member, tc.role)
			}
			// One statement once linked: the person's members.
			if statements != 1 {
				t.Errorf("%s: %d statements, want 1", tc.name, statements)
			}
		}
		if refusal, _, _, _ := as(adaTok.AccessToken, "not-an-id"); refusal == nil || !strings.Contains(refusal.Message, "not a workspace id") {
			t.Errorf("a malformed workspace id: %v", refusal)
		}

		// Hostile tokens are refused before any statement.
		b64 := base64.RawURLEncoding.EncodeToString
		now := time.Now()
		claims := func(edit func(map[string]any)) map[string]any {
			c := map[string]any{"iss": p.Issuer, "sub": ada.Subject, "aud": oidctest.ClientID, "iat": now.Unix(),
				"exp": now.Add(5 * time.Minute).Unix(), "email": "ada@example.com", "email_verified": true}
			if edit != nil {
				edit(c)
			}
			return c
		}
		bobTok := signIn(t, p, oidctest.ClientID, bob)
		for name, tok := range map[string]string{
			"alg none":            b64([]byte(`{"alg":"none"}`)) + "." + b64([]byte(`{"iss":"`+p.Issuer+`","sub":"u-ada"}`)) + ".",
			"wrong audience":      p.Sign(claims(func(c map[string]any) { c["aud"] = "another-app" })),
			"expired":             p.Sign(claims(func(c map[string]any) { c["exp"] = now.Add(-time.Hour).Unix() })),
			"not yet valid":       p.Sign(claims(func(c map[string]any) { c["nbf"] = now.Add(time.Hour).Unix() })),
			"unverified email":    bobTok.IDToken,
			"unverified (opaque)": bobTok.AccessToken,
			"huge":                strings.Repeat("x", oidc.MaxTokenBytes+1),
			"unknown opaque":      "opaque-nobody-issued",
		} {
			refusal, _, _, statements := as(tok, "")
			if refusal == nil || refusal.Code != apperr.Unauthenticated || statements != 0 {
				t.Errorf("%s: %v after %d statements, want unauthenticated after none", name, refusal, statements)
			}
		}

		// Without WithOIDC, a provider's token is a malformed header, as
		// before the identity providers.
		if _, err := auth.New(db).Authenticate(ctx, "Bearer "+adaTok.IDToken); err == nil ||
			!strings.Contains(err.Error(), "malformed Authorization header") {
			t.Errorf("a provider token with no issuer configured: %v", err)
		}

		// pms_ tokens work as before beside them.
		if code, _ := c.authenticate(t, ctx, c.token(t)); code != "" {
			t.Fatalf("a pms_ token with OIDC on: %s", code)
		}

		// Removal takes effect on the next request, though the provider's
		// token is still valid: Ada's one workspace left is the default.
		if _, err := c.svc.RemoveMember(c.admin, one.ID.String()); err != nil {
			t.Fatal(err)
		}
		if refusal, _, _, _ := as(adaTok.AccessToken, w1); refusal == nil || refusal.Reason != apperr.MemberRemoved {
			t.Errorf("removed from the workspace she picks: %v, want member_removed", refusal)
		}
		if refusal, memberID, _, _ := as(adaTok.IDToken, ""); refusal != nil || memberID != other.Admin.ID.String() {
			t.Errorf("one workspace left, no header: %v, member %s, want %s", refusal, memberID, other.Admin.ID)
		}
	})
}
