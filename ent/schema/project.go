package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"

	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/limits"
)

// Project groups procedures; it cannot be deleted while it has any.
type Project struct{ ent.Schema }

// Mixin of the Project.
func (Project) Mixin() []ent.Mixin { return []ent.Mixin{TenantMixin{}, TimeMixin{}} }

// Fields of the Project.
func (Project) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("id", ids.New(ids.KindProject)).Default(ids.Generator(ids.KindProject)).Immutable(),
		field.UUID("workspace_id", ids.New(ids.KindWorkspace)).Immutable(),
		field.String("name").NotEmpty().Validate(maxChars(limits.Title)),
		field.Time("started_at").Optional().Nillable(),
		field.Time("due_at").Optional().Nillable(),
	}
}

// Edges of the Project.
func (Project) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("workspace", Workspace.Type).Ref("projects").Field("workspace_id").Unique().Required().Immutable(),
		edge.To("procedures", Procedure.Type).Annotations(entsql.OnDelete(entsql.Restrict)),
	}
}

// Indexes of the Project.
func (Project) Indexes() []ent.Index {
	return []ent.Index{index.Fields("workspace_id", "name")}
}
