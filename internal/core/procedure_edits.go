package core

// Changing an existing procedure: a patch of its fields, a move to another
// place, a delete, and the row an update stores.

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/comment"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/viewer"
)

// UpdateProcedureInput changes only the fields that are set.
type UpdateProcedureInput struct {
	Name            Optional[string]
	Priority        Optional[string]
	State           Optional[string]
	Content         Optional[string]
	CategoryID      Optional[string]
	DoerID          Optional[string]
	ProjectID       Optional[string]
	DueAt           Optional[time.Time]
	Position        Optional[float64]
	CaptureID       Optional[string]
	DisplayVideo    Optional[bool]
	IsFineTunedData Optional[bool]
}

// procedurePatch is an UpdateProcedureInput validated: a nil pointer or an
// unset Optional leaves its field alone, and a set Optional without a value
// clears it.
type procedurePatch struct {
	name                          *string
	priority                      *procedure.Priority
	state                         *procedure.State
	content, captureID            Optional[string]
	categoryID, doerID            Optional[uuid.UUID]
	projectID                     *uuid.UUID
	dueAt                         *time.Time
	position                      *float64
	displayVideo, isFineTunedData *bool
}

// validProcedurePatch checks in, naming every invalid field.
// Errors: validation_failed.
func validProcedurePatch(in UpdateProcedureInput) (procedurePatch, error) {
	val := &apperr.Validation{}
	var p procedurePatch
	if name, ok := required(val, "name", in.Name); ok {
		name = text(val, "name", name, MaxNameLen)
		p.name = &name
	}
	if pr, ok := required(val, "priority", in.Priority); ok {
		validPriority(val, "priority", pr)
		priority := procedure.Priority(pr)
		p.priority = &priority
	}
	if st, ok := required(val, "state", in.State); ok {
		validState(val, "state", st)
		state := procedure.State(st)
		p.state = &state
	}
	if p.content = in.Content; p.content.Value != nil {
		validContent(val, *p.content.Value)
	}
	p.categoryID = clearableID(val, "categoryId", in.CategoryID)
	p.doerID = clearableID(val, "doerId", in.DoerID)
	if raw, ok := required(val, "projectId", in.ProjectID); ok {
		if p.projectID = optionalID(val, "projectId", raw); p.projectID == nil && raw == "" {
			val.Add("projectId", "is required")
		}
	}
	if due, ok := required(val, "dueAt", in.DueAt); ok {
		due = due.UTC()
		p.dueAt = &due
	}
	if pos, ok := required(val, "position", in.Position); ok {
		if math.IsNaN(pos) || math.IsInf(pos, 0) || math.Abs(pos) > 1e15 {
			val.Add("position", "must be a finite number")
		}
		p.position = &pos
	}
	if p.captureID = in.CaptureID; p.captureID.Value != nil {
		validCaptureID(val, *p.captureID.Value)
	}
	if b, ok := required(val, "displayVideo", in.DisplayVideo); ok {
		p.displayVideo = &b
	}
	if b, ok := required(val, "isFineTunedData", in.IsFineTunedData); ok {
		p.isFineTunedData = &b
	}
	return p, val.Err()
}

// apply sets p's fields on u, all but position, which the caller decides
// from the row as of the lock.
func (p *procedurePatch) apply(u *ent.ProcedureUpdate) {
	u.SetNillableName(p.name).
		SetNillablePriority(p.priority).
		SetNillableState(p.state).
		SetNillableProjectID(p.projectID).
		SetNillableDueAt(p.dueAt).
		SetNillableDisplayVideo(p.displayVideo).
		SetNillableIsFineTunedData(p.isFineTunedData)
	setOrClear(p.content, u.SetContent, u.ClearContent)
	setOrClear(p.categoryID, u.SetCategoryID, u.ClearCategoryID)
	setOrClear(p.doerID, u.SetDoerID, u.ClearDoerID)
	setOrClear(p.captureID, u.SetCaptureID, u.ClearCaptureID)
}

// UpdateProcedure changes the fields set in in. A change of state or project
// without a position moves the procedure to the end of its new column.
// Errors: unauthenticated, forbidden, not_found, validation_failed,
// precondition_failed.
//
// The body is validated into a patch first; the procedure is read once,
// inside the write's transaction, and the patch applied to it: its
// updatedAt, state and project as of the workspace lock are what the write
// builds on. Only an invalid body reads it before, to answer not_found first
// as it always has.
//
// Under SharedFieldUpdates (PostgreSQL), a write that changes neither state
// nor project, or sets the position itself, runs under a shared workspace
// lock (lockShared): updates of different procedures then wait for each
// other only for their last statement. One that may move the procedure to
// the end of a column reads the column's other positions, which only the
// exclusive lock keeps still. SQLite serialises every write at BEGIN
// IMMEDIATE: there a shared lock would only add a statement.
func (s *Service) UpdateProcedure(ctx context.Context, id string, in UpdateProcedureInput, conds ...Precondition) (*ent.Procedure, error) {
	v, where, err := procedureWrite(ctx, id)
	if err != nil {
		return nil, err
	}
	patch, err := validProcedurePatch(in)
	if err != nil {
		if _, nf := findProcedure(ctx, s.client, where); nf != nil {
			return nil, nf
		}
		return nil, err
	}
	mode := lockExclusive
	if s.locks == SharedFieldUpdates && (patch.position != nil || (patch.state == nil && patch.projectID == nil)) {
		mode = lockShared
	}
	return storedOn(ctx, s, v, mode, where, func(tx *ent.Tx, me *viewer.Viewer, p *ent.Procedure) (*ent.Procedure, error) {
		projectName, err := checkRefs(ctx, tx.Client(), patch.categoryID.Value, patch.doerID.Value, patch.projectID)
		if err != nil {
			return nil, err
		}
		if err := checkPreconditions("procedure", p.UpdatedAt, conds); err != nil {
			return nil, err
		}
		u := tx.Procedure.Update().SetUpdatedAt(nextUpdatedAt(p.UpdatedAt, s.now()))
		patch.apply(u)
		state, project := p.State, p.ProjectID
		if patch.state != nil {
			state = *patch.state
		}
		if patch.projectID != nil {
			project = *patch.projectID
			u.SetProjectName(projectName)
		}
		switch {
		case patch.position != nil:
			u.SetPosition(*patch.position)
		case state != p.State || project != p.ProjectID:
			if mode == lockShared {
				return nil, errors.New("core: a write under the shared lock cannot place at the end of a column")
			}
			pos, err := endOfColumn(ctx, tx.Client(), project, state, p.ID)
			if err != nil {
				return nil, err
			}
			u.SetPosition(pos)
		}
		updated, err := saveProcedure(ctx, tx, p, u)
		if err != nil {
			return nil, err
		}
		return updated, s.finishWith(tx, procedureFinish(me.WorkspaceID, ProcedureUpdated, p, updated))
	})
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
	return storedOn(ctx, s, v, lockExclusive, where, func(tx *ent.Tx, me *viewer.Viewer, p *ent.Procedure) (*ent.Procedure, error) {
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
		return moved, s.finishWith(tx, procedureFinish(me.WorkspaceID, ProcedureMoved, p, moved))
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

// DeleteProcedure removes a procedure and its comments.
// Errors: unauthenticated, forbidden, not_found, precondition_failed.
func (s *Service) DeleteProcedure(ctx context.Context, id string, conds ...Precondition) error {
	v, where, err := procedureWrite(ctx, id)
	if err != nil {
		return err
	}
	return s.inProcedureTx(ctx, v, lockExclusive, where, func(tx *ent.Tx, me *viewer.Viewer, p *ent.Procedure) error {
		if err := checkPreconditions("procedure", p.UpdatedAt, conds); err != nil {
			return err
		}
		if _, err := tx.Comment.Delete().Where(comment.ProcedureID(p.ID)).Exec(ctx); err != nil {
			return err
		}
		n, err := tx.Procedure.Delete().Where(procedure.ID(p.ID)).Exec(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			return apperr.NotFoundf("procedure")
		}
		return s.finishWith(tx, procedureFinish(me.WorkspaceID, ProcedureDeleted, p, nil))
	})
}

// saveProcedure runs u, an UPDATE of the procedure p as read under the
// workspace lock, and returns the row as u leaves it. It sends one
// statement: the row is p with the values u sent (p.Applied), not read
// back the way ent's UpdateOne does with a second statement, unless u sent
// a value whose stored form may differ from it (sentExactly).
// Errors: not_found (p is gone, which the workspace lock rules out).
func saveProcedure(ctx context.Context, tx *ent.Tx, p *ent.Procedure, u *ent.ProcedureUpdate) (*ent.Procedure, error) {
	n, err := u.Where(procedure.ID(p.ID)).Save(ctx)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, apperr.NotFoundf("procedure")
	}
	if m := u.Mutation(); sentExactly(m) {
		if after, ok := p.Applied(m); ok {
			return after, nil
		}
	}
	return tx.Procedure.Get(ctx, p.ID)
}
