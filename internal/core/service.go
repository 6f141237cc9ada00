// Package core is procsvc's business layer: every rule about procedures,
// projects, categories, comments, members and tokens lives here once, and
// both faces (GraphQL resolvers and, through them, REST) call it.
//
// Tenancy is not checked here: the ent schema scopes every query and
// mutation to the viewer's workspace. Roles, validation, shortIds, positions
// and delete rules are.
package core

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"entgo.io/ent/dialect"
	"entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/member"
	"github.com/procsvc/procsvc/ent/predicate"
	"github.com/procsvc/procsvc/ent/token"
	"github.com/procsvc/procsvc/ent/workspace"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/limits"
	"github.com/procsvc/procsvc/internal/viewer"
)

// Generator produces a procedure's content at creation (see internal/generate).
type Generator interface {
	Generate(ctx context.Context, req GenerateRequest) (string, error)
}

// GenerateRequest is what a Generator is given.
type GenerateRequest struct {
	Name        string
	Content     string
	ContentType string
	DocStyle    string
	Language    string
}

// Service is the business layer over one ent client.
type Service struct {
	client    *ent.Client
	generator Generator
	now       func() time.Time
	totals    *totals
	announcer Announcer
	// beforeTx, when set, runs where a write waits for its workspace lock:
	// after the checks made before the transaction, before it begins.
	// Tests commit a concurrent change there (see export_test.go).
	beforeTx func(ctx context.Context)
}

// Option configures a Service.
type Option func(*Service)

// WithGenerator sets the content generator used when generateProcedure is true.
func WithGenerator(g Generator) Option { return func(s *Service) { s.generator = g } }

// WithClock replaces the clock, for tests.
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// New returns a Service over client.
func New(client *ent.Client, opts ...Option) *Service {
	s := &Service{client: client, totals: newTotals(), now: func() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }}
	for _, o := range opts {
		o(s)
	}
	return s
}

// require returns the viewer of ctx if its role is at least min.
// Errors: unauthenticated, forbidden.
func require(ctx context.Context, min viewer.Role) (*viewer.Viewer, error) {
	v := viewer.FromContext(ctx)
	if v == nil {
		return nil, apperr.New(apperr.Unauthenticated, "authentication required")
	}
	if !v.Role.AtLeast(min) {
		return nil, apperr.New(apperr.Forbidden, "this action needs the %s role", min)
	}
	return v, nil
}

// inTx runs fn in a transaction that first bumps the workspace's version
// (lockExclusive; see lockMode for the field updates that share the lock).
//
// The bump is the transaction's first statement and takes the workspace
// row's write lock, so writes inside one workspace are serialised (shortIds
// and positions cannot race) and any cache keyed by the version is
// invalidated atomically with the write. On PostgreSQL the UPDATE takes the
// row lock, and every later statement (READ COMMITTED) sees what was
// committed before it was granted. On SQLite the DSN sets _txlock=immediate,
// so the transaction begins with BEGIN IMMEDIATE: the database's write lock
// is taken before any read, and concurrent writers wait on busy_timeout
// instead of failing (see internal/database).
//
// After the lock, the transaction's second statement re-reads the acting
// member (and, for a token viewer, the token): a member removed or a token
// revoked while the request waited answers disconnected, like
// authentication would now; a member whose role fell below min answers
// forbidden. fn receives the viewer with the role as of the lock. The
// re-read is a statement of its own (actingViewer), or a subquery of the
// first read a write needs anyway (actingRole: the workspace's numbering for
// inNumberingTx, the procedure written for inProcedureTx), which saves that
// write a round trip made while it holds the lock. It is never folded into
// the lock statement itself: on PostgreSQL that statement's snapshot
// predates the wait for the lock, so it would read the member as it was
// before the writes it waited for.
//
// Everything a write stores must be derived from what fn reads through tx,
// never from rows read before inTx: updatedAt (nextUpdatedAt of the row as
// of the lock), state and project for positions, preconditions, and the
// references a body names (checkRefs in the transaction). Reads made before
// inTx only answer early (not_found, validation) and may be stale by the
// time the lock is granted.
func (s *Service) inTx(ctx context.Context, v *viewer.Viewer, min viewer.Role, fn func(tx *ent.Tx, me *viewer.Viewer) error) error {
	return s.lockedTx(ctx, v, lockExclusive,
		func(tx *ent.Tx) (*viewer.Viewer, error) { return actingViewer(ctx, tx, v, min) },
		func(tx *ent.Tx, me *viewer.Viewer) error { return fn(tx, me) })
}

// stored is inTx for a write that returns the record it stores: write's
// record, unwrapped from the transaction once it has committed.
func stored[T interface{ Unwrap() T }](ctx context.Context, s *Service, v *viewer.Viewer, min viewer.Role,
	write func(tx *ent.Tx, me *viewer.Viewer) (T, error)) (T, error) {
	var rec T
	err := s.inTx(ctx, v, min, func(tx *ent.Tx, me *viewer.Viewer) error {
		var err error
		rec, err = write(tx, me)
		return err
	})
	if err != nil {
		var none T
		return none, err
	}
	return rec.Unwrap(), nil
}

// inNumberingTx is inTx for a write that hands out the workspace's next
// procedure number: the same first statement also adds one to procedure_seq,
// and fn receives the workspace's key and new procedure_seq as of it (a
// rolled-back write hands nothing out; a committed number is never reused).
// The acting member is re-read by the statement that reads them.
func (s *Service) inNumberingTx(ctx context.Context, v *viewer.Viewer, min viewer.Role, fn func(tx *ent.Tx, me *viewer.Viewer, ws *ent.Workspace) error) error {
	var ws *ent.Workspace
	return s.lockedTx(ctx, v, lockNumbering,
		func(tx *ent.Tx) (me *viewer.Viewer, err error) {
			q := tx.Workspace.Query().Where(workspace.ID(v.WorkspaceID))
			q.Select(workspace.FieldKey, workspace.FieldProcedureSeq).Modify(withActingRole(v))
			if ws, err = q.Only(ctx); err != nil {
				return nil, err
			}
			return actingAs(v, min, ws.Value)
		},
		func(tx *ent.Tx, me *viewer.Viewer) error { return fn(tx, me, ws) })
}

// lockMode is how a write's transaction takes its workspace's lock.
type lockMode uint8

const (
	// lockExclusive: the workspace's lock is held exclusively until
	// commit (lockWorkspace), and the version is bumped at once; no other
	// write of the workspace runs meanwhile.
	lockExclusive lockMode = iota
	// lockNumbering is lockExclusive that also adds one to procedure_seq.
	lockNumbering
	// lockShared is for a write of one procedure's fields that reads no
	// other procedure (UpdateProcedure on PostgreSQL, unless it places the
	// procedure at the end of a column). It holds the workspace's lock
	// shared — excluding every exclusive write but not other shared ones —
	// then locks its procedure's row, and bumps the version only in its
	// last statement (fieldsChanged), so shared writes of a workspace queue
	// for each other only from there to their commit.
	lockShared
)

// lockedTx runs a write's transaction: the lock statement (see lockMode),
// then acting, which must re-read the acting member in the transaction's
// next statement (see inTx) and returns the viewer as of the lock, then fn.
// It commits only if both succeed.
//
// Deadlock-free: an exclusive write holds the workspace's lock before any
// row and excludes every other write; shared writes hold the lock shared,
// then at most one procedure row, then (the bump) the workspace row, which
// one of them holds at a time, and then the tally rows, which nothing takes
// first. The token bookkeeping (internal/auth) takes only the workspace
// row, then its token's.
func (s *Service) lockedTx(ctx context.Context, v *viewer.Viewer, mode lockMode,
	acting func(tx *ent.Tx) (*viewer.Viewer, error), fn func(tx *ent.Tx, me *viewer.Viewer) error) error {
	if s.beforeTx != nil {
		s.beforeTx(ctx)
	}
	tx, err := s.client.Tx(ctx)
	if err != nil {
		return apperr.Map(err)
	}
	err = func() error {
		if err := lockWorkspace(ctx, tx, v.WorkspaceID, mode); err != nil {
			return err
		}
		me, err := acting(tx)
		if err != nil {
			return err
		}
		return fn(tx, me)
	}()
	if err != nil {
		_ = tx.Rollback()
		return apperr.Map(err)
	}
	if err := tx.Commit(); err != nil {
		return apperr.Map(err)
	}
	return nil
}

// lockWorkspace takes the workspace's lock as mode says, in a write
// transaction's first statement, which also bumps its version unless mode
// is lockShared (whose last statement bumps it: fieldsChanged). A missing
// workspace answers disconnected.
//
// On PostgreSQL the lock is a transaction-level advisory lock keyed by the
// workspace (database.WorkspaceLockKey), shared for lockShared and
// exclusive otherwise. Unlike row locks, PostgreSQL queues advisory lock
// requests fairly: a shared request waits behind an exclusive one already
// waiting, so a stream of field updates cannot starve a move or a member's
// removal (a row's FOR KEY SHARE would be granted past a waiting FOR
// UPDATE), and a write waits once, for as long as lock_timeout allows. An
// exclusive write takes it in a CTE of its bump, which PostgreSQL runs as
// a one-time filter before it reads, let alone locks, the workspace row.
// The bump takes that row, which orders the bumps of field updates and of
// the token bookkeeping (internal/auth). On SQLite the transaction's BEGIN
// IMMEDIATE is the lock.
func lockWorkspace(ctx context.Context, tx *ent.Tx, workspaceID uuid.UUID, mode lockMode) error {
	key := database.WorkspaceLockKey(workspaceID)
	if mode == lockShared {
		var rows []struct {
			ID     uuid.UUID `json:"id"`
			Locked []byte    `json:"locked"` // pg_advisory_xact_lock_shared returns void
		}
		err := tx.Workspace.Query().Where(workspace.ID(workspaceID)).Modify(func(s *sql.Selector) {
			s.Select(s.C(workspace.FieldID))
			if s.Dialect() == dialect.Postgres {
				s.AppendSelectExprAs(sql.ExprFunc(func(b *sql.Builder) {
					b.WriteString("pg_advisory_xact_lock_shared(").Arg(key).WriteString(")")
				}), "locked")
			}
		}).Scan(ctx, &rows)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			return apperr.New(apperr.Disconnected, apperr.DisconnectedMessage)
		}
		return nil
	}
	bump := tx.Workspace.Update().Where(workspace.ID(workspaceID)).AddVersion(1)
	if mode == lockNumbering {
		bump.AddProcedureSeq(1)
	}
	n, err := bump.Modify(func(u *sql.UpdateBuilder) {
		if u.Dialect() != dialect.Postgres {
			return
		}
		u.Prefix(sql.ExprFunc(func(b *sql.Builder) {
			b.WriteString(`WITH "workspace_lock" AS MATERIALIZED (SELECT pg_advisory_xact_lock(`).Arg(key).WriteString("))")
		}))
		u.Where(sql.Exists(sql.Expr(`SELECT 1 FROM "workspace_lock"`)))
	}).Save(ctx)
	if err != nil {
		return err
	}
	if n == 0 {
		return apperr.New(apperr.Disconnected, apperr.DisconnectedMessage)
	}
	return nil
}

// actingViewer re-reads v's member (and token, when v has one) inside a
// write transaction, in one statement: the member must still belong to the
// workspace with a role of at least min, and the token must not be revoked.
// Errors: disconnected (removed member, revoked token), forbidden.
func actingViewer(ctx context.Context, tx *ent.Tx, v *viewer.Viewer, min viewer.Role) (*viewer.Viewer, error) {
	roles, err := tx.Member.Query().Where(actingMember(v)...).Select(member.FieldRole).Strings(ctx)
	if err != nil {
		return nil, err
	}
	return actingAs(v, min, func(string) (ent.Value, error) {
		if len(roles) == 0 {
			return nil, nil
		}
		return roles[0], nil
	})
}

// actingMember selects v's member if it is still the acting member: not
// removed, and (for a token viewer) holding v's token unrevoked.
func actingMember(v *viewer.Viewer) []predicate.Member {
	ps := []predicate.Member{member.ID(v.MemberID), member.RemovedAtIsNil()}
	if v.TokenID != uuid.Nil {
		ps = append(ps, member.HasTokensWith(token.ID(v.TokenID), token.RevokedAtIsNil()))
	}
	return ps
}

// actingRoleColumn is the column under which a read carries actingRole.
const actingRoleColumn = "acting_role"

// withActingRole adds actingRole to a read of the write's transaction: a
// query modifier, read back with actingAs(v, min, row.Value).
func withActingRole(v *viewer.Viewer) func(*sql.Selector) {
	return func(s *sql.Selector) { s.AppendSelectExprAs(actingRole(s.Dialect(), v), actingRoleColumn) }
}

// actingRole is v's role as of the statement that runs it, or empty unless
// actingMember holds: actingViewer's read, as a column of another read (a
// scalar subquery; never NULL, which ent cannot scan from SQLite into an
// untyped column). A subquery does not pass through the tenancy
// interceptor, so it names v's workspace itself, as the interceptor would.
func actingRole(dialect string, v *viewer.Viewer) sql.Querier {
	t := sql.Table(member.Table)
	sel := sql.Dialect(dialect).Select(t.C(member.FieldRole)).From(t)
	for _, p := range append(actingMember(v), member.WorkspaceID(v.WorkspaceID)) {
		p(sel)
	}
	return sql.ExprFunc(func(b *sql.Builder) { b.WriteString("COALESCE((").Join(sel).WriteString("), '')") })
}

// actingAs is v with the role value reads under actingRoleColumn (nil or
// empty: no acting member). Errors: disconnected (removed member, revoked
// token), forbidden (a role below min).
func actingAs(v *viewer.Viewer, min viewer.Role, value func(string) (ent.Value, error)) (*viewer.Viewer, error) {
	raw, err := value(actingRoleColumn)
	if err != nil {
		return nil, err
	}
	var role string
	switch r := raw.(type) {
	case nil:
	case string:
		role = r
	case []byte:
		role = string(r)
	default:
		return nil, fmt.Errorf("core: acting role read as %T", raw)
	}
	if role == "" {
		return nil, apperr.New(apperr.Disconnected, apperr.DisconnectedMessage)
	}
	me := *v
	me.Role = viewer.Role(role)
	if !me.Role.AtLeast(min) {
		return nil, apperr.New(apperr.Forbidden, "this action needs the %s role", min)
	}
	return &me, nil
}

// lookupID parses an id in a path or argument position: one that cannot name
// a record of kind is simply not found.
func lookupID(kind ids.Kind, what, s string) (uuid.UUID, error) {
	id, err := ids.Parse(s)
	if err != nil || ids.KindOf(id) != kind {
		return uuid.Nil, apperr.NotFoundf(what)
	}
	return id, nil
}

// target returns the acting viewer, of role min at least, and the id of the
// record of kind that id names, for a read or a write of that record.
// Errors: unauthenticated, forbidden, not_found.
func target(ctx context.Context, min viewer.Role, kind ids.Kind, what, id string) (*viewer.Viewer, uuid.UUID, error) {
	v, err := require(ctx, min)
	if err != nil {
		return nil, uuid.Nil, err
	}
	uid, err := lookupID(kind, what, id)
	if err != nil {
		return nil, uuid.Nil, err
	}
	return v, uid, nil
}

// getOne reads the record of kind that id names, for any viewer.
// Errors: unauthenticated, not_found.
func getOne[T any](ctx context.Context, kind ids.Kind, what, id string, get func(context.Context, uuid.UUID) (T, error)) (T, error) {
	var none T
	_, uid, err := target(ctx, viewer.RoleViewer, kind, what, id)
	if err != nil {
		return none, err
	}
	rec, err := get(ctx, uid)
	if ent.IsNotFound(err) {
		return none, apperr.NotFoundf(what)
	}
	return rec, apperr.Map(err)
}

// text validates a required single-line text field: trimmed, non-empty,
// storable, at most max characters.
func text(val *apperr.Validation, field, s string, max int) string {
	s = strings.TrimSpace(s)
	if s == "" {
		val.Add(field, "is required")
		return s
	}
	bounded(val, field, s, max)
	return s
}

// Bounds of free-text fields, in characters: internal/limits, which the ent
// schema enforces too.
const (
	MaxNameLen    = limits.Name
	MaxTitleLen   = limits.Title
	MaxContentLen = limits.Content
	MaxCommentLen = limits.Comment
)

// bounded records an error under field when s cannot be stored (see
// storable) or is longer than max characters. s may be empty.
func bounded(val *apperr.Validation, field, s string, max int) {
	if storable(val, field, s) && utf8.RuneCountInString(s) > max {
		val.Add(field, "must be at most %d characters", max)
	}
}

// searchTerm validates a list's search parameter, trimmed: a
// case-insensitive substring of at most MaxTitleLen characters.
func searchTerm(val *apperr.Validation, s string) string {
	s = strings.TrimSpace(s)
	bounded(val, "search", s, MaxTitleLen)
	return s
}

// storable reports a free-text value that PostgreSQL cannot store or compare
// (invalid UTF-8, or a NUL character, which text columns refuse), recording
// the error under field. SQLite would store it, so both databases refuse it
// here alike.
func storable(val *apperr.Validation, field, s string) bool {
	switch {
	case !utf8.ValidString(s):
		val.Add(field, "must be valid UTF-8")
	case strings.ContainsRune(s, 0):
		val.Add(field, "must not contain NUL characters")
	default:
		return true
	}
	return false
}
