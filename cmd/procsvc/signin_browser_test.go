package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/browsertest"
	"github.com/procsvc/procsvc/internal/oidctest"
)

// TestPlaygroundSignsInInRealBrowser boots procsvc as README's "Sign in with
// your identity provider" does, with a real OpenID Provider (oidctest: the
// OP of zitadel/oidc) for the playground's Sign in button, and drives
// /playground in headless Chromium (web/e2e/signin.test.mjs): the person is
// invited by email, clicks Sign in, fills the provider's login form, comes
// back signed in, runs a query and a subscription with the provider's
// token, and signs out; no request leaves procsvc's and the provider's
// origins. Skipped without a browser, except under CI.
func TestPlaygroundSignsInInRealBrowser(t *testing.T) {
	if ok, why := browsertest.BrowserAvailable(); !ok {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the playground browser test cannot run under CI: %s (run bash .ci/browser-test.sh)", why)
		}
		t.Skipf("no browser: %s (bash .ci/browser-test.sh installs one)", why)
	}
	ada := oidctest.User{Subject: "u-ada", Username: "ada", Password: "correct horse", Email: "ada@example.com", EmailVerified: true}
	provider := oidctest.Start(t, ada)
	base, out := startServeWith(t, "serve", map[string]string{"DATABASE_URL": "sqlite://" + filepath.Join(t.TempDir(), "procsvc.db"),
		"PROCSVC_OIDC_ISSUER": provider.Issuer, "PROCSVC_OIDC_AUDIENCE": oidctest.ClientID,
		"PROCSVC_OIDC_PLAYGROUND_CLIENT_ID": oidctest.ClientID})
	m := tokenLine.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no token printed:\n%s", out.String())
	}
	shot := filepath.Join(browsertest.ScreenshotDir(t), "procsvc-playground-signin.png")
	bctx, bcancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer bcancel()
	who := browsertest.SignIn{Issuer: provider.Issuer, Username: ada.Username, Password: ada.Password, Email: ada.Email}
	if err := browsertest.RunSignInBrowserTest(bctx, base, m[1], who, shot); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", shot)
}
