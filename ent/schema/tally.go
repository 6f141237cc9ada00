package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"

	"github.com/procsvc/procsvc/internal/ids"
)

// ProcedureTally is the exact number of a workspace's procedures in one large
// set: all of them ("all"), one state ("state:TODO") or one priority
// ("priority:HIGH"). The core keeps the tallies in each write's own
// transaction, under the workspace lock, so the totals of the lists that
// filter by nothing, a state or a priority are read instead of counted
// (docs/performance.md).
type ProcedureTally struct{ ent.Schema }

// Mixin of the ProcedureTally.
func (ProcedureTally) Mixin() []ent.Mixin { return []ent.Mixin{TenantMixin{}} }

// Fields of the ProcedureTally.
func (ProcedureTally) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("workspace_id", ids.New(ids.KindWorkspace)).Immutable(),
		field.String("key").Immutable().Comment(`"all", "state:<STATE>", "priority:<PRIORITY>", or a parent's: "project:<id>", "category:<id>", "doer:<id>"`),
		field.Int64("count").Default(0),
	}
}

// Edges of the ProcedureTally.
func (ProcedureTally) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("workspace", Workspace.Type).Ref("procedure_tallies").Field("workspace_id").Unique().Required().Immutable(),
	}
}

// Indexes of the ProcedureTally.
func (ProcedureTally) Indexes() []ent.Index {
	return []ent.Index{index.Fields("workspace_id", "key").Unique()}
}
