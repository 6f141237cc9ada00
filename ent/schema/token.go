package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"

	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/limits"
)

// Token is a bearer credential of one member. Only its SHA-256 is stored.
type Token struct{ ent.Schema }

// Mixin of the Token.
func (Token) Mixin() []ent.Mixin { return []ent.Mixin{TenantMixin{}} }

// Fields of the Token.
func (Token) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("id", ids.New(ids.KindToken)).Default(ids.Generator(ids.KindToken)).Immutable(),
		field.UUID("workspace_id", ids.New(ids.KindWorkspace)).Immutable(),
		field.UUID("member_id", ids.New(ids.KindMember)).Immutable(),
		field.String("name").Validate(maxChars(limits.Title)).Default(""),
		field.String("secret_hash").Unique().Immutable().Sensitive().Comment("hex SHA-256 of the secret"),
		field.Time("created_at").Default(nowUTC).Immutable(),
		field.Time("last_used_at").Optional().Nillable(),
		field.Time("expires_at").Optional().Nillable(),
		field.Time("revoked_at").Optional().Nillable(),
	}
}

// Edges of the Token.
func (Token) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("workspace", Workspace.Type).Ref("tokens").Field("workspace_id").Unique().Required().Immutable(),
		edge.From("member", Member.Type).Ref("tokens").Field("member_id").Unique().Required().Immutable(),
	}
}
