package playground

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestSignInPolicyAndPage: with an identity provider configured, every
// response's connect-src gains the issuer's origin (and nothing else: no
// other directive changes, no path, no other origin), and the page names
// the issuer and client id in its meta tags, HTML-escaped. Without one, the
// meta tags are empty (no Sign in button) and the policy is TestPage's.
func TestSignInPolicyAndPage(t *testing.T) {
	plain := httptest.NewServer(Handler())
	defer plain.Close()
	plainResp, plainBody := get(t, plain, http.MethodGet, "/playground", nil)
	if !strings.Contains(string(plainBody), `<meta name="procsvc-oidc-issuer" content="" />`) ||
		!strings.Contains(string(plainBody), `<meta name="procsvc-oidc-client-id" content="" />`) {
		t.Fatalf("page without sign-in does not carry empty sign-in meta tags:\n%s", plainBody)
	}

	h, err := NewHandler(SignIn{Issuer: "https://IdP.example.com:8443/realms/main", ClientID: `play"ground<`})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	nonce := regexp.MustCompile(`'nonce-[^']+'`)
	for _, path := range []string{"/playground", "/playground/licenses.txt", "/playground/missing"} {
		resp, body := get(t, srv, http.MethodGet, path, nil)
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "connect-src 'self' https://idp.example.com:8443; ") {
			t.Errorf("%s: CSP %q does not add exactly the issuer's origin to connect-src", path, csp)
		}
		// The policy is the one without sign-in but for that origin.
		want := plainResp.Header.Get("Content-Security-Policy")
		if path != "/playground" {
			want = contentSecurityPolicy("", "")
		}
		if got := strings.Replace(csp, " https://idp.example.com:8443", "", 1); nonce.ReplaceAllString(got, "N") != nonce.ReplaceAllString(want, "N") {
			t.Errorf("%s: CSP %q differs from the one without sign-in (%q) beyond the issuer's origin", path, csp, want)
		}
		if path == "/playground" {
			for _, meta := range []string{
				`<meta name="procsvc-oidc-issuer" content="https://IdP.example.com:8443/realms/main" />`,
				`<meta name="procsvc-oidc-client-id" content="play&#34;ground&lt;" />`,
			} {
				if !strings.Contains(string(body), meta) {
					t.Errorf("page lacks %s:\n%s", meta, body)
				}
			}
		}
	}
}

// TestSignInRefusesBadConfig: an issuer without a client id or the
// reverse, and an issuer the policy cannot name, are refused with a reason.
func TestSignInRefusesBadConfig(t *testing.T) {
	for _, c := range []struct {
		in   SignIn
		want string
	}{
		{SignIn{Issuer: "https://idp.example.com"}, "both an issuer and a client id"},
		{SignIn{ClientID: "x"}, "both an issuer and a client id"},
		{SignIn{Issuer: "idp.example.com", ClientID: "x"}, "not an absolute http(s) URL"},
		{SignIn{Issuer: "ftp://idp.example.com", ClientID: "x"}, "not an absolute http(s) URL"},
		{SignIn{Issuer: "https://user@idp.example.com", ClientID: "x"}, "not an absolute http(s) URL"},
		{SignIn{Issuer: "https://idp.example.com;script-src:80", ClientID: "x"}, ""},
		{SignIn{Issuer: "https://a,b.example.com", ClientID: "x"}, "cannot name"},
	} {
		_, err := NewHandler(c.in)
		if err == nil {
			t.Errorf("%+v: accepted", c.in)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.in, err, c.want)
		}
	}
}
