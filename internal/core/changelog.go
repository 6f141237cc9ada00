package core

// The change log (docs/api.md, "Events"): every write appends one event, in
// its own transaction and at the workspace version it commits, naming what
// it wrote, who wrote it, and each field it changed with the value before
// and after. History, the events connection, resumed subscriptions and
// webhooks all read it.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

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
	EventProcedureCreated  EventKind = "procedure.created"
	EventProcedureUpdated  EventKind = "procedure.updated"
	EventProcedureMoved    EventKind = "procedure.moved"
	EventProcedureDeleted  EventKind = "procedure.deleted"
	EventCommentCreated    EventKind = "comment.created"
	EventCommentUpdated    EventKind = "comment.updated"
	EventCommentDeleted    EventKind = "comment.deleted"
	EventProjectCreated    EventKind = "project.created"
	EventProjectUpdated    EventKind = "project.updated"
	EventProjectDeleted    EventKind = "project.deleted"
	EventCategoryCreated   EventKind = "category.created"
	EventCategoryUpdated   EventKind = "category.updated"
	EventCategoryDeleted   EventKind = "category.deleted"
	EventMemberAdded       EventKind = "member.added"
	EventMemberUpdated     EventKind = "member.updated"
	EventMemberRemoved     EventKind = "member.removed"
	EventMemberUnlinked    EventKind = "member.unlinked"
	EventMemberLinkAllowed EventKind = "member.link_allowed"
	EventTokenCreated      EventKind = "token.created"
	EventTokenRevoked      EventKind = "token.revoked"
)

// EventKinds lists every kind, in the order the docs list them.
var EventKinds = []EventKind{
	EventProcedureCreated, EventProcedureUpdated, EventProcedureMoved, EventProcedureDeleted,
	EventCommentCreated, EventCommentUpdated, EventCommentDeleted,
	EventProjectCreated, EventProjectUpdated, EventProjectDeleted,
	EventCategoryCreated, EventCategoryUpdated, EventCategoryDeleted,
	EventMemberAdded, EventMemberUpdated, EventMemberRemoved, EventMemberUnlinked, EventMemberLinkAllowed,
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

// logEntry is one entry of the change log, as a write describes it: what
// it wrote, and the procedure and project it belongs to (for history and
// webhook filters). entryRow makes it a row.
type logEntry struct {
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

// eventFacets are the facets a procedure's entry logs.
type eventFacets struct {
	Before *Facets `json:"before,omitempty"`
	After  *Facets `json:"after,omitempty"`
}

// entryRow is the change log's row of e, written by me at version: one
// value for each column of the table, in event.Columns' order (nil:
// NULL), whichever statement writes it (insertEntry, or sharedFinish's,
// where version is SQL). Its id and created_at are the schema's defaults
// (ent's event.DefaultID, event.DefaultCreatedAt), never restated here. A
// column the table has and entryRow does not fill is an error, so that a
// column added to the schema fails every write until it is written here.
// me's member and token are the actor (the operator's commands act as
// none).
func entryRow(me *viewer.Viewer, e logEntry, version any) ([]any, error) {
	fc, err := changes(e.before, e.after)
	if err != nil {
		return nil, err
	}
	changed, err := json.Marshal(fc)
	if err != nil {
		return nil, err
	}
	var facets any
	if e.facets != nil {
		raw, err := json.Marshal(e.facets)
		if err != nil {
			return nil, err
		}
		facets = string(raw)
	}
	values := map[string]any{
		event.FieldID:            event.DefaultID(),
		event.FieldWorkspaceID:   me.WorkspaceID,
		event.FieldVersion:       version,
		event.FieldKind:          string(e.kind),
		event.FieldEntityID:      e.entityID,
		event.FieldProcedureID:   idColumn(e.procedureID),
		event.FieldProjectID:     idColumn(e.projectID),
		event.FieldActorMemberID: actorColumn(me.MemberID),
		event.FieldActorTokenID:  actorColumn(me.TokenID),
		event.FieldCreatedAt:     event.DefaultCreatedAt(),
		event.FieldChanges:       string(changed),
		event.FieldFacets:        facets,
	}
	return tableRow(event.Columns, values)
}

// tableRow is values (column → value) as a row of a table of columns, in
// their order. Errors: a column values lacks, or a value for a column the
// table lacks.
func tableRow(columns []string, values map[string]any) ([]any, error) {
	row := make([]any, len(columns))
	for i, col := range columns {
		v, ok := values[col]
		if !ok {
			return nil, fmt.Errorf("core: entryRow does not fill the change log's column %q", col)
		}
		row[i] = v
	}
	if len(values) != len(columns) {
		return nil, fmt.Errorf("core: entryRow fills %d columns, the change log has %d", len(values), len(columns))
	}
	return row, nil
}

// idColumn is an optional id as a column's value: nil (NULL) or the id.
func idColumn(id *uuid.UUID) any {
	if id == nil {
		return nil
	}
	return *id
}

// actorColumn is an id of which uuid.Nil means none, as a column's value.
func actorColumn(id uuid.UUID) any {
	if id == uuid.Nil {
		return nil
	}
	return id
}

// procedureEntry is the entry of a procedure write (before nil: created;
// after nil: deleted).
func procedureEntry(kind EventKind, c Change, before, after *ent.Procedure) logEntry {
	e := logEntry{kind: kind, before: procedureFields(before), after: procedureFields(after),
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

// recordEntry is the entry of a write of a record that belongs to no
// procedure (a project, a category, a member, a token).
func recordEntry(kind EventKind, id uuid.UUID, before, after fields) logEntry {
	e := logEntry{kind: kind, entityID: id, before: before, after: after}
	if ids.KindOf(id) == ids.KindProject {
		e.projectID = &id
	}
	return e
}

// commentEntry is the entry of a comment write on c's procedure (before
// nil: added; after nil: deleted). project is the procedure's, when the
// write read it (an edit or a delete does not: its event has no project).
func commentEntry(kind EventKind, c Change, project *uuid.UUID, before, after *ent.Comment) logEntry {
	e := logEntry{kind: kind, procedureID: &c.ProcedureID, projectID: project,
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
// JSON entryRow writes.
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
