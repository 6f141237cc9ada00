package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"

	"github.com/procsvc/procsvc/internal/ids"
)

// Comment is a member's note on a procedure; it goes when the procedure goes.
type Comment struct{ ent.Schema }

// Mixin of the Comment.
func (Comment) Mixin() []ent.Mixin { return []ent.Mixin{TenantMixin{}, TimeMixin{}} }

// Annotations of the Comment: writes return the row an update leaves without
// reading it back (Applied).
func (Comment) Annotations() []schema.Annotation { return []schema.Annotation{AppliedUpdates{}} }

// Fields of the Comment.
func (Comment) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("id", ids.New(ids.KindComment)).Default(ids.Generator(ids.KindComment)).Immutable(),
		field.UUID("workspace_id", ids.New(ids.KindWorkspace)).Immutable(),
		field.UUID("procedure_id", ids.New(ids.KindProcedure)).Immutable(),
		field.UUID("author_id", ids.New(ids.KindMember)).Immutable(),
		field.Text("text").NotEmpty(),
	}
}

// Edges of the Comment.
func (Comment) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("workspace", Workspace.Type).Ref("comments").Field("workspace_id").Unique().Required().Immutable(),
		edge.From("procedure", Procedure.Type).Ref("comments").Field("procedure_id").Unique().Required().Immutable(),
		edge.From("author", Member.Type).Ref("comments").Field("author_id").Unique().Required().Immutable(),
	}
}

// Indexes of the Comment: a procedure's comments in their list's order
// (created_at, then id), so that its oldest or newest n, or the n past a
// cursor, are an index range of n entries however many it holds.
func (Comment) Indexes() []ent.Index {
	return []ent.Index{index.Fields("procedure_id", "created_at", "id")}
}
