package core

// The write transaction of a procedure: the lock, the acting member's
// re-check with the read under it, and the row it stored.

import (
	"context"
	"math"
	"time"

	"entgo.io/ent/dialect"
	"entgo.io/ent/dialect/sql"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/predicate"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/viewer"
)

// procedureWrite begins a write on the procedure id (or its shortId) names:
// the acting viewer, a MEMBER at least, and the predicate selecting it.
// Errors: unauthenticated, forbidden, not_found.
func procedureWrite(ctx context.Context, id string) (*viewer.Viewer, predicate.Procedure, error) {
	v, err := require(ctx, viewer.RoleMember)
	if err != nil {
		return nil, nil, err
	}
	where, err := procedureKey(id)
	if err != nil {
		return nil, nil, err
	}
	return v, where, nil
}

// findProcedure reads the procedure where selects through c: the client, or
// a write's tx.Client() to read it as of the workspace lock.
// Errors: not_found.
func findProcedure(ctx context.Context, c *ent.Client, where predicate.Procedure) (*ent.Procedure, error) {
	p, err := c.Procedure.Query().Where(where).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, apperr.NotFoundf("procedure")
	}
	return p, apperr.Map(err)
}

// inProcedureTx is inTx, for a MEMBER at least, of a write on the procedure
// where selects: the transaction's second statement reads the procedure and
// re-checks the acting member together (actingProcedure), and fn receives
// both as of the workspace lock, taken as mode says (lockExclusive, or
// lockShared for UpdateProcedure's field updates, which then lock the
// procedure's row too and must end with fieldsChanged).
// Errors: those of inTx, then not_found.
func (s *Service) inProcedureTx(ctx context.Context, v *viewer.Viewer, mode lockMode, where predicate.Procedure,
	fn func(tx *ent.Tx, me *viewer.Viewer, p *ent.Procedure) error) error {
	var p *ent.Procedure
	return s.lockedTx(ctx, v, mode,
		func(tx *ent.Tx) (me *viewer.Viewer, err error) {
			me, p, err = actingProcedure(ctx, tx, v, viewer.RoleMember, where, mode == lockShared)
			return me, err
		},
		func(tx *ent.Tx, me *viewer.Viewer) error { return fn(tx, me, p) })
}

// storedOn is inProcedureTx for a write that returns the record it stores,
// unwrapped from the transaction once it has committed (see stored).
func storedOn[T interface{ Unwrap() T }](ctx context.Context, s *Service, v *viewer.Viewer, mode lockMode, where predicate.Procedure,
	write func(tx *ent.Tx, me *viewer.Viewer, p *ent.Procedure) (T, error)) (T, error) {
	var rec T
	err := s.inProcedureTx(ctx, v, mode, where, func(tx *ent.Tx, me *viewer.Viewer, p *ent.Procedure) error {
		var err error
		rec, err = write(tx, me, p)
		return err
	})
	if err != nil {
		var none T
		return none, err
	}
	return rec.Unwrap(), nil
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

// saveProcedure runs u, an UPDATE of the procedure p as read under the
// workspace lock, and returns the row as u leaves it. It sends one
// statement: the row is p with the values u sent (updatedProcedure), not
// read back the way ent's UpdateOne does with a second statement, unless u
// sent a value whose stored form may differ from it.
// Errors: not_found (p is gone, which the workspace lock rules out).
func saveProcedure(ctx context.Context, tx *ent.Tx, p *ent.Procedure, u *ent.ProcedureUpdate) (*ent.Procedure, error) {
	n, err := u.Where(procedure.ID(p.ID)).Save(ctx)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, apperr.NotFoundf("procedure")
	}
	if after, ok := updatedProcedure(p, u.Mutation()); ok {
		return after, nil
	}
	return tx.Procedure.Get(ctx, p.ID)
}

// updatedProcedure is p with m's changes applied: the row an UPDATE of p
// sending m stores. ok is false when m changes a field it does not know (a
// field added to the schema since, an increment) or sends a value a
// database may store differently (exactValue), and the row must be read
// back. Only p's fields change: its edges, never loaded by a write, stay
// empty.
func updatedProcedure(p *ent.Procedure, m *ent.ProcedureMutation) (*ent.Procedure, bool) {
	if len(m.AddedFields()) > 0 || len(m.AddedEdges()) > 0 || len(m.ClearedEdges()) > 0 {
		return nil, false
	}
	after := *p
	for _, f := range m.Fields() {
		v, _ := m.Field(f)
		if !exactValue(v) {
			return nil, false
		}
		switch f {
		case procedure.FieldUpdatedAt:
			after.UpdatedAt, _ = m.UpdatedAt()
		case procedure.FieldName:
			after.Name, _ = m.Name()
		case procedure.FieldPriority:
			after.Priority, _ = m.Priority()
		case procedure.FieldState:
			after.State, _ = m.State()
		case procedure.FieldContent:
			c, _ := m.Content()
			after.Content = &c
		case procedure.FieldCategoryID:
			id, _ := m.CategoryID()
			after.CategoryID = &id
		case procedure.FieldDoerID:
			id, _ := m.DoerID()
			after.DoerID = &id
		case procedure.FieldProjectID:
			after.ProjectID, _ = m.ProjectID()
		case procedure.FieldProjectName:
			after.ProjectName, _ = m.ProjectName()
		case procedure.FieldPosition:
			after.Position, _ = m.Position()
		case procedure.FieldDueAt:
			after.DueAt, _ = m.DueAt()
		case procedure.FieldCaptureID:
			c, _ := m.CaptureID()
			after.CaptureID = &c
		case procedure.FieldDisplayVideo:
			after.DisplayVideo, _ = m.DisplayVideo()
		case procedure.FieldIsFineTunedData:
			after.IsFineTunedData, _ = m.IsFineTunedData()
		default:
			return nil, false
		}
	}
	for _, f := range m.ClearedFields() {
		switch f {
		case procedure.FieldContent:
			after.Content = nil
		case procedure.FieldCategoryID:
			after.CategoryID = nil
		case procedure.FieldDoerID:
			after.DoerID = nil
		case procedure.FieldCaptureID:
			after.CaptureID = nil
		default:
			return nil, false
		}
	}
	return &after, true
}

// exactValue reports whether both databases store v as sent and read it
// back equal: a time to the microsecond (PostgreSQL rounds finer ones), a
// float other than -0 (SQLite reads it back as 0). Strings are stored as
// sent (validation refuses what PostgreSQL would not store), and so are
// ids, enums and booleans.
func exactValue(v ent.Value) bool {
	switch x := v.(type) {
	case time.Time:
		return x.Equal(x.Truncate(time.Microsecond))
	case float64:
		return x != 0 || !math.Signbit(x)
	}
	return true
}
