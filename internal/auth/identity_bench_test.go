package auth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/auth"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/oidc"
	"github.com/procsvc/procsvc/internal/oidctest"
)

// BenchmarkHostileProviderTokens weighs the refusal of hostile identity
// provider tokens (docs/api.md, "Identity provider tokens") beside a
// forged pms_ secret's: stmts/op is the database work (none for every
// one), ns/op the CPU, mostly the signature check where there is one.
func BenchmarkHostileProviderTokens(b *testing.B) {
	db := dbtest.Open(b, "sqlite")
	p := oidctest.Start(b)
	verifier, err := oidc.New(oidc.Config{Issuers: []string{p.Issuer}, Audiences: []string{oidctest.ClientID},
		HTTPClient: &http.Client{Timeout: 10 * time.Second}})
	if err != nil {
		b.Fatal(err)
	}
	a := auth.New(db, auth.WithOIDC(verifier))
	ctx := context.Background()
	now := time.Now()
	claims := func(edit func(map[string]any)) map[string]any {
		c := map[string]any{"iss": p.Issuer, "sub": "u-x", "aud": oidctest.ClientID, "exp": now.Add(time.Hour).Unix(),
			"email": "x@example.com", "email_verified": true}
		edit(c)
		return c
	}
	// The keys, once: discovery and the JWKS are not what is weighed.
	if _, err := a.Authenticate(ctx, "Bearer "+p.Sign(claims(func(c map[string]any) { c["aud"] = "warm-up" }))); err == nil {
		b.Fatal("warm-up token accepted")
	}
	foreign, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	b64 := base64.RawURLEncoding.EncodeToString
	for _, tc := range []struct{ name, token string }{
		{"forged-pms-secret", forgedSecrets(1)[0]},
		{"alg-none", b64([]byte(`{"alg":"none"}`)) + "." + b64([]byte(`{"iss":"`+p.Issuer+`"}`)) + "."},
		{"hs256-public-key", oidctest.SignWith(jose.HS256, p.PublicJWK(), "", claims(func(map[string]any) {}))},
		{"foreign-issuer", oidctest.SignWith(jose.ES256, foreign, "k", claims(func(c map[string]any) { c["iss"] = "https://evil.example" }))},
		{"unknown-kid", oidctest.SignWith(jose.ES256, foreign, "made-up", claims(func(map[string]any) {}))},
		{"wrong-audience", p.Sign(claims(func(c map[string]any) { c["aud"] = "another-app" }))},
		{"expired", p.Sign(claims(func(c map[string]any) { c["exp"] = now.Add(-time.Hour).Unix() }))},
		{"unverified-email", p.Sign(claims(func(c map[string]any) { c["email_verified"] = false }))},
		{"huge", strings.Repeat("x", oidc.MaxTokenBytes+1)},
	} {
		header := "Bearer " + tc.token
		b.Run(tc.name, func(b *testing.B) {
			start := db.Statements()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.Authenticate(ctx, header); apperr.CodeOf(err) != apperr.Unauthenticated {
					b.Fatalf("%s: %v", tc.name, err)
				}
			}
			b.ReportMetric(float64(db.Statements()-start)/float64(b.N), "stmts/op")
		})
	}
}
