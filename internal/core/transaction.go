package core

// The write transaction: the workspace lock and version bump that begin
// it, the acting member's re-check under the lock, and the helpers that run
// a write in it and hand back what it stored.

import (
	"context"
	"fmt"

	"entgo.io/ent/dialect"
	"entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/member"
	"github.com/procsvc/procsvc/ent/predicate"
	"github.com/procsvc/procsvc/ent/token"
	"github.com/procsvc/procsvc/ent/workspace"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/consistency"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/tenancy"
	"github.com/procsvc/procsvc/internal/viewer"
)

// inTx runs fn in a transaction whose first statement takes the
// workspace's lock exclusively and bumps its version (lockExclusive; see
// lockMode for the field updates that share the lock).
//
// Writes inside one workspace are thus serialised (shortIds and positions
// cannot race), and any cache keyed by the version is invalidated
// atomically with the write. On PostgreSQL the lock is an advisory lock
// (lockWorkspace), and every later statement (READ COMMITTED) sees what was
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
		func(tx *ent.Tx, _ *openWrite) (*viewer.Viewer, error) { return actingViewer(ctx, tx, v, min) },
		func(tx *ent.Tx, me *viewer.Viewer) error { return fn(tx, me) })
}

// stored is inTx for a write that returns the record it stores: write's
// record, unwrapped from the transaction once it has committed.
func stored[T interface{ Unwrap() T }](ctx context.Context, s *Service, v *viewer.Viewer, min viewer.Role,
	write func(tx *ent.Tx, me *viewer.Viewer) (T, error)) (T, error) {
	return unwrapped(func(keep func(T, error) error) error {
		return s.inTx(ctx, v, min, func(tx *ent.Tx, me *viewer.Viewer) error { return keep(write(tx, me)) })
	})
}

// unwrapped runs a transaction through run, which hands keep the record
// its write stores, and returns that record unwrapped from the transaction
// once it has committed.
func unwrapped[T interface{ Unwrap() T }](run func(keep func(T, error) error) error) (T, error) {
	var rec T
	err := run(func(r T, err error) error {
		rec = r
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
		func(tx *ent.Tx, _ *openWrite) (me *viewer.Viewer, err error) {
			q := tx.Workspace.Query().Where(workspace.ID(v.WorkspaceID))
			q.Select(workspace.FieldKey, workspace.FieldProcedureSeq).Modify(withActingRole(v))
			if ws, err = q.Only(ctx); err != nil {
				return nil, err
			}
			return actingAs(v, min, ws.Value)
		},
		func(tx *ent.Tx, me *viewer.Viewer) error { return fn(tx, me, ws) })
}

// inProcedureTx is inTx, for a MEMBER at least, of a write on the procedure
// where selects: the transaction's second statement reads the procedure and
// re-checks the acting member together (actingProcedure), and fn receives
// both as of the workspace lock, taken as mode says (lockExclusive, or
// lockShared for UpdateProcedure's field updates, which then lock the
// procedure's row too and must declare their finish: sharedFinish).
// Errors: those of inTx, then not_found.
func (s *Service) inProcedureTx(ctx context.Context, v *viewer.Viewer, mode lockMode, where predicate.Procedure,
	fn func(tx *ent.Tx, me *viewer.Viewer, p *ent.Procedure) error) error {
	var p *ent.Procedure
	return s.lockedTx(ctx, v, mode,
		func(tx *ent.Tx, w *openWrite) (me *viewer.Viewer, err error) {
			if mode == lockShared {
				if err := w.take(lockProcedureRow); err != nil {
					return nil, err
				}
			}
			me, p, err = actingProcedure(ctx, tx, v, viewer.RoleMember, where, mode == lockShared)
			return me, err
		},
		func(tx *ent.Tx, me *viewer.Viewer) error { return fn(tx, me, p) })
}

// storedOn is inProcedureTx for a write that returns the record it stores,
// unwrapped from the transaction once it has committed (see stored).
func storedOn[T interface{ Unwrap() T }](ctx context.Context, s *Service, v *viewer.Viewer, mode lockMode, where predicate.Procedure,
	write func(tx *ent.Tx, me *viewer.Viewer, p *ent.Procedure) (T, error)) (T, error) {
	return unwrapped(func(keep func(T, error) error) error {
		return s.inProcedureTx(ctx, v, mode, where, func(tx *ent.Tx, me *viewer.Viewer, p *ent.Procedure) error {
			return keep(write(tx, me, p))
		})
	})
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
	// last statement (sharedFinish), so shared writes of a workspace queue
	// for each other only from there to their commit.
	lockShared
)

// lockedTx runs a write's transaction, in the one order every write
// follows: the lock statement (see lockMode), then acting, which must
// re-read the acting member in the transaction's next statement (see
// inTx) and returns the viewer as of the lock, then fn, then the finish fn
// declared (finishWrite: the change log, the tallies, the announcement,
// and a shared write's version bump), then the Idempotency-Key's row. It
// commits only if all succeed. A request sent with an Idempotency-Key has
// its key commit with the write (database.BeforeCommit runs the request's
// step, idempotency's Claim.BeforeCommit: one more statement, last, and a
// commit whose outcome is unknown is resolved from the key before lockedTx
// returns); an unkeyed one sends nothing more.
//
// Deadlock-free: the locks a write takes are taken in lockStep's order,
// which openWrite.take checks as they are taken.
func (s *Service) lockedTx(ctx context.Context, v *viewer.Viewer, mode lockMode,
	acting func(tx *ent.Tx, w *openWrite) (*viewer.Viewer, error), fn func(tx *ent.Tx, me *viewer.Viewer) error) error {
	tx, err := s.client.Tx(ctx)
	if err != nil {
		return apperr.Map(err)
	}
	w := s.writes.open(tx, mode)
	defer s.writes.close(tx)
	err = func() error {
		if err := lockWorkspace(ctx, tx, v.WorkspaceID, w); err != nil {
			return err
		}
		me, err := acting(tx, w)
		if err != nil {
			return err
		}
		if mode != lockShared {
			// Read after the bump, under the exclusive lock: the
			// version this write commits (sharedFinish reports a
			// shared write's).
			committedAt(ctx, tx, me.WorkspaceVersion)
		}
		if err := fn(tx, me); err != nil {
			return err
		}
		if err := s.finishWrite(ctx, tx, me, w); err != nil {
			return err
		}
		return database.BeforeCommit(ctx, tx)
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

// lockWorkspace takes the workspace's lock as w's mode says, in a write
// transaction's first statement, which also bumps its version unless mode
// is lockShared (whose last statement bumps it: sharedFinish). A missing
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
func lockWorkspace(ctx context.Context, tx *ent.Tx, workspaceID uuid.UUID, w *openWrite) error {
	key := database.WorkspaceLockKey(workspaceID)
	mode := w.mode
	if err := w.take(lockWorkspaceLock); err != nil {
		return err
	}
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
	if err := w.take(lockWorkspaceRow); err != nil {
		return err
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
	var rows []struct {
		Role    string `json:"role"`
		Version int64  `json:"acting_version"`
	}
	err := tx.Member.Query().Where(actingMember(v)...).Modify(func(s *sql.Selector) {
		s.Select(s.C(member.FieldRole))
		s.AppendSelectExprAs(actingVersion(s.Dialect(), v), actingVersionColumn)
	}).Scan(ctx, &rows)
	if err != nil {
		return nil, err
	}
	return actingAs(v, min, func(col string) (ent.Value, error) {
		if len(rows) == 0 {
			return nil, nil
		}
		if col == actingVersionColumn {
			return rows[0].Version, nil
		}
		return rows[0].Role, nil
	})
}

// actingProcedure reads, in one statement of a write's transaction after
// the workspace lock, the procedure where selects and the acting viewer
// (actingRole: the re-check actingViewer makes, with the same answers). When
// no procedure matches, the row that would carry the role is missing: the
// member is then re-read alone, so that a disconnected or forbidden viewer
// is answered as such before not_found, as when the two were read apart.
// With lockRow the read also locks the procedure's row until commit (on
// PostgreSQL FOR NO KEY UPDATE, what its UPDATE takes anyway; a shared
// workspace lock does not serialise writes of one procedure).
//
// Under a shared lock the member is still read as of the lock: every write
// that changes members or tokens is exclusive, so none commits between the
// lock and this statement, and this statement's snapshot is taken after the
// lock was granted. A wait for the procedure's row (another shared write of
// it) re-reads the row as that write committed it.
// Errors: disconnected, forbidden, not_found.
func actingProcedure(ctx context.Context, tx *ent.Tx, v *viewer.Viewer, min viewer.Role, where predicate.Procedure, lockRow bool) (*viewer.Viewer, *ent.Procedure, error) {
	q := tx.Procedure.Query().Where(where)
	q.Modify(withActingRole(v), func(s *sql.Selector) {
		if lockRow && s.Dialect() == dialect.Postgres {
			s.For(sql.LockNoKeyUpdate)
		}
	})
	p, err := q.Only(ctx)
	if ent.IsNotFound(err) {
		if _, err := actingViewer(ctx, tx, v, min); err != nil {
			return nil, nil, err
		}
		return nil, nil, apperr.NotFoundf("procedure")
	}
	if err != nil {
		return nil, nil, err
	}
	me, err := actingAs(v, min, p.Value)
	if err != nil {
		return nil, nil, err
	}
	return me, p, nil
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

// actingRoleColumn and actingVersionColumn are the columns under which a
// read carries actingRole and actingVersion.
const (
	actingRoleColumn    = "acting_role"
	actingVersionColumn = "acting_version"
)

// withActingRole adds actingRole and actingVersion to a read of the write's
// transaction: a query modifier, read back with actingAs(v, min, row.Value).
func withActingRole(v *viewer.Viewer) func(*sql.Selector) {
	return func(s *sql.Selector) {
		s.AppendSelectExprAs(actingRole(s.Dialect(), v), actingRoleColumn)
		s.AppendSelectExprAs(actingVersion(s.Dialect(), v), actingVersionColumn)
	}
}

// actingVersion is the workspace's version as the write's transaction sees
// it (a scalar subquery): read after an exclusive lock's bump, it is the
// version the write commits, which the response reports (see
// committedAt). It confines itself to v's workspace like actingRole.
func actingVersion(dialect string, v *viewer.Viewer) sql.Querier {
	t := sql.Table(workspace.Table)
	sel := sql.Dialect(dialect).Select(t.C(workspace.FieldVersion)).From(t)
	tenancy.Where(tenancy.WorkspacesColumn, v.WorkspaceID)(sel)
	return sql.ExprFunc(func(b *sql.Builder) { b.WriteString("COALESCE((").Join(sel).WriteString("), 0)") })
}

// actingRole is v's role as of the statement that runs it, or empty unless
// actingMember holds: actingViewer's read, as a column of another read (a
// scalar subquery; never NULL, which ent cannot scan from SQLite into an
// untyped column). A subquery does not pass through the tenancy
// interceptor, so it confines itself to v's workspace (internal/tenancy).
func actingRole(dialect string, v *viewer.Viewer) sql.Querier {
	t := sql.Table(member.Table)
	sel := sql.Dialect(dialect).Select(t.C(member.FieldRole)).From(t)
	for _, p := range append(actingMember(v), tenancy.Where(tenancy.Column, v.WorkspaceID)) {
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
	// The write's viewer carries the version its transaction sees, for
	// committedAt; no cache keyed by versions may use it.
	me.VersionKnown = false
	if raw, err := value(actingVersionColumn); err == nil {
		switch n := raw.(type) {
		case int64:
			me.WorkspaceVersion = n
		case float64:
			me.WorkspaceVersion = int64(n)
		}
	}
	return &me, nil
}

// committedAt reports, once tx commits, that ctx's request committed its
// workspace at version (consistency.Wrote): the response then carries it
// for read-your-writes. A rolled-back write reports nothing.
func committedAt(ctx context.Context, tx *ent.Tx, version int64) {
	if version <= 0 {
		return
	}
	tx.OnCommit(func(next ent.Committer) ent.Committer {
		return ent.CommitFunc(func(c context.Context, tx *ent.Tx) error {
			if err := next.Commit(c, tx); err != nil {
				return err
			}
			consistency.Wrote(ctx, version)
			return nil
		})
	})
}
