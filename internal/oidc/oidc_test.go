package oidc_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/oidc"
	"github.com/procsvc/procsvc/internal/oidctest"
)

var (
	ada = oidctest.User{Subject: "u-ada", Username: "ada", Password: "ada-pw", Email: "ada@example.com", EmailVerified: true}
	bob = oidctest.User{Subject: "u-bob", Username: "bob", Password: "bob-pw", Email: "bob@example.com"} // unverified
)

// clock is a test's time, moved by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// countingTransport counts the requests to each path of the provider.
type countingTransport struct {
	mu    sync.Mutex
	paths map[string]int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.paths[r.URL.Path]++
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func (c *countingTransport) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.paths {
		n += v
	}
	return n
}

func (c *countingTransport) count(path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paths[path]
}

type fixture struct {
	p       *oidctest.Provider
	v       *oidc.Verifier
	clock   *clock
	network *countingTransport
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{p: oidctest.Start(t, ada, bob), clock: &clock{now: time.Now()}, network: &countingTransport{paths: map[string]int{}}}
	v, err := oidc.New(oidc.Config{Issuers: []string{f.p.Issuer}, Audiences: []string{oidctest.ClientID, oidctest.SubjectOnlyClientID},
		HTTPClient: &http.Client{Transport: f.network, Timeout: 10 * time.Second}, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	f.v = v
	return f
}

func (f *fixture) claims(edit func(map[string]any)) map[string]any {
	now := f.clock.Now()
	c := map[string]any{"iss": f.p.Issuer, "sub": ada.Subject, "aud": oidctest.ClientID, "iat": now.Unix(),
		"exp": now.Add(5 * time.Minute).Unix(), "email": ada.Email, "email_verified": true}
	if edit != nil {
		edit(c)
	}
	return c
}

func TestProviderTokensGiveTheIdentity(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	full, err := f.p.SignIn(ctx, oidctest.ClientID, ada.Username, ada.Password)
	if err != nil {
		t.Fatal(err)
	}
	subjectOnly, err := f.p.SignIn(ctx, oidctest.SubjectOnlyClientID, ada.Username, ada.Password)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, token, email string
	}{
		{"ID token with the email", full.IDToken, ada.Email},
		{"ID token with the subject only", subjectOnly.IDToken, ""},
		{"opaque access token, through userinfo", full.AccessToken, ada.Email},
		{"a token the provider's key signed, expired within the skew", f.p.Sign(f.claims(func(c map[string]any) {
			c["exp"] = f.clock.Now().Add(-oidc.DefaultClockSkew / 2).Unix()
		})), ada.Email},
		{"email_verified as a string", f.p.Sign(f.claims(func(c map[string]any) { c["email_verified"] = "true" })), ada.Email},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := f.v.Verify(ctx, tc.token)
			if err != nil {
				t.Fatal(err)
			}
			if id.Issuer != f.p.Issuer || id.Subject != ada.Subject || id.Email != tc.email || id.Expires.IsZero() {
				t.Errorf("identity %+v, want %s %s <%s>", id, f.p.Issuer, ada.Subject, tc.email)
			}
		})
	}
	// The opaque token's answer is cached: asked again, no request.
	before := f.network.count("/userinfo")
	if _, err := f.v.Verify(ctx, full.AccessToken); err != nil {
		t.Fatal(err)
	}
	if after := f.network.count("/userinfo"); after != before {
		t.Errorf("cached userinfo asked again: %d requests, was %d", after, before)
	}
	// Past the TTL it is asked again.
	f.clock.Add(oidc.DefaultUserinfoTTL + time.Second)
	if _, err := f.v.Verify(ctx, full.AccessToken); err != nil {
		t.Fatal(err)
	}
	if after := f.network.count("/userinfo"); after != before+1 {
		t.Errorf("userinfo past its TTL: %d requests, want %d", after, before+1)
	}
}

func TestHostileTokensAreRefused(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// Discovery and the keys, once, by a good token.
	good, err := f.p.SignIn(ctx, oidctest.ClientID, ada.Username, ada.Password)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.v.Verify(ctx, good.IDToken); err != nil {
		t.Fatal(err)
	}
	var jwk jose.JSONWebKey
	if err := json.Unmarshal(f.p.PublicJWK(), &jwk); err != nil {
		t.Fatal(err)
	}
	foreignKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	bobTokens, err := f.p.SignIn(ctx, oidctest.ClientID, bob.Username, bob.Password)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	claims, _ := json.Marshal(f.claims(nil))
	skew := oidc.DefaultClockSkew
	for _, tc := range []struct {
		name, token, want string
		// network: requests to the provider it may cost.
		network int
	}{
		{"alg none", b64([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + b64(claims) + ".", "not a JWT signed with RS256", 0},
		{"HS256 with the provider's public key as the secret",
			oidctest.SignWith(jose.HS256, f.p.PublicJWK(), jwk.KeyID, f.claims(nil)), "not a JWT signed with RS256", 0},
		{"a foreign issuer", oidctest.SignWith(jose.ES256, foreignKey, "k1", f.claims(func(c map[string]any) {
			c["iss"] = "https://idp.example.com"
		})), "issuer procsvc does not trust", 0},
		{"a foreign key under the provider's kid", oidctest.SignWith(jose.ES256, foreignKey, jwk.KeyID, f.claims(nil)),
			"failed to verify signature", 0},
		{"a wrong audience", f.p.Sign(f.claims(func(c map[string]any) { c["aud"] = "another-app" })), "another audience", 0},
		{"expired beyond the skew", f.p.Sign(f.claims(func(c map[string]any) {
			c["exp"] = f.clock.Now().Add(-2 * skew).Unix()
		})), "expired", 0},
		{"not yet valid beyond the skew", f.p.Sign(f.claims(func(c map[string]any) {
			c["nbf"] = f.clock.Now().Add(2 * skew).Unix()
		})), "not valid yet", 0},
		{"an unverified email (JWT)", f.p.Sign(f.claims(func(c map[string]any) {
			c["sub"], c["email"], c["email_verified"] = bob.Subject, bob.Email, false
		})), "not verified its email", 0},
		{"an unverified email (ID token of the provider)", bobTokens.IDToken, "not verified its email", 0},
		{"an unverified email (userinfo)", bobTokens.AccessToken, "not verified its email", 1},
		{"an email with no email_verified", f.p.Sign(f.claims(func(c map[string]any) { delete(c, "email_verified") })),
			"not verified its email", 0},
		{"no subject", f.p.Sign(f.claims(func(c map[string]any) { delete(c, "sub") })), "subject", 0},
		{"a huge token", strings.Repeat("a", oidc.MaxTokenBytes/2) + "." + strings.Repeat("b", oidc.MaxTokenBytes/2) + ".c",
			"longer than", 0},
		{"a huge opaque token", strings.Repeat("a", oidc.MaxTokenBytes+1), "longer than", 0},
		{"an opaque token the provider never issued", "not-a-token-of-anyone", "does not know this token", 1},
		{"an unknown kid, the keys fetched less than the interval ago",
			oidctest.SignWith(jose.ES256, foreignKey, "rotated-in", f.claims(nil)), "a key the issuer does not publish", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.network.total()
			id, err := f.v.Verify(ctx, tc.token)
			if err == nil {
				t.Fatalf("accepted as %+v", id)
			}
			if apperr.CodeOf(err) != apperr.Unauthenticated || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("refused with %v, want unauthenticated: ...%s...", err, tc.want)
			}
			if n := f.network.total() - before; n != tc.network {
				t.Errorf("%d requests to the provider, want %d", n, tc.network)
			}
		})
	}
}

// TestUnknownKidFloodFetchesTheKeysOncePerInterval: a flood of tokens
// with made-up key ids costs one JWKS fetch per interval, however many.
func TestUnknownKidFloodFetchesTheKeysOncePerInterval(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	foreignKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	flood := func() {
		var wg sync.WaitGroup
		for i := range 50 {
			wg.Go(func() {
				tok := oidctest.SignWith(jose.ES256, foreignKey, "made-up-"+string(rune('a'+i%26))+time.Now().String(), f.claims(nil))
				if _, err := f.v.Verify(ctx, tok); apperr.CodeOf(err) != apperr.Unauthenticated {
					t.Errorf("unknown kid: %v", err)
				}
			})
		}
		wg.Wait()
	}
	flood() // the first token fetches the keys (none held yet)
	if n := f.p.KeysFetched(); n != 1 {
		t.Fatalf("first flood: %d JWKS fetches, want 1", n)
	}
	flood()
	if n := f.p.KeysFetched(); n != 1 {
		t.Fatalf("second flood within the interval: %d JWKS fetches, want 1", n)
	}
	f.clock.Add(oidc.DefaultKeyRefetchInterval)
	flood()
	if n := f.p.KeysFetched(); n != 2 {
		t.Fatalf("flood after the interval: %d JWKS fetches, want 2", n)
	}
	// The provider's own tokens still pass.
	if _, err := f.v.Verify(ctx, f.p.Sign(f.claims(nil))); err != nil {
		t.Fatal(err)
	}
}

func TestConfigCheck(t *testing.T) {
	for _, tc := range []struct {
		cfg  oidc.Config
		want string // "" passes
	}{
		{oidc.Config{}, ""},
		{oidc.Config{Issuers: []string{"https://idp.example.com"}, Audiences: []string{"app"}}, ""},
		{oidc.Config{Issuers: []string{"http://127.0.0.1:5556/dex"}, Audiences: []string{"app"}}, ""},
		{oidc.Config{Issuers: []string{"http://[::1]:8080"}, Audiences: []string{"app"}}, ""},
		{oidc.Config{Issuers: []string{"http://localhost:8080"}, Audiences: []string{"app"}}, ""},
		{oidc.Config{Issuers: []string{"http://idp.example.com"}, Audiences: []string{"app"}}, "loopback only"},
		{oidc.Config{Issuers: []string{"http://10.0.0.1"}, Audiences: []string{"app"}}, "loopback only"},
		{oidc.Config{Issuers: []string{"ftp://idp.example.com"}, Audiences: []string{"app"}}, "want https://"},
		{oidc.Config{Issuers: []string{"idp.example.com"}, Audiences: []string{"app"}}, "absolute URL"},
		{oidc.Config{Issuers: []string{"https://idp.example.com?x=1"}, Audiences: []string{"app"}}, "absolute URL"},
		{oidc.Config{Issuers: []string{"https://idp.example.com"}}, "without an audience"},
		{oidc.Config{Audiences: []string{"app"}}, "without an issuer"},
	} {
		err := tc.cfg.Check()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

func TestProviderDownIsUnavailableAndRetriedOncePerInterval(t *testing.T) {
	c := &clock{now: time.Now()}
	network := &countingTransport{paths: map[string]int{}}
	v, err := oidc.New(oidc.Config{Issuers: []string{"http://127.0.0.1:1"}, Audiences: []string{"app"}, Now: c.Now,
		HTTPClient: &http.Client{Transport: network, Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tok := oidctest.SignWith(jose.ES256, key, "k", map[string]any{"iss": "http://127.0.0.1:1", "sub": "s", "aud": "app",
		"exp": c.Now().Add(time.Minute).Unix()})
	for range 3 {
		if _, err := v.Verify(context.Background(), tok); apperr.CodeOf(err) != apperr.Unavailable {
			t.Fatalf("provider down: %v, want unavailable", err)
		}
	}
	if n := network.total(); n != 1 {
		t.Errorf("%d discovery attempts within the interval, want 1", n)
	}
}
