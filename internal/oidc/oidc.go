// Package oidc verifies the tokens of the OpenID Providers procsvc trusts
// (docs/api.md, "Authentication"): a person's ID token or access token
// becomes an Identity (issuer, subject, verified email) that internal/auth
// maps to members.
//
// Discovery, the JWKS and signature checks are go-oidc's and go-jose's; this
// package adds what a server facing hostile callers needs on top: only the
// RS256/ES256 families, an audience out of a list, a small clock skew, a
// JWKS refetched on an unknown key id at most once per interval (go-oidc's
// RemoteKeySet refetches on every unknown kid, so a flood of made-up kids
// would be a flood of requests to the provider), a bound on a token's size,
// and opaque access tokens resolved through the userinfo endpoint with a
// bounded cache. Every refusal is decided before any database lookup.
package oidc

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/oauth2"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/identity"
)

// Defaults of Config, and the bounds of what a caller controls.
const (
	// DefaultClockSkew is how far a token's exp and nbf may be off the
	// server's clock: a token expired less than this long ago still
	// authenticates, one valid from less than this far ahead already does.
	DefaultClockSkew = time.Minute
	// DefaultKeyRefetchInterval is the least time between two fetches of
	// an issuer's JWKS (and two attempts of its discovery): a token signed
	// with a key id the cached set lacks triggers one fetch, and further
	// unknown key ids within the interval are refused without one.
	DefaultKeyRefetchInterval = time.Minute
	// DefaultUserinfoTTL is how long an opaque access token's userinfo
	// answer (or refusal) is reused: a resource server cannot learn an
	// opaque token's life, so a token revoked at the provider keeps
	// authenticating this long at most.
	DefaultUserinfoTTL = time.Minute
	// MaxUserinfoEntries bounds the opaque tokens whose answers are cached
	// (some 400 bytes each: under 4 MiB); the least recently used is
	// dropped first.
	MaxUserinfoEntries = 10_000
	// MaxTokenBytes bounds a provider's token: a longer one is refused
	// before it is parsed. Entra ID's tokens with many group claims stay
	// under 8 KiB.
	MaxTokenBytes = 16 << 10
	// maxResponseBytes bounds what is read of a provider's answer
	// (discovery, JWKS, userinfo).
	maxResponseBytes = 1 << 20
	// providerTimeout bounds one request to a provider.
	providerTimeout = 10 * time.Second
)

// AllowedAlgorithms are the signature algorithms accepted: the RS256 and
// ES256 families. "none" and the HMAC algorithms (whose key would be the
// provider's public key in a key-confusion attack) never are.
var AllowedAlgorithms = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.ES256, jose.ES384, jose.ES512}

// Config is the providers procsvc trusts.
type Config struct {
	// Issuers are the issuer URLs (discovery at <issuer>/.well-known/openid-configuration).
	Issuers []string
	// Audiences are the accepted aud values of a JWT: the client ids of
	// the apps people sign in to (their ID tokens' audience), or the API
	// audience an access token is issued for. A JWT must name one.
	Audiences []string
	// ClockSkew (DefaultClockSkew when 0), KeyRefetchInterval
	// (DefaultKeyRefetchInterval when 0), UserinfoTTL (DefaultUserinfoTTL
	// when 0).
	ClockSkew, KeyRefetchInterval, UserinfoTTL time.Duration
	// HTTPClient reaches the providers (default: a client with a
	// providerTimeout timeout).
	HTTPClient *http.Client
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Enabled reports whether any issuer is configured: without one, provider
// tokens are not accepted and nothing changes.
func (c Config) Enabled() bool { return len(c.Issuers) > 0 }

// CheckIssuerURL refuses an issuer URL that is not an absolute https://
// URL, or http:// on a loopback host (local development and tests): over
// plain http on a network, anyone on the path could serve procsvc their
// own keys.
func CheckIssuerURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("issuer %q: want an absolute URL such as https://idp.example.com/realms/main", raw)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if loopback(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("issuer %q: http:// is accepted on loopback only (127.0.0.1, ::1, localhost); use https://", raw)
	}
	return fmt.Errorf("issuer %q: want https://", raw)
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Check refuses a configuration that cannot work, in one line.
func (c Config) Check() error {
	if !c.Enabled() {
		if len(c.Audiences) > 0 {
			return errors.New("an OIDC audience is set without an issuer: set the issuer too")
		}
		return nil
	}
	for _, iss := range c.Issuers {
		if err := CheckIssuerURL(iss); err != nil {
			return err
		}
	}
	if len(c.Audiences) == 0 {
		return errors.New("an OIDC issuer is set without an audience: set the client id(s) of the apps people sign in to")
	}
	for _, a := range c.Audiences {
		if strings.TrimSpace(a) == "" {
			return errors.New("an OIDC audience is empty")
		}
	}
	return nil
}

// Identity is the person a provider's token stands for, as this package
// works it out (Verify answers identity.Identity).
type Identity struct {
	Issuer, Subject string
	// Email is the provider's verified email, or "" when the token says
	// none (a token whose email is not verified is refused).
	Email string
	// Expires is when the token stops authenticating: its exp, or for an
	// opaque token when its cached answer is asked again.
	Expires time.Time
	// unverifiedEmail: the provider sent an email it has not verified.
	unverifiedEmail bool
}

// Verifier turns provider tokens into identities.
type Verifier struct {
	cfg     Config
	issuers map[string]*issuer
	order   []*issuer
	client  *http.Client

	infoMu sync.Mutex
	info   *simplelru.LRU[[32]byte, cachedInfo]
}

type cachedInfo struct {
	id      *Identity
	err     error
	expires time.Time
}

// New returns a Verifier of cfg (cfg.Check must pass). It reaches no
// provider yet: each issuer is discovered at its first token, so that a
// provider down at start does not keep procsvc from serving pms_ tokens.
func New(cfg Config) (*Verifier, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if cfg.ClockSkew <= 0 {
		cfg.ClockSkew = DefaultClockSkew
	}
	if cfg.KeyRefetchInterval <= 0 {
		cfg.KeyRefetchInterval = DefaultKeyRefetchInterval
	}
	if cfg.UserinfoTTL <= 0 {
		cfg.UserinfoTTL = DefaultUserinfoTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: providerTimeout}
	}
	// Every answer of a provider is read through a bound (go-oidc reads
	// whole bodies).
	bounded := *client
	bounded.Transport = boundedTransport{next: client.Transport}
	info, _ := simplelru.NewLRU[[32]byte, cachedInfo](MaxUserinfoEntries, nil)
	v := &Verifier{cfg: cfg, issuers: map[string]*issuer{}, client: &bounded, info: info}
	for _, u := range cfg.Issuers {
		iss := &issuer{url: u, v: v}
		v.issuers[u] = iss
		v.order = append(v.order, iss)
	}
	return v, nil
}

// refused is the refusal of a token: 401, a fresh error each time.
func refused(format string, args ...any) error {
	return apperr.New(apperr.Unauthenticated, "identity provider token refused: "+format, args...)
}

// unavailable is a provider that did not answer: not the caller's failure.
func unavailable(iss string, err error) error {
	return &apperr.Error{Code: apperr.Unavailable, Message: "the identity provider could not be reached; try again later",
		Err: fmt.Errorf("oidc issuer %s: %w", iss, err)}
}

// LooksLikeJWT reports whether a bearer has a JWS's compact shape (three
// dot-separated parts); anything else is taken for an opaque access token.
func LooksLikeJWT(token string) bool { return strings.Count(token, ".") == 2 }

// Verify returns the identity of a provider's token: a JWT (ID token or
// JWT access token) verified against its issuer's keys, or an opaque
// access token resolved through the userinfo endpoint.
// Errors: unauthenticated (a token refused), unavailable (a provider that
// did not answer).
func (v *Verifier) Verify(ctx context.Context, token string) (*identity.Identity, error) {
	id, err := v.verify(ctx, token)
	if err != nil {
		return nil, err
	}
	return &identity.Identity{Issuer: id.Issuer, Subject: id.Subject, Email: id.Email, Expires: id.Expires}, nil
}

// verify is Verify, with the identity as this package keeps it.
func (v *Verifier) verify(ctx context.Context, token string) (*Identity, error) {
	if len(token) > MaxTokenBytes {
		return nil, refused("longer than %d bytes", MaxTokenBytes)
	}
	if LooksLikeJWT(token) {
		return v.verifyJWT(ctx, token)
	}
	return v.userinfo(ctx, token)
}

func (v *Verifier) verifyJWT(ctx context.Context, raw string) (*Identity, error) {
	// The unverified issuer only picks the keys to check the signature
	// with; go-oidc checks the issuer again once the signature holds.
	parsed, err := jwt.ParseSigned(raw, AllowedAlgorithms)
	if err != nil {
		return nil, refused("not a JWT signed with RS256, RS384, RS512, ES256, ES384 or ES512")
	}
	var unverified struct {
		Issuer string `json:"iss"`
	}
	if err := parsed.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return nil, refused("its claims are not a JSON object")
	}
	iss, ok := v.issuers[unverified.Issuer]
	if !ok {
		return nil, refused("issued by an issuer procsvc does not trust")
	}
	verifier, err := iss.verifier(ctx)
	if err != nil {
		return nil, err
	}
	tok, err := verifier.Verify(ctx, raw)
	if err != nil {
		var expired *gooidc.TokenExpiredError
		switch {
		case errors.As(err, &expired):
			return nil, refused("expired")
		// go-oidc wraps the key set's errors with %v: only their text is left.
		case strings.Contains(err.Error(), errUnavailable.Error()):
			return nil, unavailable(iss.url, err)
		case strings.Contains(err.Error(), errUnknownKey.Error()):
			return nil, refused("signed with a key the issuer does not publish")
		}
		return nil, refused("%s", strings.TrimPrefix(err.Error(), "oidc: "))
	}
	if !slices.ContainsFunc(tok.Audience, func(a string) bool { return slices.Contains(v.cfg.Audiences, a) }) {
		return nil, refused("issued for another audience")
	}
	var claims struct {
		NotBefore *jwt.NumericDate `json:"nbf"`
		Email     string           `json:"email"`
		Verified  json.RawMessage  `json:"email_verified"`
	}
	if err := tok.Claims(&claims); err != nil {
		return nil, refused("its claims do not parse")
	}
	// go-oidc allows an nbf five minutes ahead; procsvc's skew is smaller.
	if claims.NotBefore != nil && claims.NotBefore.Time().After(v.cfg.Now().Add(v.cfg.ClockSkew)) {
		return nil, refused("not valid yet")
	}
	if tok.Subject == "" {
		return nil, refused("it names no subject")
	}
	// Expires is when this verifier stops taking the token: its exp and
	// the skew. A long-lived connection re-checks its credential then; at
	// exp alone the token would still pass, and the connection would
	// re-check it again and again until the skew ran out.
	id := &Identity{Issuer: iss.url, Subject: tok.Subject, Expires: tok.Expiry.Add(v.cfg.ClockSkew)}
	if claims.Email != "" {
		if !verifiedFlag(claims.Verified) {
			return nil, refused("the provider has not verified its email")
		}
		id.Email = claims.Email
	}
	return id, nil
}

// verifiedFlag reads email_verified, a boolean that some providers send as
// the string "true".
func verifiedFlag(raw json.RawMessage) bool {
	s := strings.Trim(string(raw), `"`)
	return s == "true"
}

// userinfo resolves an opaque access token through the userinfo endpoint
// of each issuer in turn (the first that takes it), answers and refusals
// cached for UserinfoTTL. A provider that does not answer is not cached.
func (v *Verifier) userinfo(ctx context.Context, token string) (*Identity, error) {
	if token == "" {
		return nil, refused("empty")
	}
	key := sha256.Sum256([]byte(token))
	now := v.cfg.Now()
	v.infoMu.Lock()
	c, ok := v.info.Get(key)
	v.infoMu.Unlock()
	if ok && now.Before(c.expires) {
		return answered(c.id)
	}
	var id *Identity
	for _, iss := range v.order {
		got, known, err := iss.userinfo(ctx, token)
		if err != nil {
			return nil, err
		}
		if known {
			id = got
			break
		}
	}
	expires := now.Add(v.cfg.UserinfoTTL)
	entry := cachedInfo{id: id, expires: expires}
	if id == nil {
		entry.err = errors.New("unknown")
	} else {
		id.Expires = expires
	}
	v.infoMu.Lock()
	v.info.Add(key, entry)
	v.infoMu.Unlock()
	return answered(id)
}

// answered is the outcome of a userinfo answer (nil: the token refused).
func answered(id *Identity) (*Identity, error) {
	switch {
	case id == nil:
		return nil, refused("the identity provider does not know this token")
	case id.unverifiedEmail:
		return nil, refused("the provider has not verified its email")
	}
	cp := *id
	return &cp, nil
}

// issuer is one trusted provider, discovered at its first token.
type issuer struct {
	url string
	v   *Verifier

	mu          sync.Mutex
	provider    *gooidc.Provider
	idVerifier  *gooidc.IDTokenVerifier
	lastAttempt time.Time
}

var (
	errUnavailable = errors.New("provider unavailable")
	errUnknownKey  = errors.New("unknown signing key")
)

// discover returns the provider's discovery document, fetching it at most
// once per KeyRefetchInterval until it succeeds.
func (i *issuer) discover(ctx context.Context) (*gooidc.Provider, *gooidc.IDTokenVerifier, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.provider != nil {
		return i.provider, i.idVerifier, nil
	}
	now := i.v.cfg.Now()
	if !i.lastAttempt.IsZero() && now.Sub(i.lastAttempt) < i.v.cfg.KeyRefetchInterval {
		return nil, nil, unavailable(i.url, errors.New("discovery failed less than the key refetch interval ago"))
	}
	i.lastAttempt = now
	p, err := gooidc.NewProvider(gooidc.ClientContext(ctx, i.v.client), i.url)
	if err != nil {
		return nil, nil, unavailable(i.url, err)
	}
	var doc struct {
		JWKS string `json:"jwks_uri"`
	}
	if err := p.Claims(&doc); err != nil || doc.JWKS == "" {
		return nil, nil, unavailable(i.url, errors.New("discovery names no jwks_uri"))
	}
	keys := &keySet{url: doc.JWKS, client: i.v.client, interval: i.v.cfg.KeyRefetchInterval, now: i.v.cfg.Now}
	algs := make([]string, len(AllowedAlgorithms))
	for n, a := range AllowedAlgorithms {
		algs[n] = string(a)
	}
	skew := i.v.cfg.ClockSkew
	now0 := i.v.cfg.Now
	i.idVerifier = gooidc.NewVerifier(i.url, keys, &gooidc.Config{
		// The audience is checked against a list (go-oidc takes one).
		SkipClientIDCheck:    true,
		SupportedSigningAlgs: algs,
		// A token expired less than the skew ago still passes.
		Now: func() time.Time { return now0().Add(-skew) },
	})
	i.provider = p
	return p, i.idVerifier, nil
}

func (i *issuer) verifier(ctx context.Context) (*gooidc.IDTokenVerifier, error) {
	_, v, err := i.discover(ctx)
	return v, err
}

// userinfo asks the issuer's userinfo endpoint who token's holder is:
// known false when the provider refuses the token (4xx).
func (i *issuer) userinfo(ctx context.Context, token string) (*Identity, bool, error) {
	p, _, err := i.discover(ctx)
	if err != nil {
		return nil, false, err
	}
	if p.UserInfoEndpoint() == "" {
		return nil, false, nil
	}
	rec := &statusRecorder{next: i.v.client.Transport}
	client := *i.v.client
	client.Transport = rec
	info, err := p.UserInfo(gooidc.ClientContext(ctx, &client), oauth2.StaticTokenSource(&oauth2.Token{AccessToken: token}))
	if err != nil {
		if rec.status >= 400 && rec.status < 500 {
			return nil, false, nil
		}
		return nil, false, unavailable(i.url, err)
	}
	if info.Subject == "" {
		return nil, false, nil
	}
	id := &Identity{Issuer: i.url, Subject: info.Subject}
	if info.Email != "" {
		if info.EmailVerified {
			id.Email = info.Email
		} else {
			id.unverifiedEmail = true
		}
	}
	return id, true, nil
}

// statusRecorder remembers the status of the one response it carries.
type statusRecorder struct {
	next   http.RoundTripper
	status int
}

func (s *statusRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := s.next.RoundTrip(r)
	if resp != nil {
		s.status = resp.StatusCode
	}
	return resp, err
}

// boundedTransport reads at most maxResponseBytes of each answer.
type boundedTransport struct{ next http.RoundTripper }

func (b boundedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	next := b.next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(r)
	if err == nil {
		resp.Body = &limitedBody{ReadCloser: resp.Body, left: maxResponseBytes}
	}
	return resp, err
}
