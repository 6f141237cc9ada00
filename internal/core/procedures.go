package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"entgo.io/ent/dialect"
	"entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/category"
	"github.com/procsvc/procsvc/ent/comment"
	"github.com/procsvc/procsvc/ent/member"
	"github.com/procsvc/procsvc/ent/predicate"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/ent/project"
	"github.com/procsvc/procsvc/ent/workspace"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/viewer"
)

// Enumerations accepted at creation for content generation.
var (
	ContentTypes = []string{"code", "standard", "api", "process"}
	DocStyles    = []string{"technical", "simplified", "detailed"}
	Languages    = []string{"typescript", "javascript", "python", "java", "csharp", "other"}
)

// positionStep is the gap left between procedures appended to a column, so
// that many moves fit between two neighbours before a renumbering.
const positionStep = 1024

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

// ProcedureSort is a field a procedure list can be sorted by.
type ProcedureSort string

// The sort fields of docs/design.md §5.
const (
	SortCreatedAt   ProcedureSort = "createdAt"
	SortDueAt       ProcedureSort = "dueAt"
	SortName        ProcedureSort = "name"
	SortProjectName ProcedureSort = "project.name"
)

// ProcedureSorts lists the sort fields, as the API documents them.
var ProcedureSorts = []ProcedureSort{SortCreatedAt, SortDueAt, SortProjectName, SortName}

// Valid reports whether s is a known sort field.
func (s ProcedureSort) Valid() bool { return slices.Contains(ProcedureSorts, s) }

// ProcedureOrder sorts a procedure list; ties always break on id in the same
// direction, so pages never overlap.
type ProcedureOrder struct {
	Field ProcedureSort
	Desc  bool
}

// DefaultProcedureOrder is newest first.
var DefaultProcedureOrder = ProcedureOrder{Field: SortCreatedAt, Desc: true}

// ProcedureFilter narrows a procedure list. Empty fields do not filter.
type ProcedureFilter struct {
	// Search is a case-insensitive substring of name, content or shortId.
	Search     string
	CategoryID string
	DoerID     string
	ProjectID  string
	State      string
	Priority   string
	// DueFrom and DueTo bound dueAt, both inclusive (REST startedAt and dueAt).
	DueFrom *time.Time
	DueTo   *time.Time
}

// key is f's canonical form, for the totals cache.
func (f ProcedureFilter) key() string {
	var b strings.Builder
	for _, part := range []string{strings.TrimSpace(f.Search), f.CategoryID, f.DoerID, f.ProjectID, f.State, f.Priority} {
		b.WriteString(strconv.Quote(part))
		b.WriteByte('|')
	}
	for _, t := range []*time.Time{f.DueFrom, f.DueTo} {
		if t != nil {
			b.WriteString(strconv.FormatInt(t.UnixMicro(), 10))
		}
		b.WriteByte('|')
	}
	return b.String()
}

// ProcedureList is one page of procedures and the count of all that match.
type ProcedureList = List[ent.Procedure]

// oneOf records an error under field unless s is one of allowed.
func oneOf[T ~string](val *apperr.Validation, field, s string, allowed ...T) {
	if !slices.Contains(allowed, T(s)) {
		val.Add(field, "must be one of %s", joinValues(allowed))
	}
}

// joinValues lists enum values for a message: "A, B, C".
func joinValues[T ~string](values []T) string {
	var b strings.Builder
	for i, v := range values {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(v))
	}
	return b.String()
}

// validPriority and validState check a required enum value against the
// values the ent schema declares.
func validPriority(val *apperr.Validation, field, s string) {
	if s == "" {
		val.Add(field, "is required")
		return
	}
	oneOf(val, field, s, procedure.PriorityValues()...)
}

func validState(val *apperr.Validation, field, s string) {
	if s == "" {
		val.Add(field, "is required")
		return
	}
	oneOf(val, field, s, procedure.StateValues()...)
}

// optionalID parses an id field that may be empty.
func optionalID(val *apperr.Validation, field, s string) *uuid.UUID {
	if s == "" {
		return nil
	}
	id, err := ids.Parse(s)
	if err != nil {
		val.Add(field, "must be an id")
		return nil
	}
	return &id
}

func requiredID(val *apperr.Validation, field, s string) uuid.UUID {
	if s == "" {
		val.Add(field, "is required")
		return uuid.Nil
	}
	if id := optionalID(val, field, s); id != nil {
		return *id
	}
	return uuid.Nil
}

// contentText normalises create's content: a string is kept, null is no
// content, and any other JSON value is stored as its compact JSON text.
func contentText(val *apperr.Validation, v any) *string {
	var s string
	switch c := v.(type) {
	case nil:
		return nil
	case string:
		s = c
	case *string:
		if c == nil {
			return nil
		}
		s = *c
	case json.RawMessage:
		trimmed := bytes.TrimSpace(c)
		switch {
		case len(trimmed) == 0 || string(trimmed) == "null":
			return nil
		case trimmed[0] == '"':
			if err := json.Unmarshal(trimmed, &s); err != nil {
				val.Add("content", "must be a string or a JSON value")
				return nil
			}
		default:
			var buf bytes.Buffer
			if err := json.Compact(&buf, trimmed); err != nil {
				val.Add("content", "must be a string or a JSON value")
				return nil
			}
			s = buf.String()
		}
	default:
		b, err := json.Marshal(c)
		if err != nil {
			val.Add("content", "must be a string or a JSON value")
			return nil
		}
		s = string(b)
	}
	validContent(val, s)
	return &s
}

func validContent(val *apperr.Validation, s string) { bounded(val, "content", s, MaxContentLen) }

func validCaptureID(val *apperr.Validation, s string) { bounded(val, "captureId", s, MaxTitleLen) }

// checkRefs confirms that the referenced category, doer (a current member)
// and project exist in the viewer's workspace (the tenancy interceptor hides
// all others), naming every offending field otherwise. It returns the
// project's name, which procedures keep a copy of for sorting.
//
// Writes run it with tx.Client() inside their transaction, after the
// workspace lock: a category or project deleted, or a doer removed, while
// the write waited is then refused like a sequential execution would refuse
// it (validation_failed naming the field), never stored (a removed doer) or
// answered as a bare foreign-key conflict, and the project name copied is
// the name as of the write. It may also run before the transaction to fail
// fast ahead of costly work (content generation), never instead.
func checkRefs(ctx context.Context, c *ent.Client, categoryID, doerID, projectID *uuid.UUID) (projectName string, err error) {
	val := &apperr.Validation{}
	if categoryID != nil {
		ok, err := c.Category.Query().Where(category.ID(*categoryID)).Exist(ctx)
		if err != nil {
			return "", apperr.Map(err)
		}
		if !ok {
			val.Add("categoryId", "no such category in this workspace")
		}
	}
	if doerID != nil {
		ok, err := c.Member.Query().Where(member.ID(*doerID), member.RemovedAtIsNil()).Exist(ctx)
		if err != nil {
			return "", apperr.Map(err)
		}
		if !ok {
			val.Add("doerId", "no such member in this workspace")
		}
	}
	if projectID != nil {
		names, err := c.Project.Query().Where(project.ID(*projectID)).Select(project.FieldName).Strings(ctx)
		if err != nil {
			return "", apperr.Map(err)
		}
		if len(names) == 0 {
			val.Add("projectId", "no such project in this workspace")
		} else {
			projectName = names[0]
		}
	}
	return projectName, val.Err()
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
		oneOf(val, "contentType", *in.ContentType, ContentTypes...)
	}
	if in.DocStyle != nil {
		oneOf(val, "docStyle", *in.DocStyle, DocStyles...)
	}
	if in.Language != nil {
		oneOf(val, "language", *in.Language, Languages...)
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
	req := GenerateRequest{Name: name, ContentType: "standard", DocStyle: "technical", Language: "other"}
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

var shortIDPattern = regexp.MustCompile(`^[A-Za-z]{2,10}-[0-9]{1,18}$`)

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
	if shortIDPattern.MatchString(idOrShortID) {
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

// procedurePredicates checks f and returns its predicates.
// Errors: validation_failed naming the parameter.
func procedurePredicates(f ProcedureFilter) ([]predicate.Procedure, error) {
	val := &apperr.Validation{}
	var ps []predicate.Procedure
	if q := searchTerm(val, f.Search); q != "" {
		ps = append(ps, procedure.Or(
			procedure.NameContainsFold(q),
			procedure.ContentContainsFold(q),
			procedure.ShortIDContainsFold(q),
		))
	}
	if id := optionalID(val, "categoryId", f.CategoryID); id != nil {
		ps = append(ps, procedure.CategoryID(*id))
	}
	if id := optionalID(val, "doerId", f.DoerID); id != nil {
		ps = append(ps, procedure.DoerID(*id))
	}
	if id := optionalID(val, "projectId", f.ProjectID); id != nil {
		ps = append(ps, procedure.ProjectID(*id))
	}
	if f.State != "" {
		oneOf(val, "state", f.State, procedure.StateValues()...)
		ps = append(ps, procedure.StateEQ(procedure.State(f.State)))
	}
	if f.Priority != "" {
		oneOf(val, "priority", f.Priority, procedure.PriorityValues()...)
		ps = append(ps, procedure.PriorityEQ(procedure.Priority(f.Priority)))
	}
	if f.DueFrom != nil {
		ps = append(ps, procedure.DueAtGTE(f.DueFrom.UTC()))
	}
	if f.DueTo != nil {
		ps = append(ps, procedure.DueAtLTE(f.DueTo.UTC()))
	}
	if f.DueFrom != nil && f.DueTo != nil && f.DueTo.Before(*f.DueFrom) {
		val.Add("dueAt", "must not precede startedAt")
	}
	return ps, val.Err()
}

func procedureOrder(o ProcedureOrder) ([]procedure.OrderOption, error) {
	if o.Field == "" {
		o = DefaultProcedureOrder
	}
	if !o.Field.Valid() {
		return nil, apperr.Invalid("sortBy", "must be one of %s", joinValues(ProcedureSorts))
	}
	dir := sql.OrderAsc()
	if o.Desc {
		dir = sql.OrderDesc()
	}
	var first procedure.OrderOption
	switch o.Field {
	case SortCreatedAt:
		first = procedure.ByCreatedAt(dir)
	case SortDueAt:
		first = procedure.ByDueAt(dir)
	case SortName:
		first = procedure.ByName(dir)
	case SortProjectName:
		first = procedure.ByProjectName(dir)
	}
	return []procedure.OrderOption{first, procedure.ByID(dir)}, nil
}

// FindProcedures returns one page of the procedures matching f, sorted by o,
// with the exact total.
// Errors: unauthenticated, validation_failed naming the parameter.
func (s *Service) FindProcedures(ctx context.Context, f ProcedureFilter, o ProcedureOrder, w Window) (*ProcedureList, error) {
	v, err := require(ctx, viewer.RoleViewer)
	if err != nil {
		return nil, err
	}
	preds, err := procedurePredicates(f)
	if err != nil {
		return nil, err
	}
	order, err := procedureOrder(o)
	if err != nil {
		return nil, err
	}
	list, err := listPage(ctx, s, "procedures", f.key(), w, DefaultProcedurePageSize, MaxProcedurePageSize,
		func() (int, error) {
			if key, ok := f.tallyKey(); ok {
				if n, found, err := s.tally(ctx, v.WorkspaceID, key); err != nil || found {
					return n, err
				}
			}
			return s.client.Procedure.Query().Where(preds...).Count(ctx)
		},
		func(p Page) ([]*ent.Procedure, error) {
			return s.client.Procedure.Query().Where(preds...).Order(order...).Offset(p.Offset).Limit(p.Limit).All(ctx)
		})
	if err == nil {
		recordList(ctx, f, o.Field, list.Items)
	}
	return list, err
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

// clearableID validates an optional reference: null or "" clears it.
func clearableID(val *apperr.Validation, field string, o Optional[string]) Optional[uuid.UUID] {
	switch {
	case !o.Set:
		return Optional[uuid.UUID]{}
	case o.Value == nil || *o.Value == "":
		return Null[uuid.UUID]()
	}
	if id := optionalID(val, field, *o.Value); id != nil {
		return Some(*id)
	}
	return Optional[uuid.UUID]{}
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

// procedureChanged keeps the tallies and announces a procedure write, in
// its transaction: before is the row as of the lock (nil for a create),
// after the row stored (nil for a delete).
func (s *Service) procedureChanged(ctx context.Context, tx *ent.Tx, workspaceID uuid.UUID, kind ChangeKind, before, after *ent.Procedure) error {
	c, tallies := changeOf(workspaceID, kind, before, after)
	if err := tallies.apply(ctx, tx, workspaceID); err != nil {
		return err
	}
	return s.announce(ctx, tx, c)
}

// fieldsChanged ends a field update (lockShared) of before into after, on
// PostgreSQL: one statement bumps the workspace's version, keeps the
// tallies and announces the change through sa, so that the only round trips
// a field update makes while it holds the workspace exclusively are that
// statement and its commit.
func fieldsChanged(ctx context.Context, tx *ent.Tx, sa StatementAnnouncer, workspaceID uuid.UUID, before, after *ent.Procedure) error {
	c, tallies := changeOf(workspaceID, ProcedureUpdated, before, after)
	notify, announced, err := sa.Notification(c)
	if err != nil {
		return err
	}
	finish, keys := bumpStatement(workspaceID, tallies, notify)
	var rows []struct {
		Version  int64  `json:"version"`
		Tallied  int64  `json:"tallied"`
		Notified []byte `json:"notified"` // pg_notify returns void
	}
	if err := tx.Workspace.Query().Where(workspace.ID(workspaceID)).Modify(finish).Scan(ctx, &rows); err != nil {
		return err
	}
	if len(rows) != 1 {
		return apperr.New(apperr.Disconnected, apperr.DisconnectedMessage)
	}
	if rows[0].Tallied != int64(keys) {
		// The workspace lacks its tally rows (see tallyChange.apply).
		if err := rebuildTallies(ctx, tx.Client(), workspaceID); err != nil {
			return err
		}
	}
	version := rows[0].Version
	announced(tx, version)
	return nil
}

// changeOf is what a procedure write did, announced as c and counted as
// tallies: before is the row as of the lock (nil for a create), after the
// row stored (nil for a delete).
func changeOf(workspaceID uuid.UUID, kind ChangeKind, before, after *ent.Procedure) (Change, tallyChange) {
	tallies := tallyChange{}
	c := Change{WorkspaceID: workspaceID, Kind: kind}
	if before != nil {
		tallies.removed(before)
		c.ProcedureID, c.Before = before.ID, facetsOf(before)
	}
	if after != nil {
		tallies.added(after)
		c.ProcedureID, c.After = after.ID, facetsOf(after)
	}
	if before != nil && after != nil {
		c.Renamed = before.Name != after.Name
		c.Reworded = c.Renamed || !equalText(before.Content, after.Content)
	}
	return c, tallies
}
