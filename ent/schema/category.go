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

// Category labels procedures; deleting one leaves its procedures uncategorised.
type Category struct{ ent.Schema }

// Mixin of the Category.
func (Category) Mixin() []ent.Mixin { return []ent.Mixin{TenantMixin{}, TimeMixin{}} }

// Fields of the Category.
func (Category) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("id", ids.New(ids.KindCategory)).Default(ids.Generator(ids.KindCategory)).Immutable(),
		field.UUID("workspace_id", ids.New(ids.KindWorkspace)).Immutable(),
		field.String("name").NotEmpty().Validate(maxChars(limits.Title)),
	}
}

// Edges of the Category.
func (Category) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("workspace", Workspace.Type).Ref("categories").Field("workspace_id").Unique().Required().Immutable(),
		edge.To("procedures", Procedure.Type).Annotations(entsql.OnDelete(entsql.SetNull)),
	}
}

// Indexes of the Category.
func (Category) Indexes() []ent.Index {
	return []ent.Index{index.Fields("workspace_id", "name")}
}
