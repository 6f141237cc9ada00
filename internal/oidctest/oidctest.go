// Package oidctest starts a real OpenID Provider for tests: the OP of
// github.com/zitadel/oidc/v3 (an OpenID-certified library) served by
// httptest on 127.0.0.1, over an in-memory storage whose users are Go
// values, with public clients that use the authorization-code flow with
// PKCE. SignIn drives that flow through the provider's login form the way a
// browser would (cookie jar, form POST) and returns the provider's tokens.
//
// It is for tests only: .ci/run checks that cmd/procsvc does not depend on it.
package oidctest

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/oauth2"
	"golang.org/x/text/language"
)

// User is a person the provider knows.
type User struct {
	Subject, Username, Password, Email string
	EmailVerified                      bool
}

// Client ids of the provider's public clients, both redirecting to RedirectURI.
const (
	// ClientID's ID tokens carry the user's email claims. It also
	// redirects to PlaygroundRedirectURIs: procsvc's playground served on
	// a test's loopback port.
	ClientID = "procsvc-playground"
	// SubjectOnlyClientID's ID tokens carry the subject only (as
	// ZITADEL's): the email is known through the userinfo endpoint.
	SubjectOnlyClientID = "procsvc-subject-only"
	// RedirectURI is never served: SignIn stops at the redirect to it.
	RedirectURI = "http://127.0.0.1/callback"
)

// PlaygroundRedirectURIs are the redirect URIs ClientID accepts besides
// RedirectURI, as globs: /playground on any port of loopback, where a test
// serves procsvc's playground (its Sign in button redirects back there).
var PlaygroundRedirectURIs = []string{"http://127.0.0.1:*/playground", "http://localhost:*/playground"}

// Provider is a running OpenID Provider.
type Provider struct {
	Issuer  string
	server  *httptest.Server
	storage *storage
}

// Tokens are what the token endpoint answered.
type Tokens struct {
	IDToken string
	// AccessToken is opaque (not a JWT): procsvc resolves it through the
	// userinfo endpoint.
	AccessToken string
	Expiry      time.Time
}

var loginForm = template.Must(template.New("login").Parse(`<!doctype html>
<title>Sign in</title>
<form method="POST" action="/login">
<input type="hidden" name="id" value="{{.ID}}">
<label>Username <input name="username"></label>
<label>Password <input name="password" type="password"></label>
{{if .Error}}<p class="error">{{.Error}}</p>{{end}}
<button type="submit">Sign in</button>
</form>`))

// Start starts a provider that knows users; it stops when the test ends.
func Start(t testing.TB, users ...User) *Provider {
	t.Helper()
	st, err := newStorage(users,
		&client{id: ClientID, redirectURI: RedirectURI, claimsInIDToken: true, redirectGlobs: PlaygroundRedirectURIs},
		&client{id: SubjectOnlyClientID, redirectURI: RedirectURI})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	issuer := "http://" + srv.Listener.Addr().String()
	config := &op.Config{
		CryptoKey:          sha256.Sum256([]byte("oidctest opaque access tokens")),
		CodeMethodS256:     true,
		SupportedUILocales: []language.Tag{language.English},
	}
	provider, err := op.NewProvider(config, st, op.StaticIssuer(issuer), op.WithAllowInsecure())
	if err != nil {
		t.Fatal(err)
	}
	callback := op.AuthCallbackURL(provider)
	login := op.NewIssuerInterceptor(provider.IssuerFromRequest).HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if r.Method == http.MethodGet {
			_ = loginForm.Execute(w, map[string]string{"ID": r.FormValue("authRequestID")})
			return
		}
		id := r.FormValue("id")
		if err := st.checkPassword(r.FormValue("username"), r.FormValue("password"), id); err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			_ = loginForm.Execute(w, map[string]string{"ID": id, "Error": err.Error()})
			return
		}
		http.Redirect(w, r, callback(r.Context(), id), http.StatusFound)
	})
	mux := http.NewServeMux()
	mux.Handle("/login", login)
	mux.Handle("/", provider)
	srv.Config.Handler = mux
	srv.Start()
	t.Cleanup(srv.Close)
	return &Provider{Issuer: issuer, server: srv, storage: st}
}

// SignIn signs username in as a browser would, for clientID: the
// authorization request with a PKCE challenge, the provider's login form
// (GET, then POST with the hidden request id and the credentials), the
// redirects back to RedirectURI with a code, and the code's exchange with
// the PKCE verifier at the token endpoint.
func (p *Provider) SignIn(ctx context.Context, clientID, username, password string) (Tokens, error) {
	discovered, err := gooidc.NewProvider(ctx, p.Issuer)
	if err != nil {
		return Tokens{}, err
	}
	conf := oauth2.Config{ClientID: clientID, Endpoint: discovered.Endpoint(), RedirectURL: RedirectURI,
		Scopes: []string{gooidc.ScopeOpenID, "email", "profile"}}
	verifier, state := oauth2.GenerateVerifier(), oauth2.GenerateVerifier()
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(r *http.Request, _ []*http.Request) error {
			if strings.HasPrefix(r.URL.String(), RedirectURI) {
				return http.ErrUseLastResponse // the app's page: the browser would leave the provider here
			}
			return nil
		}}
	resp, err := browser.Get(conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier)))
	if err != nil {
		return Tokens{}, err
	}
	page, err := readPage(resp, http.StatusOK)
	if err != nil {
		return Tokens{}, fmt.Errorf("login page: %w", err)
	}
	m := regexp.MustCompile(`name="id" value="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		return Tokens{}, fmt.Errorf("login page without a request id: %s", page)
	}
	loginURL := resp.Request.URL.ResolveReference(&url.URL{Path: "/login"})
	resp, err = browser.PostForm(loginURL.String(), url.Values{"id": {m[1]}, "username": {username}, "password": {password}})
	if err != nil {
		return Tokens{}, err
	}
	if _, err := readPage(resp, http.StatusFound); err != nil {
		return Tokens{}, fmt.Errorf("login form: %w", err)
	}
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		return Tokens{}, err
	}
	if back.Query().Get("state") != state || back.Query().Get("code") == "" {
		return Tokens{}, fmt.Errorf("redirect back without the state or a code: %s", back)
	}
	tok, err := conf.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		return Tokens{}, err
	}
	idToken, _ := tok.Extra("id_token").(string)
	if idToken == "" {
		return Tokens{}, fmt.Errorf("token response without an id_token")
	}
	return Tokens{IDToken: idToken, AccessToken: tok.AccessToken, Expiry: tok.Expiry}, nil
}

func readPage(resp *http.Response, want int) (string, error) {
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != want {
		return "", fmt.Errorf("status %d, want %d: %s", resp.StatusCode, want, body)
	}
	return string(body), nil
}

// SetTokenLife sets the life of the tokens the provider issues from now on,
// access and ID tokens (five minutes until then): tests of what happens
// when a token runs out.
func (p *Provider) SetTokenLife(d time.Duration) { p.storage.tokenLife.Store(int64(d)) }

// Sign signs claims with the provider's own signing key (RS256, its key
// id), for tokens the provider would never issue (expired, another
// audience, not yet valid ...): the hostile cases.
func (p *Provider) Sign(claims map[string]any) string {
	return SignWith(jose.RS256, p.storage.key.key, p.storage.key.id, claims)
}

// PublicJWK is the provider's public key as the JWKS serves it
// (its JSON): the secret of an HS256 key-confusion attack.
func (p *Provider) PublicJWK() []byte {
	b, err := json.Marshal(jose.JSONWebKey{Key: &p.storage.key.key.PublicKey, KeyID: p.storage.key.id,
		Algorithm: string(jose.RS256), Use: "sig"})
	if err != nil {
		panic(err)
	}
	return b
}

// SignWith signs claims with any key and algorithm (a foreign issuer's,
// HS256 with a public key ...). kid may be empty.
func SignWith(alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any) string {
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		panic(err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		panic(err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		panic(err)
	}
	s, err := jws.CompactSerialize()
	if err != nil {
		panic(err)
	}
	return s
}

// KeysFetched counts the requests of the provider's JWKS (its keys endpoint).
func (p *Provider) KeysFetched() int64 { return p.storage.keysFetched.Load() }
