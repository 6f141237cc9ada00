package core

// A procedure's place in its (project, state) column: appending, moving
// between neighbours, and renumbering a column whose gaps ran out.

import (
	"context"
	"math"

	"entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/viewer"
)

// positionStep is the gap left between procedures appended to a column, so
// that many moves fit between two neighbours before a renumbering.
const positionStep = 1024

// endOfColumn returns the position after the last procedure of the
// (project, state) column, ignoring except.
func endOfColumn(ctx context.Context, c *ent.Client, projectID uuid.UUID, state procedure.State, except uuid.UUID) (float64, error) {
	ps, err := c.Procedure.Query().
		Where(procedure.ProjectID(projectID), procedure.StateEQ(state), procedure.IDNEQ(except)).
		Order(procedure.ByPosition(sql.OrderDesc())).
		Limit(1).
		Select(procedure.FieldPosition).
		Float64s(ctx)
	if err != nil {
		return 0, err
	}
	if len(ps) == 0 {
		return positionStep, nil
	}
	return math.Floor(ps[0]) + positionStep, nil
}

// MoveProcedure places a procedure in a column (its current state unless
// state is given) between the procedures afterID (above) and beforeID
// (below); with neither it goes to the end. When two neighbours leave no room
// between them, the column is renumbered.
// Errors: unauthenticated, forbidden, not_found, validation_failed.
//
// Like UpdateProcedure, it reads the procedure (its state, project and
// updatedAt) inside the write's transaction, and before it only to answer
// an invalid request.
func (s *Service) MoveProcedure(ctx context.Context, id string, state *string, afterID, beforeID *string) (*ent.Procedure, error) {
	v, where, err := procedureWrite(ctx, id)
	if err != nil {
		return nil, err
	}
	val := &apperr.Validation{}
	var target *procedure.State
	if state != nil {
		validState(val, "state", *state)
		st := procedure.State(*state)
		target = &st
	}
	var after, before *uuid.UUID
	if afterID != nil {
		after = optionalID(val, "afterId", *afterID)
	}
	if beforeID != nil {
		before = optionalID(val, "beforeId", *beforeID)
	}
	if val.Err() != nil {
		p, err := findProcedure(ctx, s.client, where)
		if err != nil {
			return nil, err
		}
		notNextToItself(val, p.ID, after, before)
		return nil, val.Err()
	}
	return storedOn(ctx, s, v, lockExclusive, where, func(tx *ent.Tx, _ *viewer.Viewer, p *ent.Procedure) (*ent.Procedure, error) {
		val := &apperr.Validation{}
		if notNextToItself(val, p.ID, after, before); val.Err() != nil {
			return nil, val.Err()
		}
		column := p.State
		if target != nil {
			column = *target
		}
		pos, err := placeBetween(ctx, tx.Client(), p, column, after, before)
		if err != nil {
			return nil, err
		}
		moved, err := saveProcedure(ctx, tx, p, tx.Procedure.Update().SetState(column).SetPosition(pos).
			SetUpdatedAt(nextUpdatedAt(p.UpdatedAt, s.now())))
		if err != nil {
			return nil, err
		}
		return moved, s.procedureChanged(ctx, tx, v.WorkspaceID, ProcedureMoved, p, moved)
	})
}

// notNextToItself refuses placing procedure id next to itself.
func notNextToItself(val *apperr.Validation, id uuid.UUID, after, before *uuid.UUID) {
	if after != nil && *after == id {
		val.Add("afterId", "a procedure cannot be placed next to itself")
	}
	if before != nil && *before == id {
		val.Add("beforeId", "a procedure cannot be placed next to itself")
	}
}

// minGap is the smallest gap placeBetween will split; below it the column is
// renumbered so that float precision never runs out.
const minGap = 1e-6

func placeBetween(ctx context.Context, c *ent.Client, p *ent.Procedure, state procedure.State, after, before *uuid.UUID) (float64, error) {
	if after == nil && before == nil {
		return endOfColumn(ctx, c, p.ProjectID, state, p.ID)
	}
	column := func() ([]*ent.Procedure, error) {
		return c.Procedure.Query().
			Where(procedure.ProjectID(p.ProjectID), procedure.StateEQ(state), procedure.IDNEQ(p.ID)).
			Order(procedure.ByPosition(), procedure.ByID()).
			Select(procedure.FieldID, procedure.FieldPosition).
			All(ctx)
	}
	col, err := column()
	if err != nil {
		return 0, err
	}
	find := func(field string, id uuid.UUID) (int, error) {
		for i, q := range col {
			if q.ID == id {
				return i, nil
			}
		}
		return 0, apperr.Invalid(field, "must name a procedure in the target column (same project and state)")
	}
	// lo is the index of the procedure above the slot, hi the one below.
	lo, hi := -1, len(col)
	if after != nil {
		if lo, err = find("afterId", *after); err != nil {
			return 0, err
		}
		hi = lo + 1
	}
	if before != nil {
		if hi, err = find("beforeId", *before); err != nil {
			return 0, err
		}
		if after == nil {
			lo = hi - 1
		} else if hi != lo+1 {
			return 0, apperr.Invalid("beforeId", "must directly follow afterId in the column")
		}
	}
	gapOK := func() (float64, bool) {
		switch {
		case lo < 0 && hi >= len(col):
			return positionStep, true
		case lo < 0:
			return col[hi].Position - positionStep, true
		case hi >= len(col):
			return math.Floor(col[lo].Position) + positionStep, true
		}
		a, b := col[lo].Position, col[hi].Position
		mid := a + (b-a)/2
		return mid, b-a >= minGap && mid > a && mid < b
	}
	if pos, ok := gapOK(); ok {
		return pos, nil
	}
	// Renumber the column in its current order, then split the new gap.
	for i, q := range col {
		q.Position = float64(i+1) * positionStep
		if err := c.Procedure.Update().Where(procedure.ID(q.ID)).SetPosition(q.Position).Exec(ctx); err != nil {
			return 0, err
		}
	}
	pos, _ := gapOK()
	return pos, nil
}
