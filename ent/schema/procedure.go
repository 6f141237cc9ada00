package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"

	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/limits"
)

// Procedure is the tracked work item.
type Procedure struct{ ent.Schema }

// Mixin of the Procedure.
func (Procedure) Mixin() []ent.Mixin { return []ent.Mixin{TenantMixin{}, TimeMixin{}} }

// Annotations of the Procedure: writes return the row an update leaves without
// reading it back (Applied).
func (Procedure) Annotations() []schema.Annotation { return []schema.Annotation{AppliedUpdates{}} }

// Fields of the Procedure.
func (Procedure) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("id", ids.New(ids.KindProcedure)).Default(ids.Generator(ids.KindProcedure)).Immutable(),
		field.UUID("workspace_id", ids.New(ids.KindWorkspace)).Immutable(),
		field.Int64("number").Immutable().Comment("per-workspace sequence number"),
		field.String("short_id").Immutable().Comment("workspace key and number, e.g. PRC-12"),
		field.String("name").NotEmpty().Validate(maxChars(limits.Name)),
		field.Enum("priority").Values("LOW", "MEDIUM", "HIGH"),
		field.Enum("state").Values("TODO", "IN_PROGRESS", "COMPLETED", "WAITING"),
		field.Text("content").Optional().Nillable(),
		field.UUID("category_id", ids.New(ids.KindCategory)).Optional().Nillable(),
		field.UUID("doer_id", ids.New(ids.KindMember)).Optional().Nillable(),
		field.UUID("creator_id", ids.New(ids.KindMember)).Immutable(),
		field.UUID("project_id", ids.New(ids.KindProject)),
		field.String("project_name").Default("").Comment("copy of the project's name, kept by the core, so that sorting by project name is an index range"),
		field.Float("position").Comment("order inside the (project, state) column"),
		field.Time("due_at"),
		field.String("capture_id").Optional().Nillable().Validate(maxChars(limits.Title)),
		field.Bool("display_video").Default(false),
		field.Bool("is_fine_tuned_data").Default(false),
		field.Int("comment_count").Default(0).Immutable().
			Comment("how many comments the procedure holds: 0 when it is created, then kept by the database's triggers on comments (internal/database/commentcount.go), which ent never updates"),
	}
}

// Edges of the Procedure.
func (Procedure) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("workspace", Workspace.Type).Ref("procedures").Field("workspace_id").Unique().Required().Immutable(),
		edge.From("category", Category.Type).Ref("procedures").Field("category_id").Unique(),
		edge.From("doer", Member.Type).Ref("assigned").Field("doer_id").Unique(),
		edge.From("creator", Member.Type).Ref("created").Field("creator_id").Unique().Required().Immutable(),
		edge.From("project", Project.Type).Ref("procedures").Field("project_id").Unique().Required(),
		edge.To("comments", Comment.Type).Annotations(entsql.OnDelete(entsql.Cascade)),
	}
}

// Indexes of the Procedure: one for each list filter and sort, all led by the
// workspace so that one tenant's size never slows another's pages; and, for
// the nested lists (a project's, a category's, a doer's procedures), one
// per parent in the default order, so that each parent's first page is a
// short index range (parents belong to one workspace).
func (Procedure) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("workspace_id", "short_id").Unique(),
		index.Fields("workspace_id", "created_at", "id"),
		index.Fields("workspace_id", "due_at", "id"),
		index.Fields("workspace_id", "name", "id"),
		index.Fields("workspace_id", "project_name", "id"),
		index.Fields("workspace_id", "state", "created_at"),
		index.Fields("workspace_id", "priority", "created_at"),
		index.Fields("category_id", "created_at", "id"),
		index.Fields("doer_id", "created_at", "id"),
		index.Fields("project_id", "created_at", "id"),
		index.Fields("creator_id"),
		index.Fields("project_id", "state", "position"),
	}
}
