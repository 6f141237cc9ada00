// Package auth turns bearer tokens into viewers.
//
// Secrets look like pms_<43 base64url characters: 256 random bits><6 base62
// characters: a CRC32 checksum> and are stored only as their SHA-256, so a
// database leak discloses no usable token. What a refused credential costs
// is bounded (docs/api.md, "Authentication"): a secret whose checksum fails
// costs no lookup, nor does one refused disconnected before (refusedSecrets),
// and each client address has a budget of failures (failureLimiter) past
// which its requests are refused before any lookup.
package auth

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"log/slog"
	"strings"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	"github.com/procsvc/procsvc/ent/token"
	"github.com/procsvc/procsvc/ent/workspace"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/identity"
	"github.com/procsvc/procsvc/internal/viewer"
)

// lastUsedGranularity bounds how often a token's lastUsedAt is written: a
// busy client must not turn every read into a write.
const lastUsedGranularity = time.Minute

// TouchLockWait bounds how long recording a token's use may wait for a lock
// (the workspace row, which every write holds while it runs). Past it the
// write is skipped, the request goes on, and a later request records the
// use: a transaction left open on the workspace must not hold up reads.
const TouchLockWait = 100 * time.Millisecond

// Authenticator resolves Authorization headers against the token table.
type Authenticator struct {
	db  *database.DB
	now func() time.Time
	log *slog.Logger
	// lookup is the statement of Authenticate, built once: its one
	// argument is the secret's hash.
	lookup string

	failureLimit FailureLimit
	maxAddresses int
	// failures is nil when failures are not limited.
	failures *failureLimiter
	refused  *refusedSecrets
	// oidc, when set, verifies identity providers' tokens (WithOIDC).
	oidc identity.Verifier
}

// Option configures an Authenticator.
type Option func(*Authenticator)

// WithLogger sets where skipped lastUsedAt writes are reported (default
// slog.Default()).
func WithLogger(log *slog.Logger) Option {
	return func(a *Authenticator) {
		if log != nil {
			a.log = log
		}
	}
}

// WithFailureLimit limits the failed authentications of each client
// address (none by default): see FailureLimit.
func WithFailureLimit(l FailureLimit) Option {
	return func(a *Authenticator) { a.failureLimit = l }
}

// WithClock makes the Authenticator read the time from now instead of the
// system clock: expiry, lastUsedAt and the failure limit's refill (tests
// hold a clock of their own).
func WithClock(now func() time.Time) Option {
	return func(a *Authenticator) { a.now = func() time.Time { return now().UTC() } }
}

// WithMaxAddresses bounds the client addresses whose failures are kept
// (DefaultMaxAddresses otherwise).
func WithMaxAddresses(n int) Option { return func(a *Authenticator) { a.maxAddresses = n } }

// WithMaxRefused bounds the secrets remembered as refused for good
// (DefaultMaxRefused otherwise).
func WithMaxRefused(n int) Option {
	return func(a *Authenticator) { a.refused = newRefusedSecrets(n) }
}

// New returns an Authenticator over db.
func New(db *database.DB, opts ...Option) *Authenticator {
	a := &Authenticator{db: db, now: func() time.Time { return time.Now().UTC() }, log: slog.Default(),
		maxAddresses: DefaultMaxAddresses}
	for _, o := range opts {
		o(a)
	}
	if a.refused == nil {
		a.refused = newRefusedSecrets(DefaultMaxRefused)
	}
	a.failures = newFailureLimiter(a.failureLimit, a.maxAddresses)
	a.lookup = lookupQuery(db.Dialect)
	return a
}

// lookupQuery is the statement that reads a token's viewer (token, member
// and workspace joined) by the secret's hash, its one argument.
func lookupQuery(dialect string) string {
	b := entsql.Dialect(dialect)
	t, m, w := b.Table("tokens").As("t"), b.Table("members").As("m"), b.Table("workspaces").As("w")
	query, _ := b.Select(
		t.C("id"), t.C("workspace_id"), t.C("member_id"), t.C("expires_at"), t.C("revoked_at"), t.C("last_used_at"),
		m.C("role"), m.C("removed_at"), w.C("version"),
	).From(t).
		Join(m).On(t.C("member_id"), m.C("id")).
		Join(w).On(t.C("workspace_id"), w.C("id")).
		Where(entsql.EQ(t.C("secret_hash"), "")).
		Query()
	return query
}

// errUnknown is the refusal of a credential nobody issued, a fresh error
// each time (callers may annotate what they are given); apperr.Disconnect is
// that of one that no longer holds.
func errUnknown() error { return apperr.New(apperr.Unauthenticated, "unknown token") }

// disconnectReason is why a token that was issued no longer authenticates,
// or "" if it still does. A removed member's tokens are revoked with it, so
// the removal is named first: it is what the holder needs to hear.
func disconnectReason(revoked, expires, memberRemoved sql.NullTime, now time.Time) apperr.Reason {
	switch {
	case memberRemoved.Valid:
		return apperr.MemberRemoved
	case revoked.Valid:
		return apperr.TokenRevoked
	case expires.Valid && !expires.Time.After(now):
		return apperr.TokenExpired
	}
	return ""
}

// ParseBearer extracts the secret of an "Authorization: Bearer <secret>" header.
// Errors: unauthenticated.
func ParseBearer(header string) (string, error) {
	if header == "" {
		return "", apperr.New(apperr.Unauthenticated, "missing bearer token: send Authorization: Bearer <token>")
	}
	scheme, secret, ok := strings.Cut(header, " ")
	secret = strings.TrimSpace(secret)
	if !ok || !strings.EqualFold(scheme, "Bearer") || !ValidSecret(secret) {
		return "", apperr.New(apperr.Unauthenticated, "malformed Authorization header: expected Bearer <token>")
	}
	return secret, nil
}

// Authenticate returns the viewer of an Authorization header in one
// statement (token, member and workspace joined). A request of a client
// address (WithClientAddress) that carries a credential counts against its
// FailureLimit when refused, and is refused rate_limited, before any
// lookup, while that address's failures are spent. A re-check of an open
// subscription's credential (see Recheck) is neither counted nor refused
// by the limit, so that a revocation always ends the subscription (refused
// rate_limited, it would stay open on the revoked token).
// With WithOIDC, a bearer that is not a pms_ token is an identity
// provider's (authenticateIdentity), under the same failure limit.
// Errors: unauthenticated (missing, malformed or unknown token, or a
// checksum that fails; a provider token refused, or a person with no
// member), disconnected (expired or revoked token, or removed member),
// rate_limited (RetryAfter says for how long), unavailable (a provider
// that did not answer).
func (a *Authenticator) Authenticate(ctx context.Context, header string) (*viewer.Viewer, error) {
	addr, limited := ClientAddress(ctx)
	// A request without a credential costs nothing to refuse, and is
	// what a browser sends first: it is never counted.
	if !limited || a.failures == nil || header == "" || rechecking(ctx) {
		return a.authenticate(ctx, header)
	}
	key, now := failureKey(addr), a.now()
	if wait, ok := a.failures.reserve(key, now); !ok {
		return nil, tooManyFailures(wait)
	}
	v, err := a.authenticate(ctx, header)
	if err == nil || !refusesCredential(err) {
		// Authenticated, or the database did not answer: not the
		// client's failure.
		a.failures.release(key, now)
	}
	return v, err
}

type recheckKey struct{}

// Recheck marks ctx as the re-check of a credential that authenticated
// before, when a subscription opened: Authenticate then bypasses the
// failure limit, whose rate_limited answer would keep a revoked token's
// subscription open. Every re-check of an open subscription's credential
// must be marked (graph's reauthenticate is).
func Recheck(ctx context.Context) context.Context {
	return context.WithValue(ctx, recheckKey{}, true)
}

// rechecking reports whether Recheck marked ctx.
func rechecking(ctx context.Context) bool {
	marked, _ := ctx.Value(recheckKey{}).(bool)
	return marked
}

// refusesCredential reports whether err refuses the credential itself,
// which is the client's failure.
func refusesCredential(err error) bool {
	c := apperr.CodeOf(err)
	return c == apperr.Unauthenticated || c == apperr.Disconnected
}

// authenticate is Authenticate without the failure limit.
func (a *Authenticator) authenticate(ctx context.Context, header string) (*viewer.Viewer, error) {
	if a.oidc != nil {
		if token, ok := providerToken(header); ok {
			return a.authenticateIdentity(ctx, token)
		}
	}
	secret, err := ParseBearer(header)
	if err != nil {
		return nil, err
	}
	if BadChecksum(secret) {
		return nil, errUnknown()
	}
	sum := sha256.Sum256([]byte(secret))
	if reason, ok := a.refused.reason(sum); ok {
		return nil, apperr.Disconnect(reason)
	}
	var rows entsql.Rows
	if err := a.db.Driver().Query(ctx, a.lookup, []any{hex.EncodeToString(sum[:])}, &rows); err != nil {
		return nil, apperr.Map(err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, apperr.Map(err)
		}
		return nil, errUnknown()
	}
	var (
		v                            viewer.Viewer
		expires, revoked, used, gone sql.NullTime
		role                         string
	)
	if err := rows.Scan(&v.TokenID, &v.WorkspaceID, &v.MemberID, &expires, &revoked, &used, &role, &gone, &v.WorkspaceVersion); err != nil {
		return nil, apperr.Map(err)
	}
	rows.Close()
	now := a.now()
	if reason := disconnectReason(revoked, expires, gone, now); reason != "" {
		a.refused.add(sum, reason)
		return nil, apperr.Disconnect(reason)
	}
	v.Role = viewer.Role(role)
	v.VersionKnown = true
	if expires.Valid {
		v.ExpiresAt = expires.Time
	}
	if !used.Valid || now.Sub(used.Time) > lastUsedGranularity {
		// lastUsedAt is workspace data (the tokens list shows it), so its
		// change bumps the version like any write; this request then uses
		// no version-keyed cache (whether or not the bump committed: a
		// failed commit may have).
		v.VersionKnown = false
		if err := a.touch(ctx, &v, now); err != nil {
			// Bookkeeping only: the request goes on, and the next one
			// within the minute tries again.
			a.log.WarnContext(ctx, "token use not recorded", "token_id", v.TokenID.String(),
				"code", apperr.CodeOf(err), "error", err.Error())
		}
	}
	return &v, nil
}

// touch records the token's use at now and bumps the workspace version, in
// one transaction that locks the workspace row first (what core's version
// bumps take, so versions stay in commit order; it changes no record a
// write of the core reads, so it needs not the workspace's write lock) and
// gives up after TouchLockWait rather than wait behind another transaction.
func (a *Authenticator) touch(ctx context.Context, v *viewer.Viewer, now time.Time) error {
	return a.db.TryWrite(ctx, TouchLockWait, func(ctx context.Context, tx dialect.Tx) error {
		b := entsql.Dialect(a.db.Dialect)
		query, args := b.Update(workspace.Table).Add(workspace.FieldVersion, 1).
			Where(entsql.EQ(workspace.FieldID, v.WorkspaceID)).Query()
		if err := tx.Exec(ctx, query, args, nil); err != nil {
			return err
		}
		query, args = b.Update(token.Table).Set(token.FieldLastUsedAt, now).
			Where(entsql.EQ(token.FieldID, v.TokenID)).Query()
		return tx.Exec(ctx, query, args, nil)
	})
}
