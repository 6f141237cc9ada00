// Package auth turns bearer tokens into viewers.
//
// Secrets look like pms_<43 base64url characters> (256 random bits) and are
// stored only as their SHA-256, so a database leak discloses no usable token.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
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
	"github.com/procsvc/procsvc/internal/viewer"
)

// SecretPrefix starts every token secret, so leaked secrets are easy to scan for.
const SecretPrefix = "pms_"

// NewSecret returns a fresh secret and the hash to store.
func NewSecret() (secret, hash string) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("auth: no randomness: " + err.Error())
	}
	secret = SecretPrefix + base64.RawURLEncoding.EncodeToString(b)
	return secret, Hash(secret)
}

// Hash returns the stored form of secret.
func Hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// ValidSecret reports whether s has the shape of a secret this package makes,
// or of a bootstrap token an operator chose (16–200 visible ASCII characters).
func ValidSecret(s string) bool {
	if len(s) < 16 || len(s) > 200 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

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

// New returns an Authenticator over db.
func New(db *database.DB, opts ...Option) *Authenticator {
	a := &Authenticator{db: db, now: func() time.Time { return time.Now().UTC() }, log: slog.Default()}
	for _, o := range opts {
		o(a)
	}
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
// statement (token, member and workspace joined).
// Errors: unauthenticated (missing, malformed or unknown token), disconnected
// (expired or revoked token, or removed member).
func (a *Authenticator) Authenticate(ctx context.Context, header string) (*viewer.Viewer, error) {
	secret, err := ParseBearer(header)
	if err != nil {
		return nil, err
	}
	var rows entsql.Rows
	if err := a.db.Driver().Query(ctx, a.lookup, []any{Hash(secret)}, &rows); err != nil {
		return nil, apperr.Map(err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, apperr.Map(err)
		}
		return nil, apperr.New(apperr.Unauthenticated, "unknown token")
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
	if revoked.Valid || gone.Valid || (expires.Valid && !expires.Time.After(now)) {
		return nil, apperr.New(apperr.Disconnected, apperr.DisconnectedMessage)
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
