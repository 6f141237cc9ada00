package oidctest_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/procsvc/procsvc/internal/oidctest"
)

func TestSignInThroughTheLoginForm(t *testing.T) {
	ctx := context.Background()
	p := oidctest.Start(t, oidctest.User{Subject: "u-ada", Username: "ada", Password: "pw", Email: "ada@example.com", EmailVerified: true})
	if _, err := p.SignIn(ctx, oidctest.ClientID, "ada", "wrong"); err == nil || !strings.Contains(err.Error(), "username or password wrong") {
		t.Fatalf("wrong password: %v", err)
	}
	for _, clientID := range []string{oidctest.ClientID, oidctest.SubjectOnlyClientID} {
		tok, err := p.SignIn(ctx, clientID, "ada", "pw")
		if err != nil {
			t.Fatal(err)
		}
		provider, err := gooidc.NewProvider(ctx, p.Issuer)
		if err != nil {
			t.Fatal(err)
		}
		id, err := provider.Verifier(&gooidc.Config{ClientID: clientID}).Verify(ctx, tok.IDToken)
		if err != nil {
			t.Fatal(err)
		}
		var claims struct {
			Email string `json:"email"`
		}
		if err := id.Claims(&claims); err != nil {
			t.Fatal(err)
		}
		if wantEmail := map[string]string{oidctest.ClientID: "ada@example.com"}[clientID]; id.Subject != "u-ada" || claims.Email != wantEmail {
			t.Errorf("%s: ID token of %q <%s>", clientID, id.Subject, claims.Email)
		}
		if strings.Count(tok.AccessToken, ".") == 2 {
			t.Errorf("access token is a JWT, want opaque: %s", tok.AccessToken)
		}
		info, err := provider.UserInfo(ctx, oauth2.StaticTokenSource(&oauth2.Token{AccessToken: tok.AccessToken}))
		if err != nil {
			t.Fatal(err)
		}
		if info.Subject != "u-ada" || info.Email != "ada@example.com" || !info.EmailVerified {
			t.Errorf("userinfo %+v", info)
		}
	}
}

// TestPlaygroundRedirects: ClientID accepts procsvc's playground on any
// loopback port as its redirect URI (the authorization request goes on to
// the login form), and no other page, on loopback or not.
func TestPlaygroundRedirects(t *testing.T) {
	p := oidctest.Start(t)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for redirect, ok := range map[string]bool{
		"http://127.0.0.1:41234/playground":     true,
		"http://localhost:8080/playground":      true,
		"http://127.0.0.1:41234/elsewhere":      false,
		"http://127.0.0.1:41234/playground/x":   false,
		"https://evil.example.com/playground":   false,
		"http://evil.example.com:80/playground": false,
	} {
		q := url.Values{"client_id": {oidctest.ClientID}, "response_type": {"code"}, "scope": {"openid email"},
			"redirect_uri": {redirect}, "state": {"s"}, "code_challenge": {strings.Repeat("a", 43)}, "code_challenge_method": {"S256"}}
		resp, err := noFollow.Get(p.Issuer + "/authorize?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		toLogin := resp.StatusCode == http.StatusFound && strings.HasPrefix(resp.Header.Get("Location"), "/login?")
		if toLogin != ok {
			t.Errorf("%s: status %d, Location %q, want the login form: %v\n%s", redirect, resp.StatusCode, resp.Header.Get("Location"), ok, body)
		}
	}
}
