package oidctest_test

import (
	"context"
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
