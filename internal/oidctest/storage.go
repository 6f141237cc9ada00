package oidctest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/google/uuid"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// storage is the OP's op.Storage, in memory: the authorization-code flow
// with PKCE for public clients, and nothing else (no refresh tokens, no
// client credentials, no JWT profile grant): what procsvc's sign-in uses.
type storage struct {
	mu           sync.Mutex
	users        map[string]User // by subject
	clients      map[string]*client
	authRequests map[string]*authRequest
	codes        map[string]string // code → auth request id
	tokens       map[string]*accessToken
	key          signingKey
	// tokenLife is the life of the tokens it issues, access and ID
	// (Provider.SetTokenLife; five minutes).
	tokenLife *atomic.Int64
	// keysFetched counts KeySet calls: the keys endpoint (and the
	// userinfo endpoint's check of a JWT access token, which this
	// provider never issues).
	keysFetched atomic.Int64
}

var _ op.Storage = (*storage)(nil)

type accessToken struct {
	subject, clientID string
	scopes, audience  []string
	expires           time.Time
}

type signingKey struct {
	id  string
	key *rsa.PrivateKey
}

func (k *signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k *signingKey) Key() any                                    { return k.key }
func (k *signingKey) ID() string                                  { return k.id }

type publicKey struct{ k *signingKey }

func (p publicKey) ID() string                         { return p.k.id }
func (p publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (p publicKey) Use() string                        { return "sig" }
func (p publicKey) Key() any                           { return &p.k.key.PublicKey }

func newStorage(users []User, clients ...*client) (*storage, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	s := &storage{users: map[string]User{}, clients: map[string]*client{}, authRequests: map[string]*authRequest{},
		codes: map[string]string{}, tokens: map[string]*accessToken{},
		key: signingKey{id: uuid.NewString(), key: key}, tokenLife: &atomic.Int64{}}
	s.tokenLife.Store(int64(5 * time.Minute))
	for _, u := range users {
		s.users[u.Subject] = u
	}
	for _, c := range clients {
		c.life = s.tokenLife
		s.clients[c.id] = c
	}
	return s, nil
}

// checkPassword is the login form's check; on success the auth request
// belongs to the user and is done.
func (s *storage) checkPassword(username, password, requestID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	req, ok := s.authRequests[requestID]
	if !ok {
		return errors.New("unknown auth request")
	}
	for _, u := range s.users {
		if u.Username == username && u.Password == password {
			req.subject, req.done, req.authTime = u.Subject, true, time.Now()
			return nil
		}
	}
	return errors.New("username or password wrong")
}

func (s *storage) CreateAuthRequest(_ context.Context, r *oidc.AuthRequest, userID string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	req := &authRequest{id: uuid.NewString(), clientID: r.ClientID, redirectURI: r.RedirectURI, state: r.State,
		nonce: r.Nonce, scopes: r.Scopes, responseType: r.ResponseType, responseMode: r.ResponseMode, subject: userID}
	if r.CodeChallenge != "" {
		req.challenge = &oidc.CodeChallenge{Challenge: r.CodeChallenge, Method: r.CodeChallengeMethod}
	}
	s.authRequests[req.id] = req
	return req, nil
}

func (s *storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	req, ok := s.authRequests[id]
	if !ok {
		return nil, errors.New("auth request not found")
	}
	return req, nil
}

func (s *storage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	s.mu.Lock()
	id, ok := s.codes[code]
	s.mu.Unlock()
	if !ok {
		return nil, errors.New("code invalid or expired")
	}
	return s.AuthRequestByID(ctx, id)
}

func (s *storage) SaveAuthCode(_ context.Context, id, code string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[code] = id
	return nil
}

func (s *storage) DeleteAuthRequest(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.authRequests, id)
	for code, rid := range s.codes {
		if rid == id {
			delete(s.codes, code)
		}
	}
	return nil
}

func (s *storage) CreateAccessToken(_ context.Context, r op.TokenRequest) (string, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &accessToken{subject: r.GetSubject(), scopes: r.GetScopes(), audience: r.GetAudience(),
		expires: time.Now().Add(time.Duration(s.tokenLife.Load()))}
	if a, ok := r.(*authRequest); ok {
		t.clientID = a.clientID
	}
	id := uuid.NewString()
	s.tokens[id] = t
	return id, t.expires, nil
}

var errUnsupported = errors.New("oidctest: not supported by the test provider")

func (s *storage) CreateAccessAndRefreshTokens(context.Context, op.TokenRequest, string) (string, string, time.Time, error) {
	return "", "", time.Time{}, errUnsupported
}

func (s *storage) TokenRequestByRefreshToken(context.Context, string) (op.RefreshTokenRequest, error) {
	return nil, op.ErrInvalidRefreshToken
}

func (s *storage) TerminateSession(context.Context, string, string) error { return nil }

func (s *storage) RevokeToken(_ context.Context, tokenOrID, _, _ string) *oidc.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tokens, tokenOrID)
	return nil
}

func (s *storage) GetRefreshTokenInfo(context.Context, string, string) (string, string, error) {
	return "", "", op.ErrInvalidRefreshToken
}

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) { return &s.key, nil }

func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *storage) KeySet(context.Context) ([]op.Key, error) {
	s.keysFetched.Add(1)
	return []op.Key{publicKey{&s.key}}, nil
}

func (s *storage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[id]
	if !ok {
		return nil, errors.New("client not found")
	}
	return c, nil
}

// AuthorizeClientIDSecret: the test clients are public (PKCE, no secret).
func (s *storage) AuthorizeClientIDSecret(context.Context, string, string) error {
	return errors.New("no confidential clients")
}

func (s *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}

// SetUserinfoFromRequest fills the ID token's claims.
func (s *storage) SetUserinfoFromRequest(_ context.Context, info *oidc.UserInfo, r op.IDTokenRequest, scopes []string) error {
	return s.setUserinfo(info, r.GetSubject(), scopes)
}

// SetUserinfoFromToken answers the userinfo endpoint for an opaque access token.
func (s *storage) SetUserinfoFromToken(_ context.Context, info *oidc.UserInfo, tokenID, _, _ string) error {
	s.mu.Lock()
	t, ok := s.tokens[tokenID]
	s.mu.Unlock()
	if !ok || time.Now().After(t.expires) {
		return errors.New("token is invalid or has expired")
	}
	return s.setUserinfo(info, t.subject, t.scopes)
}

func (s *storage) setUserinfo(info *oidc.UserInfo, subject string, scopes []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[subject]
	if !ok {
		return fmt.Errorf("user %q not found", subject)
	}
	for _, scope := range scopes {
		switch scope {
		case oidc.ScopeOpenID:
			info.Subject = u.Subject
		case oidc.ScopeEmail:
			info.Email, info.EmailVerified = u.Email, oidc.Bool(u.EmailVerified)
		case oidc.ScopeProfile:
			info.PreferredUsername = u.Username
		}
	}
	return nil
}

func (s *storage) SetIntrospectionFromToken(context.Context, *oidc.IntrospectionResponse, string, string, string) error {
	return errUnsupported
}

func (s *storage) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return nil, nil
}

func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errUnsupported
}

func (s *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, errUnsupported
}

func (s *storage) Health(context.Context) error { return nil }

// authRequest is op.AuthRequest.
type authRequest struct {
	id, clientID, redirectURI, state, nonce, subject string
	scopes                                           []string
	responseType                                     oidc.ResponseType
	responseMode                                     oidc.ResponseMode
	challenge                                        *oidc.CodeChallenge
	done                                             bool
	authTime                                         time.Time
}

func (a *authRequest) GetID() string                         { return a.id }
func (a *authRequest) GetACR() string                        { return "" }
func (a *authRequest) GetAMR() []string                      { return []string{"pwd"} }
func (a *authRequest) GetAudience() []string                 { return []string{a.clientID} }
func (a *authRequest) GetAuthTime() time.Time                { return a.authTime }
func (a *authRequest) GetClientID() string                   { return a.clientID }
func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge { return a.challenge }
func (a *authRequest) GetNonce() string                      { return a.nonce }
func (a *authRequest) GetRedirectURI() string                { return a.redirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType    { return a.responseType }
func (a *authRequest) GetResponseMode() oidc.ResponseMode    { return a.responseMode }
func (a *authRequest) GetScopes() []string                   { return a.scopes }
func (a *authRequest) GetState() string                      { return a.state }
func (a *authRequest) GetSubject() string                    { return a.subject }
func (a *authRequest) Done() bool                            { return a.done }

// client is a public client (a single-page app such as the playground):
// authorization code with PKCE, no secret.
type client struct {
	id          string
	redirectURI string
	// claimsInIDToken asserts the userinfo claims (email) in the ID token;
	// without it the ID token carries the subject only, as ZITADEL's do.
	claimsInIDToken bool
	// life is the provider's token life (storage.tokenLife).
	life *atomic.Int64
	// redirectGlobs are further redirect URIs it accepts, as globs.
	redirectGlobs []string
}

func (c *client) GetID() string                        { return c.id }
func (c *client) RedirectURIs() []string               { return []string{c.redirectURI} }
func (c *client) PostLogoutRedirectURIs() []string     { return nil }
func (c *client) RedirectURIGlobs() []string           { return c.redirectGlobs }
func (c *client) PostLogoutRedirectURIGlobs() []string { return nil }
func (c *client) ApplicationType() op.ApplicationType  { return op.ApplicationTypeUserAgent }
func (c *client) AuthMethod() oidc.AuthMethod          { return oidc.AuthMethodNone }
func (c *client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c *client) GrantTypes() []oidc.GrantType         { return []oidc.GrantType{oidc.GrantTypeCode} }
func (c *client) LoginURL(id string) string            { return "/login?authRequestID=" + id }
func (c *client) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeBearer }
func (c *client) IDTokenLifetime() time.Duration       { return time.Duration(c.life.Load()) }
func (c *client) DevMode() bool                        { return true } // http:// redirect URIs on loopback
func (c *client) IsScopeAllowed(string) bool           { return false }
func (c *client) IDTokenUserinfoClaimsAssertion() bool { return c.claimsInIDToken }
func (c *client) ClockSkew() time.Duration             { return 0 }
func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
