package core

// The change log (docs/api.md, "Events"): every write appends one event, in
// its own transaction and at the workspace version it commits, naming what
// it wrote, who wrote it, and each field it changed with the value before
// and after. History, the events connection, resumed subscriptions and
// webhooks all read it.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/event"
	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/timefmt"
	"github.com/procsvc/procsvc/internal/viewer"
)

// EventKind names what a logged write did: "<entity>.<verb>".
type EventKind string

// The kinds of events (docs/api.md, "Events").
const (
	EventProcedureCreated EventKind = "procedure.created"
	EventProcedureUpdated EventKind = "procedure.updated"
	EventProcedureMoved   EventKind = "procedure.moved"
	EventProcedureDeleted EventKind = "procedure.deleted"
	EventCommentCreated   EventKind = "comment.created"
	EventCommentUpdated   EventKind = "comment.updated"
	EventCommentDeleted   EventKind = "comment.deleted"
	EventProjectCreated   EventKind = "project.created"
	EventProjectUpdated   EventKind = "project.updated"
	EventProjectDeleted   EventKind = "project.deleted"
	EventCategoryCreated  EventKind = "category.created"
	EventCategoryUpdated  EventKind = "category.updated"
	EventCategoryDeleted  EventKind = "category.deleted"
	EventMemberAdded      EventKind = "member.added"
	EventMemberUpdated    EventKind = "member.updated"
	EventMemberRemoved    EventKind = "member.removed"
	EventTokenCreated     EventKind = "token.created"
	EventTokenRevoked     EventKind = "token.revoked"
)

// EventKinds lists every kind, in the order the docs list them.
var EventKinds = []EventKind{
	EventProcedureCreated, EventProcedureUpdated, EventProcedureMoved, EventProcedureDeleted,
	EventCommentCreated, EventCommentUpdated, EventCommentDeleted,
	EventProjectCreated, EventProjectUpdated, EventProjectDeleted,
	EventCategoryCreated, EventCategoryUpdated, EventCategoryDeleted,
	EventMemberAdded, EventMemberUpdated, EventMemberRemoved,
	EventTokenCreated, EventTokenRevoked,
}

// ValidEventKind reports whether k is one of EventKinds.
func ValidEventKind(k EventKind) bool {
	for _, known := range EventKinds {
		if k == known {
			return true
		}
	}
	return false
}

// FieldChange is one field a write changed: its API name and its values
// before and after, as the API renders them (null when the field was unset,
// or the record did not exist). A text that may be long (a procedure's
// content, a comment's text) is logged as its Digest, never as itself.
type FieldChange struct {
	Field  string          `json:"field"`
	Before json.RawMessage `json:"before"`
	After  json.RawMessage `json:"after"`
}

// Digest stands in the log for a long text: its size in bytes and the hex
// SHA-256 of its UTF-8 bytes, so that a reader can tell whether it changed
// (and check a copy) without the log holding it.
type Digest struct {
	Size   int    `json:"size"`
	SHA256 string `json:"sha256"`
}

func digestOf(text *string) *Digest {
	if text == nil {
		return nil
	}
	sum := sha256.Sum256([]byte(*text))
	return &Digest{Size: len(*text), SHA256: hex.EncodeToString(sum[:])}
}

// field is one named value of a record, as a FieldChange renders it.
type field struct {
	name  string
	value any
}

// fields are a record's logged fields, in a fixed order (nil: no record).
type fields []field

// changes lists the fields whose value differs between before and after
// (either may be nil: a create or a delete lists every field). Both list
// the same fields in the same order.
func changes(before, after fields) ([]FieldChange, error) {
	n := max(len(before), len(after))
	out := make([]FieldChange, 0, n)
	for i := 0; i < n; i++ {
		var name string
		b, a := json.RawMessage("null"), json.RawMessage("null")
		var err error
		if before != nil {
			name = before[i].name
			if b, err = jsonValue(before[i].value); err != nil {
				return nil, err
			}
		}
		if after != nil {
			name = after[i].name
			if a, err = jsonValue(after[i].value); err != nil {
				return nil, err
			}
		}
		if string(a) != string(b) {
			out = append(out, FieldChange{Field: name, Before: b, After: a})
		}
	}
	return out, nil
}

// jsonValue renders v as the API does: times in timefmt's layout, nil
// pointers as null.
func jsonValue(v any) (json.RawMessage, error) {
	switch t := v.(type) {
	case time.Time:
		return json.Marshal(timefmt.Format(t))
	case *time.Time:
		if t == nil {
			return json.RawMessage("null"), nil
		}
		return json.Marshal(timefmt.Format(*t))
	}
	return json.Marshal(v)
}

// idOrNil renders an optional id.
func idOrNil(id *uuid.UUID) any {
	if id == nil {
		return nil
	}
	return id.String()
}

func procedureFields(p *ent.Procedure) fields {
	if p == nil {
		return nil
	}
	return fields{
		{"name", p.Name},
		{"content", digestOf(p.Content)},
		{"state", p.State},
		{"priority", p.Priority},
		{"projectId", p.ProjectID.String()},
		{"categoryId", idOrNil(p.CategoryID)},
		{"doerId", idOrNil(p.DoerID)},
		{"dueAt", p.DueAt},
		{"position", p.Position},
		{"captureId", p.CaptureID},
		{"displayVideo", p.DisplayVideo},
		{"isFineTunedData", p.IsFineTunedData},
	}
}

func commentFields(c *ent.Comment) fields {
	if c == nil {
		return nil
	}
	return fields{{"text", digestOf(&c.Text)}}
}

func projectFields(p *ent.Project) fields {
	if p == nil {
		return nil
	}
	return fields{{"name", p.Name}, {"startedAt", p.StartedAt}, {"dueAt", p.DueAt}}
}

func categoryFields(c *ent.Category) fields {
	if c == nil {
		return nil
	}
	return fields{{"name", c.Name}}
}

func memberFields(m *ent.Member) fields {
	if m == nil {
		return nil
	}
	return fields{{"name", m.Name}, {"email", m.Email}, {"role", m.Role}}
}

func tokenFields(t *ent.Token) fields {
	if t == nil {
		return nil
	}
	return fields{{"name", t.Name}, {"memberId", t.MemberID.String()}, {"expiresAt", t.ExpiresAt}, {"revokedAt", t.RevokedAt}}
}

// logged is one event to append: what was written, and the procedure and
// project it belongs to (for history and webhook filters).
type logged struct {
	kind        EventKind
	entityID    uuid.UUID
	procedureID *uuid.UUID
	projectID   *uuid.UUID
	before      fields
	after       fields
	// facets: a procedure's, before and after (its Change's), so that a
	// replayed subscription filters as a live one does.
	facets *eventFacets
}

// eventFacets are the facets a procedure event logs.
type eventFacets struct {
	Before *Facets `json:"before,omitempty"`
	After  *Facets `json:"after,omitempty"`
}

// logEvent appends e to the change log, in tx, at version: one INSERT,
// the only statement the log adds to a write. me is the acting viewer (its
// member and token are the actor; the operator's commands act as none).
func logEvent(ctx context.Context, tx *ent.Tx, me *viewer.Viewer, version int64, e logged) error {
	fc, err := changes(e.before, e.after)
	if err != nil {
		return err
	}
	changed, err := json.Marshal(fc)
	if err != nil {
		return err
	}
	create := tx.Event.Create().SetWorkspaceID(me.WorkspaceID).SetVersion(version).SetKind(string(e.kind)).
		SetEntityID(e.entityID).SetNillableProcedureID(e.procedureID).SetNillableProjectID(e.projectID).
		SetChanges(string(changed))
	if me.MemberID != uuid.Nil {
		create.SetActorMemberID(me.MemberID)
	}
	if me.TokenID != uuid.Nil {
		create.SetActorTokenID(me.TokenID)
	}
	if e.facets != nil {
		facets, err := json.Marshal(e.facets)
		if err != nil {
			return err
		}
		create.SetFacets(string(facets))
	}
	return create.Exec(ctx)
}

// eventInsert is logEvent's INSERT as SQL, for a statement that knows the
// version only as an expression (the bump of fieldsChanged): it writes
// "INSERT INTO events (…) VALUES (…, <version>, …)" with the same values
// logEvent would store.
func eventInsert(me *viewer.Viewer, e logged) (func(b *sql.Builder, version string), error) {
	fc, err := changes(e.before, e.after)
	if err != nil {
		return nil, err
	}
	changed, err := json.Marshal(fc)
	if err != nil {
		return nil, err
	}
	var facets *string
	if e.facets != nil {
		raw, err := json.Marshal(e.facets)
		if err != nil {
			return nil, err
		}
		facets = new(string)
		*facets = string(raw)
	}
	optional := func(id uuid.UUID) *uuid.UUID {
		if id == uuid.Nil {
			return nil
		}
		return &id
	}
	values := []any{ids.New(ids.KindEvent), me.WorkspaceID, nil, string(e.kind), e.entityID, e.procedureID, e.projectID,
		optional(me.MemberID), optional(me.TokenID), time.Now().UTC().Truncate(time.Microsecond), string(changed), facets}
	columns := []string{event.FieldID, event.FieldWorkspaceID, event.FieldVersion, event.FieldKind, event.FieldEntityID,
		event.FieldProcedureID, event.FieldProjectID, event.FieldActorMemberID, event.FieldActorTokenID,
		event.FieldCreatedAt, event.FieldChanges, event.FieldFacets}
	return func(b *sql.Builder, version string) {
		b.WriteString(`INSERT INTO "` + event.Table + `" (`)
		for i, c := range columns {
			if i > 0 {
				b.Comma()
			}
			b.Ident(c)
		}
		// VALUES, not SELECT: its arguments take their columns' types.
		b.WriteString(") VALUES (")
		for i, v := range values {
			if i > 0 {
				b.Comma()
			}
			if columns[i] == event.FieldVersion {
				b.WriteString(version)
				continue
			}
			b.Arg(nullable(v))
		}
		b.WriteString(")")
	}, nil
}

// nullable turns a nil pointer into an untyped nil argument.
func nullable(v any) any {
	switch p := v.(type) {
	case *uuid.UUID:
		if p == nil {
			return nil
		}
		return *p
	case *string:
		if p == nil {
			return nil
		}
		return *p
	}
	return v
}

// procedureLogged is the event of a procedure write (before nil: created;
// after nil: deleted).
func procedureLogged(kind EventKind, c Change, before, after *ent.Procedure) logged {
	e := logged{kind: kind, before: procedureFields(before), after: procedureFields(after),
		facets: &eventFacets{Before: c.Before, After: c.After}}
	id := c.ProcedureID
	e.entityID, e.procedureID = id, &id
	switch {
	case after != nil:
		e.projectID = &after.ProjectID
	case before != nil:
		e.projectID = &before.ProjectID
	}
	return e
}

// recordLogged is the event of a write of a record that belongs to no
// procedure (a project, a category, a member, a token).
func recordLogged(kind EventKind, id uuid.UUID, before, after fields) logged {
	e := logged{kind: kind, entityID: id, before: before, after: after}
	if ids.KindOf(id) == ids.KindProject {
		e.projectID = &id
	}
	return e
}

// written logs e at the version of the exclusive write me acts in.
func written[T any](ctx context.Context, tx *ent.Tx, me *viewer.Viewer, rec T, e logged) (T, error) {
	if err := logEvent(ctx, tx, me, me.WorkspaceVersion, e); err != nil {
		var none T
		return none, err
	}
	return rec, nil
}

// commentLogged is the event of a comment write on c's procedure (before
// nil: added; after nil: deleted). project is the procedure's, when the
// write read it (an edit or a delete does not: its event has no project).
func commentLogged(kind EventKind, c Change, project *uuid.UUID, before, after *ent.Comment) logged {
	e := logged{kind: kind, procedureID: &c.ProcedureID, projectID: project,
		before: commentFields(before), after: commentFields(after), facets: &eventFacets{Before: c.Before, After: c.After}}
	if after != nil {
		e.entityID = after.ID
	} else {
		e.entityID = before.ID
	}
	return e
}

// Event is one event of the change log as the API shows it: REST's events,
// webhook bodies (docs/api.md, "Events").
type Event struct {
	ID          string        `json:"id"`
	Type        EventKind     `json:"type"`
	WorkspaceID string        `json:"workspaceId"`
	Version     int64         `json:"version"`
	CreatedAt   string        `json:"createdAt"`
	Entity      EventEntity   `json:"entity"`
	ProcedureID *string       `json:"procedureId"`
	ProjectID   *string       `json:"projectId"`
	Actor       EventActor    `json:"actor"`
	Changes     []FieldChange `json:"changes"`
}

// EventEntity names the record an event wrote.
type EventEntity struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// EventActor is who wrote: a member and the token they used (both null
// for the operator's commands).
type EventActor struct {
	MemberID *string `json:"memberId"`
	TokenID  *string `json:"tokenId"`
}

// EventOf renders a logged event. Errors: a row whose changes are not the
// JSON logEvent writes.
func EventOf(e *ent.Event) (Event, error) {
	out := Event{ID: e.ID.String(), Type: EventKind(e.Kind), WorkspaceID: e.WorkspaceID.String(), Version: e.Version,
		CreatedAt: timefmt.Format(e.CreatedAt), Entity: EventEntity{Type: entityType(EventKind(e.Kind)), ID: e.EntityID.String()},
		ProcedureID: idString(e.ProcedureID), ProjectID: idString(e.ProjectID),
		Actor: EventActor{MemberID: idString(e.ActorMemberID), TokenID: idString(e.ActorTokenID)}}
	if err := json.Unmarshal([]byte(e.Changes), &out.Changes); err != nil {
		return Event{}, err
	}
	if out.Changes == nil {
		out.Changes = []FieldChange{}
	}
	return out, nil
}

// entityType is the record type an event kind names: "procedure" of
// "procedure.updated".
func entityType(k EventKind) string {
	for i := 0; i < len(k); i++ {
		if k[i] == '.' {
			return string(k[:i])
		}
	}
	return string(k)
}

func idString(id *uuid.UUID) *string {
	if id == nil {
		return nil
	}
	s := id.String()
	return &s
}

// ReplayedChange is the live Change a logged event stands for, for a
// subscription that resumes from the log: ok is false for the events live
// subscribers are not sent (projects, categories, members, tokens; access
// changes reach subscriptions as they happen).
func ReplayedChange(e *ent.Event) (c Change, ok bool, err error) {
	switch EventKind(e.Kind) {
	case EventProcedureCreated:
		c.Kind = ProcedureCreated
	case EventProcedureUpdated:
		c.Kind = ProcedureUpdated
	case EventProcedureMoved:
		c.Kind = ProcedureMoved
	case EventProcedureDeleted:
		c.Kind = ProcedureDeleted
	case EventCommentCreated, EventCommentUpdated, EventCommentDeleted:
		c.Kind = ProcedureCommented
	default:
		return Change{}, false, nil
	}
	if e.ProcedureID == nil {
		return Change{}, false, fmt.Errorf("core: event %s (%s) names no procedure", e.ID, e.Kind)
	}
	c.WorkspaceID, c.ProcedureID = e.WorkspaceID, *e.ProcedureID
	if e.Facets != nil {
		var f eventFacets
		if err := json.Unmarshal([]byte(*e.Facets), &f); err != nil {
			return Change{}, false, fmt.Errorf("core: event %s: facets: %w", e.ID, err)
		}
		c.Before, c.After = f.Before, f.After
	}
	return c, true, nil
}
