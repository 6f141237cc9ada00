package core

// Creating and reading one procedure, and naming it by id or shortId.

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/predicate"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/genchoice"
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
		oneOf(val, "contentType", *in.ContentType, genchoice.ContentTypes...)
	}
	if in.DocStyle != nil {
		oneOf(val, "docStyle", *in.DocStyle, genchoice.DocStyles...)
	}
	if in.Language != nil {
		oneOf(val, "language", *in.Language, genchoice.Languages...)
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
	err = s.inNumberingTx(ctx, v, viewer.RoleMember, func(tx *ent.Tx, me *viewer.Viewer, ws *ent.Workspace) error {
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
		return s.finishWith(tx, procedureFinish(me.WorkspaceID, ProcedureCreated, nil, created))
	})
	if err != nil {
		return nil, err
	}
	return created.Unwrap(), nil
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
