package core

// A procedure's place in its (project, state) column: appending, placing
// between neighbours, and renumbering a column whose gaps ran out.

import (
	"context"
	"math"

	"entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/apperr"
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
