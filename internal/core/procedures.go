package core

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/comment"
	"github.com/procsvc/procsvc/ent/predicate"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/generation"
	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/limits"
	"github.com/procsvc/procsvc/internal/viewer"
)

// CreateProcedureInput is the body of docs/contract.md §4.1. Pointers and empty strings mean
// "not given"; validation reports every missing required field.
type CreateProcedureInput struct {
	Name       string
	Priority   string
	State      string
	DueAt      *time.Time
	CategoryID string
	DoerID     string
	ProjectID  string
	// Content is a string, any JSON value (json.RawMessage or decoded), or nil.
	Content           any
	GenerateProcedure bool
	ContentType       *string
	DocStyle          *string
	Language          *string
	CaptureID         *string
	DisplayVideo      *bool
	IsFineTunedData   *bool
}

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

// CreateProcedure validates in, optionally generates its content, and stores
// it with the next shortId at the end of its (project, state) column.
// Errors: unauthenticated, forbidden, validation_failed, generation_failed.
func (s *Service) CreateProcedure(ctx context.Context, in CreateProcedureInput) (*ent.Procedure, error) {
	v, err := require(ctx, viewer.RoleMember)
	if err != nil {
		return nil, err
	}
	val := &apperr.Validation{}
	name := text(val, "name", in.Name, MaxNameLen)
	validPriority(val, "priority", in.Priority)
	validState(val, "state", in.State)
	if in.DueAt == nil {
		val.Add("dueAt", "is required")
	}
	categoryID := requiredID(val, "categoryId", in.CategoryID)
	doerID := requiredID(val, "doerId", in.DoerID)
	projectID := requiredID(val, "projectId", in.ProjectID)
	content := contentText(val, in.Content)
	if in.ContentType != nil {
		oneOf(val, "contentType", *in.ContentType, generation.ContentTypes...)
	}
	if in.DocStyle != nil {
		oneOf(val, "docStyle", *in.DocStyle, generation.DocStyles...)
	}
	if in.Language != nil {
		oneOf(val, "language", *in.Language, generation.Languages...)
	}
	if in.CaptureID != nil {
		validCaptureID(val, *in.CaptureID)
	}
	if err := val.Err(); err != nil {
		return nil, err
	}
	if in.GenerateProcedure {
		// Generation is a network call: it runs before, never inside, the
		// write transaction. Bad references fail before paying for it; the
		// transaction checks them again, as of the write.
		if _, err := checkRefs(ctx, s.client, &categoryID, &doerID, &projectID); err != nil {
			return nil, err
		}
		generated, err := s.generate(ctx, name, content, in)
		if err != nil {
			return nil, err
		}
		content = &generated
	}
	var created *ent.Procedure
	err = s.inNumberingTx(ctx, v, viewer.RoleMember, func(tx *ent.Tx, _ *viewer.Viewer, ws *ent.Workspace) error {
		projectName, err := checkRefs(ctx, tx.Client(), &categoryID, &doerID, &projectID)
		if err != nil {
			return err
		}
		state := procedure.State(in.State)
		pos, err := endOfColumn(ctx, tx.Client(), projectID, state, uuid.Nil)
		if err != nil {
			return err
		}
		created, err = tx.Procedure.Create().
			SetNumber(ws.ProcedureSeq).
			SetShortID(ws.Key + "-" + strconv.FormatInt(ws.ProcedureSeq, 10)).
			SetName(name).
			SetPriority(procedure.Priority(in.Priority)).
			SetState(state).
			SetNillableContent(content).
			SetCategoryID(categoryID).
			SetDoerID(doerID).
			SetCreatorID(v.MemberID).
			SetProjectID(projectID).
			SetProjectName(projectName).
			SetPosition(pos).
			SetDueAt(in.DueAt.UTC()).
			SetNillableCaptureID(in.CaptureID).
			SetNillableDisplayVideo(in.DisplayVideo).
			SetNillableIsFineTunedData(in.IsFineTunedData).
			Save(ctx)
		if err != nil {
			return err
		}
		return s.procedureChanged(ctx, tx, v.WorkspaceID, ProcedureCreated, nil, created)
	})
	if err != nil {
		return nil, err
	}
	return created.Unwrap(), nil
}

func (s *Service) generate(ctx context.Context, name string, content *string, in CreateProcedureInput) (string, error) {
	if s.generator == nil {
		return "", apperr.New(apperr.GenerationFailed, "content generation is not configured on this server")
	}
	req := GenerateRequest{Name: name, ContentType: generation.DefaultContentType, DocStyle: generation.DefaultDocStyle, Language: generation.DefaultLanguage}
	if content != nil {
		req.Content = *content
	}
	if in.ContentType != nil {
		req.ContentType = *in.ContentType
	}
	if in.DocStyle != nil {
		req.DocStyle = *in.DocStyle
	}
	if in.Language != nil {
		req.Language = *in.Language
	}
	out, err := s.generator.Generate(ctx, req)
	if err != nil {
		if ae, ok := err.(*apperr.Error); ok && ae.Code == apperr.GenerationFailed {
			return "", ae
		}
		return "", &apperr.Error{Code: apperr.GenerationFailed, Message: "content generation failed", Err: err}
	}
	return out, nil
}

// Procedure returns the procedure with id, which may also be its shortId.
// Errors: unauthenticated, not_found.
func (s *Service) Procedure(ctx context.Context, idOrShortID string) (*ent.Procedure, error) {
	if _, err := require(ctx, viewer.RoleViewer); err != nil {
		return nil, err
	}
	where, err := procedureKey(idOrShortID)
	if err != nil {
		return nil, err
	}
	p, err := findProcedure(ctx, s.client, where)
	recordProcedure(ctx, p)
	return p, err
}

// procedureKey is the predicate selecting the procedure an id or shortId
// names. Errors: not_found (it cannot name a procedure).
func procedureKey(idOrShortID string) (predicate.Procedure, error) {
	if limits.ShortID.MatchString(idOrShortID) {
		return procedure.ShortID(strings.ToUpper(idOrShortID)), nil
	}
	id, err := lookupID(ids.KindProcedure, "procedure", idOrShortID)
	if err != nil {
		return nil, err
	}
	return procedure.ID(id), nil
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
// On PostgreSQL (a StatementAnnouncer), a write that changes neither state
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
	sa, statement := s.announcer.(StatementAnnouncer)
	if statement && (patch.position != nil || (patch.state == nil && patch.projectID == nil)) {
		mode = lockShared
	}
	return storedOn(ctx, s, v, mode, where, func(tx *ent.Tx, _ *viewer.Viewer, p *ent.Procedure) (*ent.Procedure, error) {
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
		if mode == lockShared {
			return updated, fieldsChanged(ctx, tx, sa, v.WorkspaceID, p, updated)
		}
		return updated, s.procedureChanged(ctx, tx, v.WorkspaceID, ProcedureUpdated, p, updated)
	})
}

// DeleteProcedure removes a procedure and its comments.
// Errors: unauthenticated, forbidden, not_found, precondition_failed.
func (s *Service) DeleteProcedure(ctx context.Context, id string, conds ...Precondition) error {
	v, where, err := procedureWrite(ctx, id)
	if err != nil {
		return err
	}
	return s.inProcedureTx(ctx, v, lockExclusive, where, func(tx *ent.Tx, _ *viewer.Viewer, p *ent.Procedure) error {
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
		return s.procedureChanged(ctx, tx, v.WorkspaceID, ProcedureDeleted, p, nil)
	})
}
