package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"

	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/limits"
)

// Member is a user of one workspace.
type Member struct{ ent.Schema }

// Mixin of the Member.
func (Member) Mixin() []ent.Mixin { return []ent.Mixin{TenantMixin{}} }

// Fields of the Member.
func (Member) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("id", ids.New(ids.KindMember)).Default(ids.Generator(ids.KindMember)).Immutable(),
		field.UUID("workspace_id", ids.New(ids.KindWorkspace)).Immutable(),
		field.String("name").NotEmpty().Validate(maxChars(limits.Title)),
		field.String("email").NotEmpty().Validate(maxChars(limits.Email)).Comment("stored lower-cased; unique per workspace"),
		field.Enum("role").Values("ADMIN", "MEMBER", "VIEWER").Default("MEMBER"),
		field.Time("created_at").Default(nowUTC).Immutable(),
		field.Time("removed_at").Optional().Nillable().Comment("set when the member is removed; their tokens stop working"),
		// The person an identity provider vouches for (docs/api.md,
		// "Authentication"): set together at their first sign-in with the
		// provider, when its verified email equals email. OpenID Connect
		// bounds a subject to 255 ASCII characters.
		field.String("oidc_issuer").Optional().Nillable().Validate(maxChars(2048)).Comment("issuer URL of the identity provider this member signs in with"),
		field.String("oidc_subject").Optional().Nillable().Validate(maxChars(255)).Comment("the member's subject at oidc_issuer; unique per workspace"),
		// The person an admin last unlinked from this member (unlinkMember):
		// never linked to it again by their verified email, which would
		// undo the unlink at their next request. Another person with the
		// same verified email may still link.
		field.String("oidc_unlinked_issuer").Optional().Nillable().Validate(maxChars(2048)).Comment("issuer of the person last unlinked from this member"),
		field.String("oidc_unlinked_subject").Optional().Nillable().Validate(maxChars(255)).Comment("subject of the person last unlinked from this member"),
	}
}

// Edges of the Member.
func (Member) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("workspace", Workspace.Type).Ref("members").Field("workspace_id").Unique().Required().Immutable(),
		edge.To("tokens", Token.Type),
		edge.To("assigned", Procedure.Type),
		edge.To("created", Procedure.Type),
		edge.To("comments", Comment.Type),
	}
}

// Indexes of the Member.
func (Member) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("workspace_id", "email").Unique(),
		index.Fields("workspace_id", "name"),
		// One member per person in a workspace; NULLs (members not linked)
		// are distinct, on SQLite and PostgreSQL alike.
		index.Fields("workspace_id", "oidc_issuer", "oidc_subject").Unique(),
		// A person's members across workspaces, at every request, and
		// their invitations by email, at the first sign-in.
		index.Fields("oidc_issuer", "oidc_subject"),
		index.Fields("email"),
	}
}
