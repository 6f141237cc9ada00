package schema

import (
	"context"
	"errors"

	"entgo.io/ent"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"

	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/limits"
	"github.com/procsvc/procsvc/internal/tenancy"
	"github.com/procsvc/procsvc/internal/viewer"
)

// Workspace is a tenant: every other record belongs to exactly one.
type Workspace struct{ ent.Schema }

// Fields of the Workspace.
func (Workspace) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("id", ids.New(ids.KindWorkspace)).Default(ids.Generator(ids.KindWorkspace)).Immutable(),
		field.String("name").NotEmpty().Validate(maxChars(limits.Title)),
		field.String("key").Default("PRC").Match(limits.WorkspaceKey).Comment("prefix of procedure shortIds"),
		field.Int64("procedure_seq").Default(0).Comment("last procedure number handed out; shortIds are never reused"),
		field.Int64("version").Default(0).Comment("bumped by every write inside the workspace"),
		field.Int64("events_pruned_to").Default(0).Comment("the highest version of an event retention has pruned: a subscription resumed from an older version cannot be replayed"),
		field.Time("created_at").Default(nowUTC).Immutable(),
	}
}

// Edges of the Workspace.
func (Workspace) Edges() []ent.Edge {
	return []ent.Edge{
		edge.To("members", Member.Type),
		edge.To("tokens", Token.Type),
		edge.To("projects", Project.Type),
		edge.To("categories", Category.Type),
		edge.To("procedures", Procedure.Type),
		edge.To("comments", Comment.Type),
		edge.To("procedure_tallies", ProcedureTally.Type),
	}
}

// Interceptors of the Workspace: a viewer sees only its own workspace.
func (Workspace) Interceptors() []ent.Interceptor {
	return []ent.Interceptor{tenantInterceptor(tenancy.WorkspacesColumn)}
}

// errWorkspaceLifecycle refuses creating or deleting a workspace outside the
// system context.
var errWorkspaceLifecycle = errors.New("tenancy: workspaces are created and deleted by the system only")

// Hooks of the Workspace: only the system creates or deletes workspaces, and a
// viewer updates only its own.
func (Workspace) Hooks() []ent.Hook {
	return []ent.Hook{func(next ent.Mutator) ent.Mutator {
		return ent.MutateFunc(func(ctx context.Context, m ent.Mutation) (ent.Value, error) {
			if viewer.IsSystem(ctx) {
				return next.Mutate(ctx, m)
			}
			if m.Op().Is(ent.OpCreate) || m.Op().Is(ent.OpDelete) || m.Op().Is(ent.OpDeleteOne) {
				return nil, errWorkspaceLifecycle
			}
			if err := scopeToViewer(ctx, tenancy.WorkspacesColumn, m); err != nil {
				return nil, err
			}
			return next.Mutate(ctx, m)
		})
	}}
}
