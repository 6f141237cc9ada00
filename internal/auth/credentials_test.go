package auth_test

// What a refused credential costs: a checksum that fails costs no lookup; a
// secret refused disconnected costs one lookup, then none (the refused
// secrets are remembered); each client address has a bucket of failures,
// past which its requests are refused rate_limited before any lookup. All
// on both databases, SQL statements counted, the clock the test's.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/auth"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/viewer"
)

type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// credentials is one workspace and an Authenticator over its database.
type credentials struct {
	db    *database.DB
	svc   *core.Service
	boot  *core.Bootstrapped
	admin context.Context
	clock *testClock
	a     *auth.Authenticator
}

func newCredentials(t *testing.T, db *database.DB, opts ...auth.Option) *credentials {
	t.Helper()
	c := &credentials{db: db, svc: core.New(db.Client), clock: &testClock{now: time.Now().UTC()}}
	var err error
	c.boot, err = c.svc.CreateWorkspace(context.Background(), core.NewWorkspace{Name: "Credentials", Key: "CRD", AdminName: "A", AdminEmail: "a@crd.example"})
	if err != nil {
		t.Fatal(err)
	}
	if c.admin, err = c.svc.ActAsAdmin(context.Background(), c.boot.Workspace.ID.String()); err != nil {
		t.Fatal(err)
	}
	c.a = auth.New(db, append([]auth.Option{auth.WithClock(c.clock.Now)}, opts...)...)
	return c
}

// from is a request context of a client at addr ("" for none).
func from(addr string) context.Context {
	if addr == "" {
		return context.Background()
	}
	return auth.WithClientAddress(context.Background(), netip.MustParseAddr(addr))
}

// authenticate returns the code of Authenticate's answer ("" for a viewer)
// and the statements it sent.
func (c *credentials) authenticate(t *testing.T, ctx context.Context, secret string) (apperr.Code, int64) {
	t.Helper()
	refusal, statements := c.refusal(t, ctx, secret)
	if refusal == nil {
		return "", statements
	}
	return refusal.Code, statements
}

// refusal authenticates secret and returns the error it was refused with
// (nil if it authenticated) and the SQL statements it took.
func (c *credentials) refusal(t *testing.T, ctx context.Context, secret string) (*apperr.Error, int64) {
	t.Helper()
	n := c.db.Statements()
	v, err := c.a.Authenticate(ctx, "Bearer "+secret)
	if (v == nil) == (err == nil) {
		t.Fatalf("Authenticate returned viewer %v and error %v", v, err)
	}
	if err == nil {
		return nil, c.db.Statements() - n
	}
	return apperr.From(err), c.db.Statements() - n
}

// token issues a token of the admin and returns its secret.
func (c *credentials) token(t *testing.T) string {
	t.Helper()
	_, secret, err := c.svc.CreateToken(c.admin, core.TokenInput{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

// revoked issues a token, uses it, revokes it, and returns its secret.
func (c *credentials) revoked(t *testing.T) string {
	t.Helper()
	tok, secret, err := c.svc.CreateToken(c.admin, core.TokenInput{Name: "revoked"})
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := c.authenticate(t, context.Background(), secret); code != "" {
		t.Fatalf("before revoking: %s", code)
	}
	if _, err := c.svc.RevokeToken(c.admin, tok.ID.String()); err != nil {
		t.Fatal(err)
	}
	return secret
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// forgedSecrets returns n secrets of the checksummed format whose checksum
// fails, random but the same on every run.
func forgedSecrets(n int) []string {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]string, 0, n)
	for len(out) < n {
		b := make([]byte, 32)
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		s := auth.SecretPrefix + base64.RawURLEncoding.EncodeToString(b)
		for range 6 {
			s += string(base62[rng.IntN(62)])
		}
		if auth.BadChecksum(s) {
			out = append(out, s)
		}
	}
	return out
}

// legacySecrets returns n random secrets of an older release's format (no
// checksum), the same on every run.
func legacySecrets(n int, seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, 3))
	out := make([]string, n)
	for i := range out {
		b := make([]byte, 32)
		for j := range b {
			b[j] = byte(rng.IntN(256))
		}
		out[i] = auth.SecretPrefix + base64.RawURLEncoding.EncodeToString(b)
	}
	return out
}

// TestBadChecksumCostsNoLookup: thousands of random secrets of the
// checksummed format whose checksum fails are refused unauthenticated
// without one SQL statement.
func TestBadChecksumCostsNoLookup(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		c := newCredentials(t, db)
		n := db.Statements()
		for _, s := range forgedSecrets(5000) {
			if _, err := c.a.Authenticate(context.Background(), "Bearer "+s); apperr.CodeOf(err) != apperr.Unauthenticated {
				t.Fatalf("%s: %v, want unauthenticated", s, err)
			}
		}
		if got := db.Statements() - n; got != 0 {
			t.Fatalf("5000 forged secrets cost %d statements, want 0", got)
		}
	})
}

// TestEveryFormatAuthenticates: a new secret, an older release's secret
// (no checksum) and an operator's bootstrap token authenticate; a new
// secret with any one character changed is refused with no lookup.
func TestEveryFormatAuthenticates(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		c := newCredentials(t, db)
		legacy := legacySecrets(1, 7)[0]
		for name, secret := range map[string]string{
			"new":       c.boot.Secret,
			"legacy":    legacy,
			"bootstrap": "an-operators-bootstrap-token",
		} {
			t.Run(name, func(t *testing.T) {
				if name != "new" {
					b, err := c.svc.CreateWorkspace(context.Background(), core.NewWorkspace{Name: name, Key: "OLD", AdminName: "A", AdminEmail: "a@old.example", Secret: secret})
					if err != nil {
						t.Fatal(err)
					}
					if b.Secret != secret {
						t.Fatalf("stored %q, want %q", b.Secret, secret)
					}
				}
				if code, _ := c.authenticate(t, context.Background(), secret); code != "" {
					t.Fatalf("%q refused %s", secret, code)
				}
			})
		}
		if len(c.boot.Secret) != auth.SecretLen || auth.BadChecksum(c.boot.Secret) {
			t.Fatalf("a new workspace's secret %q is not of the checksummed format", c.boot.Secret)
		}
		for i := len(auth.SecretPrefix); i < len(c.boot.Secret); i++ {
			flipped := []byte(c.boot.Secret)
			flipped[i] ^= 1 // another character of base64url or base62, or '^' for '_'
			if code, statements := c.authenticate(t, context.Background(), string(flipped)); code != apperr.Unauthenticated || statements != 0 {
				t.Fatalf("%s (character %d changed): %s after %d statements, want unauthenticated after none", flipped, i, code, statements)
			}
		}
	})
}

// TestBootstrapTokenWithBadChecksumRefused: an operator's bootstrap token
// that claims the checksummed format without its checksum would never
// authenticate, so it is refused when the workspace is made.
func TestBootstrapTokenWithBadChecksumRefused(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		_, err := core.New(db.Client).CreateWorkspace(context.Background(), core.NewWorkspace{
			Name: "W", Key: "BAD", AdminName: "A", AdminEmail: "a@bad.example", Secret: forgedSecrets(1)[0]})
		var ae *apperr.Error
		if !errors.As(err, &ae) || ae.Code != apperr.ValidationFailed || len(ae.Fields) != 1 || ae.Fields[0].Field != "token" {
			t.Fatalf("%v: want validation_failed naming token", err)
		}
	})
}

// TestRefusedForGoodCostsOneLookup: a revoked or expired token, or a
// removed member's, is refused disconnected, with the reason, after one
// lookup, then with none and the same reason, however often it is sent
// (with or without a client address); the workspace's other tokens go on.
func TestRefusedForGoodCostsOneLookup(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		c := newCredentials(t, db)
		removed := func(t *testing.T) string {
			m, err := c.svc.AddMember(c.admin, core.MemberInput{Name: core.Some("R"), Email: core.Some("r@crd.example"), Role: core.Some("MEMBER")})
			if err != nil {
				t.Fatal(err)
			}
			_, secret, err := c.svc.CreateToken(c.admin, core.TokenInput{MemberID: m.ID.String(), Name: "r"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.svc.RemoveMember(c.admin, m.ID.String()); err != nil {
				t.Fatal(err)
			}
			return secret
		}
		expired := func(t *testing.T) string {
			exp := c.clock.Now().Add(time.Hour)
			_, secret, err := c.svc.CreateToken(c.admin, core.TokenInput{Name: "e", ExpiresAt: &exp})
			if err != nil {
				t.Fatal(err)
			}
			if code, _ := c.authenticate(t, context.Background(), secret); code != "" {
				t.Fatalf("before it expired: %s", code)
			}
			c.clock.Advance(2 * time.Hour)
			return secret
		}
		for _, tc := range []struct {
			name    string
			refused func(*testing.T) string
			reason  apperr.Reason
		}{
			{"revoked", c.revoked, apperr.TokenRevoked},
			{"removed member", removed, apperr.MemberRemoved},
			{"expired", expired, apperr.TokenExpired},
		} {
			t.Run(tc.name, func(t *testing.T) {
				secret := tc.refused(t)
				for i := range 1000 {
					ctx := context.Background()
					if i%2 == 1 {
						ctx = from(fmt.Sprintf("198.51.100.%d", i%200))
					}
					want := int64(0)
					if i == 0 {
						want = 1
					}
					refusal, statements := c.refusal(t, ctx, secret)
					if refusal == nil || refusal.Code != apperr.Disconnected || refusal.Reason != tc.reason ||
						refusal.Message != apperr.DisconnectedMessage || statements != want {
						t.Fatalf("use %d: %v after %d statements, want disconnected (%s) after %d", i+1, refusal, statements, tc.reason, want)
					}
				}
				if code, _ := c.authenticate(t, context.Background(), c.boot.Secret); code != "" {
					t.Fatalf("the admin's token: %s", code)
				}
			})
		}
	})
}

// TestFailureLimitPerAddress: past its burst of failures, an address's
// requests carrying a credential are refused rate_limited before any
// lookup, a valid token's too, until the bucket refills; other addresses
// are not affected, an IPv6 address shares its /48's bucket, and a request
// without a credential is neither counted nor refused by the limit.
func TestFailureLimitPerAddress(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		c := newCredentials(t, db, auth.WithFailureLimit(auth.FailureLimit{Rate: 5, Burst: 100}))
		attacker := from("203.0.113.1")
		flood := func(t *testing.T, ctx context.Context, secrets []string, allowed int) {
			t.Helper()
			for i, s := range secrets {
				n := db.Statements()
				_, err := c.a.Authenticate(ctx, "Bearer "+s)
				statements := db.Statements() - n
				seconds, hasRetry := auth.RetryAfter(err)
				switch code := apperr.CodeOf(err); {
				case i < allowed && (code != apperr.Unauthenticated || statements != 1):
					t.Fatalf("failure %d of %d allowed: %s after %d statements, want unauthenticated after one lookup", i+1, allowed, code, statements)
				case i >= allowed && (code != apperr.RateLimited || statements != 0 || !hasRetry || seconds != 1):
					t.Fatalf("request %d, past %d failures: %s after %d statements, Retry-After %d; want rate_limited, no lookup, 1 s",
						i+1, allowed, code, statements, seconds)
				}
			}
		}
		flood(t, attacker, legacySecrets(3000, 1), 100)

		valid := c.token(t)
		if code, statements := c.authenticate(t, attacker, valid); code != apperr.RateLimited || statements != 0 {
			t.Fatalf("a valid token from the spent address: %s after %d statements, want rate_limited before any lookup", code, statements)
		}
		for _, addr := range []string{"203.0.113.2", "2001:db8:ff::1"} {
			if code, statements := c.authenticate(t, from(addr), legacySecrets(1, 2)[0]); code != apperr.Unauthenticated || statements != 1 {
				t.Fatalf("an unknown token from %s: %s after %d statements; its address is not spent", addr, code, statements)
			}
			if code, _ := c.authenticate(t, from(addr), valid); code != "" {
				t.Fatalf("a valid token from %s: %s", addr, code)
			}
		}
		if code, _ := c.authenticate(t, from("::ffff:203.0.113.1"), valid); code != apperr.RateLimited {
			t.Fatalf("the spent address, IPv4-mapped: %s, want rate_limited", code)
		}
		if _, err := c.a.Authenticate(attacker, ""); apperr.CodeOf(err) != apperr.Unauthenticated {
			t.Fatalf("no credential from the spent address: %v, want unauthenticated", err)
		}

		// IPv6: the /48 is one bucket, whichever of its /64s sends.
		flood(t, from("2001:db8:0:7::1"), legacySecrets(150, 3), 100)
		if code, _ := c.authenticate(t, from("2001:db8:0:7:ffff::2"), valid); code != apperr.RateLimited {
			t.Fatalf("another address of the spent /64: %s, want rate_limited", code)
		}
		if code, _ := c.authenticate(t, from("2001:db8:0:8::1"), valid); code != apperr.RateLimited {
			t.Fatalf("another /64 of the spent /48: %s, want rate_limited", code)
		}
		if code, _ := c.authenticate(t, from("2001:db8:1::1"), valid); code != "" {
			t.Fatalf("an address of the next /48: %s", code)
		}

		// Five failures a second refill the bucket.
		c.clock.Advance(time.Second)
		flood(t, attacker, legacySecrets(20, 4), 5)
		c.clock.Advance(20 * time.Second)
		if code, _ := c.authenticate(t, attacker, valid); code != "" {
			t.Fatalf("the address refilled: %s", code)
		}
		flood(t, attacker, legacySecrets(120, 5), 100)
	})
}

// TestFailureLimitRefusals: failures of every kind (malformed header,
// failed checksum, unknown token, token refused for good) spend the
// address's bucket; Retry-After is the wait for one failure, rounded up.
func TestFailureLimitRefusals(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		c := newCredentials(t, db, auth.WithFailureLimit(auth.FailureLimit{Rate: 0.3, Burst: 4}))
		addr := from("192.0.2.9")
		for i, header := range []string{"Basic abc", "Bearer " + forgedSecrets(1)[0], "Bearer " + legacySecrets(1, 6)[0], "Bearer " + c.revoked(t)} {
			if _, err := c.a.Authenticate(addr, header); apperr.CodeOf(err) == apperr.RateLimited {
				t.Fatalf("failure %d refused rate_limited within the burst", i+1)
			}
		}
		_, err := c.a.Authenticate(addr, "Bearer "+c.boot.Secret)
		if seconds, ok := auth.RetryAfter(err); apperr.CodeOf(err) != apperr.RateLimited || !ok || seconds != 4 {
			t.Fatalf("past the burst: %v, Retry-After %d; want rate_limited, 4 s (1 failure at 0.3 a second)", err, seconds)
		}
		if _, ok := auth.RetryAfter(apperr.New(apperr.RateLimited, "another limit")); ok {
			t.Fatal("RetryAfter read another error")
		}
		c.clock.Advance(3 * time.Second) // 0.9 failures: not yet
		if _, err := c.a.Authenticate(addr, "Bearer "+c.boot.Secret); apperr.CodeOf(err) != apperr.RateLimited {
			t.Fatalf("after 3 s: %v", err)
		}
		c.clock.Advance(400 * time.Millisecond)
		if _, err := c.a.Authenticate(addr, "Bearer "+c.boot.Secret); err != nil {
			t.Fatalf("after 3.4 s: %v", err)
		}
	})
}

// TestSuccessesCostNothing: however many times a client authenticates, its
// address keeps its whole burst of failures, and no bucket is kept for it.
func TestSuccessesCostNothing(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		c := newCredentials(t, db, auth.WithFailureLimit(auth.FailureLimit{Rate: 5, Burst: 100}))
		office := from("198.51.100.20")
		for i := range 500 {
			if code, _ := c.authenticate(t, office, c.boot.Secret); code != "" {
				t.Fatalf("authentication %d: %s", i+1, code)
			}
		}
		if addresses, _ := c.a.Tracked(); addresses != 0 {
			t.Fatalf("%d addresses kept after successes only, want 0", addresses)
		}
		for i, s := range legacySecrets(101, 8) {
			code, _ := c.authenticate(t, office, s)
			if want := apperr.Unauthenticated; i == 100 {
				if code != apperr.RateLimited {
					t.Fatalf("failure 101: %s, want rate_limited", code)
				}
			} else if code != want {
				t.Fatalf("failure %d: %s, want %s", i+1, code, want)
			}
		}
	})
}

// TestConcurrentFailuresStopAtTheBurst: many requests of one address at one
// instant reach the database only for its burst, however many run at once.
func TestConcurrentFailuresStopAtTheBurst(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		c := newCredentials(t, db, auth.WithFailureLimit(auth.FailureLimit{Rate: 5, Burst: 50}))
		addr := from("192.0.2.77")
		secrets := legacySecrets(400, 9)
		codes := make([]apperr.Code, len(secrets))
		n := db.Statements()
		var wg sync.WaitGroup
		for i, s := range secrets {
			wg.Go(func() {
				_, err := c.a.Authenticate(addr, "Bearer "+s)
				codes[i] = apperr.CodeOf(err)
			})
		}
		wg.Wait()
		count := map[apperr.Code]int{}
		for _, code := range codes {
			count[code]++
		}
		if count[apperr.Unauthenticated] != 50 || count[apperr.RateLimited] != 350 || db.Statements()-n != 50 {
			t.Fatalf("answers %v after %d statements; want 50 unauthenticated after 50 lookups, 350 rate_limited", count, db.Statements()-n)
		}
	})
}

// TestFailureLimitOff: without a failure limit (or without a client
// address) nothing is refused rate_limited and no address is kept.
func TestFailureLimitOff(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		limited := newCredentials(t, db, auth.WithFailureLimit(auth.FailureLimit{Rate: 5, Burst: 10}))
		off := auth.New(db)
		for i, s := range legacySecrets(200, 10) {
			for _, try := range []struct {
				a   *auth.Authenticator
				ctx context.Context
			}{{off, from("192.0.2.1")}, {limited.a, context.Background()}} {
				if _, err := try.a.Authenticate(try.ctx, "Bearer "+s); apperr.CodeOf(err) != apperr.Unauthenticated {
					t.Fatalf("failure %d: %v, want unauthenticated", i+1, err)
				}
			}
		}
		if addresses, _ := limited.a.Tracked(); addresses != 0 {
			t.Fatalf("%d addresses kept, want 0", addresses)
		}
	})
}

// TestCredentialMemoryIsBounded: more failing addresses, and more secrets
// refused for good, than the caps keep: the least recent are dropped (a
// dropped refused secret costs one lookup again).
func TestCredentialMemoryIsBounded(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		c := newCredentials(t, db, auth.WithFailureLimit(auth.FailureLimit{Rate: 5, Burst: 3}),
			auth.WithMaxAddresses(16), auth.WithMaxRefused(2))
		for i := range 1000 {
			ctx := from(fmt.Sprintf("10.%d.%d.1", i/250, i%250))
			if code, _ := c.authenticate(t, ctx, legacySecrets(1, uint64(i))[0]); code != apperr.Unauthenticated {
				t.Fatalf("address %d: %s", i, code)
			}
			if addresses, _ := c.a.Tracked(); addresses > 16 {
				t.Fatalf("%d addresses kept, more than the 16 allowed", addresses)
			}
		}
		revoked := []string{c.revoked(t), c.revoked(t), c.revoked(t)}
		for _, s := range revoked {
			if code, statements := c.authenticate(t, context.Background(), s); code != apperr.Disconnected || statements != 1 {
				t.Fatalf("first refusal: %s after %d statements", code, statements)
			}
		}
		if _, refused := c.a.Tracked(); refused != 2 {
			t.Fatalf("%d refused secrets kept, want the cap, 2", refused)
		}
		if _, statements := c.authenticate(t, context.Background(), revoked[2]); statements != 0 {
			t.Fatalf("the latest refused secret cost %d statements, want 0", statements)
		}
		if _, statements := c.authenticate(t, context.Background(), revoked[0]); statements != 1 {
			t.Fatalf("the dropped refused secret cost %d statements, want 1", statements)
		}
	})
}

// TestRecheckIsNotLimited: an open subscription re-checking its credential
// (a context marked by auth.Recheck) from an address whose failures are
// spent is answered as if there were no limit, so a revocation ends it
// rather than a rate_limited answer keeping it open; the recheck costs the
// address nothing.
func TestRecheckIsNotLimited(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		c := newCredentials(t, db, auth.WithFailureLimit(auth.FailureLimit{Rate: 5, Burst: 2}))
		secret := c.token(t)
		addr := from("192.0.2.40")
		v, err := c.a.Authenticate(addr, "Bearer "+secret)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range legacySecrets(3, 11) {
			_, _ = c.a.Authenticate(addr, "Bearer "+s)
		}
		if code, _ := c.authenticate(t, addr, secret); code != apperr.RateLimited {
			t.Fatalf("a new request of the spent address: %s, want rate_limited", code)
		}
		recheck := auth.Recheck(viewer.NewContext(addr, v))
		if code, statements := c.authenticate(t, recheck, secret); code != "" || statements != 1 {
			t.Fatalf("recheck: %s after %d statements, want the viewer after one lookup", code, statements)
		}
		if code, _ := c.authenticate(t, recheck, c.revoked(t)); code != apperr.Disconnected {
			t.Fatalf("recheck of a revoked token: %s, want disconnected", code)
		}
		// A context that merely carries a viewer is not a re-check.
		if code, _ := c.authenticate(t, viewer.NewContext(addr, v), secret); code != apperr.RateLimited {
			t.Fatalf("an unmarked context with a viewer: %s, want rate_limited", code)
		}
		if code, _ := c.authenticate(t, addr, secret); code != apperr.RateLimited {
			t.Fatalf("the rechecks gave the address failures back: %s, want rate_limited", code)
		}
	})
}
