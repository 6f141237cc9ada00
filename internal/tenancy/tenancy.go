// Package tenancy is the one rule that confines every read and write to
// the viewer's workspace: a context acting as a viewer (internal/viewer)
// reaches only the rows of the viewer's workspace, the system context
// (viewer.System) reaches every workspace, and a context with neither fails
// closed (viewer.ErrNoViewer).
//
// ent applies the rule to every query and mutation it builds (the ent
// schema's TenantMixin, and the workspace's own interceptor and hook). The
// statements written past ent's builders apply it through this package
// too: internal/loader's reads of comments and of named records, and the
// core's re-read of the acting member and its version bump.
package tenancy

import (
	"context"

	"entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/internal/viewer"
)

const (
	// Column names, in every tenant-owned table, the workspace a row
	// belongs to.
	Column = "workspace_id"
	// WorkspacesColumn scopes the workspaces table itself: its id.
	WorkspacesColumn = "id"
)

// Of returns the workspace a statement made with ctx is confined to.
// scoped is false for the system context, which is confined to none.
// Errors: viewer.ErrNoViewer when ctx carries neither a viewer nor the
// system marker.
func Of(ctx context.Context) (workspaceID uuid.UUID, scoped bool, err error) {
	if viewer.IsSystem(ctx) {
		return uuid.Nil, false, nil
	}
	v := viewer.FromContext(ctx)
	if v == nil {
		return uuid.Nil, true, viewer.ErrNoViewer
	}
	return v.WorkspaceID, true, nil
}

// Where confines a statement built by ent's SQL builder to workspaceID,
// through column (Column, or WorkspacesColumn on the workspaces table).
func Where(column string, workspaceID uuid.UUID) func(*sql.Selector) {
	return sql.FieldEQ(column, workspaceID)
}

// WriteWhere writes to b, for a statement written by hand, the condition
// that confines it to workspaceID: column (Column, or WorkspacesColumn),
// of table when table is not empty, equal to it.
func WriteWhere(b *sql.Builder, table, column string, workspaceID uuid.UUID) *sql.Builder {
	if table != "" {
		b.WriteString(`"` + table + `".`)
	}
	return b.WriteString(`"` + column + `" = `).Arg(workspaceID)
}
