package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/dialect"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"

	"github.com/procsvc/procsvc/internal/ids"
)

// jsonb stores a JSON text field as jsonb on PostgreSQL (text on SQLite).
var jsonb = map[string]string{dialect.Postgres: "jsonb"}

// Event is one row of the change log (docs/api.md, "Events"): every write
// appends one in its own transaction, at the workspace version it
// committed, so the log is ordered by version with no gap a committed write
// could fall into. Rows are never updated; retention deletes the oldest in
// batches. The workspace is a plain column, not an edge: an append-only log
// pays no foreign-key check per write.
type Event struct{ ent.Schema }

// Mixin of the Event.
func (Event) Mixin() []ent.Mixin { return []ent.Mixin{TenantMixin{}} }

// Fields of the Event.
func (Event) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("id", ids.New(ids.KindEvent)).Default(ids.Generator(ids.KindEvent)).Immutable(),
		field.UUID("workspace_id", ids.New(ids.KindWorkspace)).Immutable(),
		field.Int64("version").Immutable().Comment("the workspace's version the write committed"),
		field.String("kind").Immutable().Comment("e.g. procedure.updated (core.EventKind)"),
		field.UUID("entity_id", ids.New(ids.KindUnknown)).Immutable().Comment("the record written; its id names its kind"),
		field.UUID("procedure_id", ids.New(ids.KindProcedure)).Optional().Nillable().Immutable().Comment("the procedure written or commented on: its history"),
		field.UUID("project_id", ids.New(ids.KindProject)).Optional().Nillable().Immutable().Comment("the project written, or the procedure's (after the write, or before a delete): webhook filters"),
		field.UUID("actor_member_id", ids.New(ids.KindMember)).Optional().Nillable().Immutable().Comment("the member who wrote; null for the operator's commands"),
		field.UUID("actor_token_id", ids.New(ids.KindToken)).Optional().Nillable().Immutable().Comment("the token the member wrote with"),
		field.Time("created_at").Default(nowUTC).Immutable(),
		// JSON held as text: lib/pq sends a []byte argument as binary
		// (binary_parameters), which jsonb's binary input refuses.
		field.Text("changes").SchemaType(jsonb).Immutable().Comment("the fields written: [{field, before, after}] (core.FieldChange)"),
		field.Text("facets").SchemaType(jsonb).Optional().Nillable().Immutable().Comment("a procedure's facets before and after, for replayed subscriptions' filters"),
	}
}

// Indexes of the Event: the log by version, a procedure's history by
// version, the events list narrowed to an entity, a project, an actor or a
// kind (internal/core/history.go: each page is read newest or oldest first
// straight off its index, and each total counted from it alone, where a
// scan of the workspace's log would read every event the retention
// keeps), and the retention's scan by age. The log's one INSERT per write
// maintains them all.
func (Event) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("workspace_id", "version").Unique(),
		index.Fields("workspace_id", "procedure_id", "version"),
		index.Fields("workspace_id", "entity_id", "version"),
		index.Fields("workspace_id", "project_id", "version"),
		index.Fields("workspace_id", "actor_member_id", "version"),
		index.Fields("workspace_id", "kind", "version"),
		index.Fields("created_at"),
	}
}
