package tenancy_test

import (
	"context"
	"errors"
	"testing"

	"entgo.io/ent/dialect"
	"entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/internal/tenancy"
	"github.com/procsvc/procsvc/internal/viewer"
)

// TestOf: a viewer is confined to its workspace, the system context to
// none, and a context with neither fails closed.
func TestOf(t *testing.T) {
	ws := uuid.New()
	for _, c := range []struct {
		name       string
		ctx        context.Context
		want       uuid.UUID
		wantScoped bool
		wantErr    error
	}{
		{"viewer", viewer.NewContext(context.Background(), &viewer.Viewer{WorkspaceID: ws}), ws, true, nil},
		{"system", viewer.System(context.Background()), uuid.Nil, false, nil},
		{"system over a viewer", viewer.System(viewer.NewContext(context.Background(), &viewer.Viewer{WorkspaceID: ws})), uuid.Nil, false, nil},
		{"neither", context.Background(), uuid.Nil, true, viewer.ErrNoViewer},
	} {
		got, scoped, err := tenancy.Of(c.ctx)
		if got != c.want || scoped != c.wantScoped || !errors.Is(err, c.wantErr) {
			t.Errorf("%s: Of = %v, %v, %v; want %v, %v, %v", c.name, got, scoped, err, c.want, c.wantScoped, c.wantErr)
		}
	}
}

// TestWhere: the builder's and the hand-written form of the rule name the
// same column and workspace.
func TestWhere(t *testing.T) {
	ws := uuid.New()
	sel := sql.Dialect(dialect.Postgres).Select("id").From(sql.Table("comments"))
	tenancy.Where(tenancy.Column, ws)(sel)
	query, args := sel.Query()
	if want := `SELECT "id" FROM "comments" WHERE "comments"."workspace_id" = $1`; query != want || len(args) != 1 || args[0] != ws {
		t.Errorf("Where: %s %v; want %s [%v]", query, args, want, ws)
	}
	var hand sql.Builder
	hand.SetDialect(dialect.Postgres)
	tenancy.WriteWhere(&hand, "comments", tenancy.Column, ws)
	if got, args := hand.Query(); got != `"comments"."workspace_id" = $1` || len(args) != 1 || args[0] != ws {
		t.Errorf("WriteWhere: %s %v; want %s [%v]", got, args, `"comments"."workspace_id" = $1`, ws)
	}
}
