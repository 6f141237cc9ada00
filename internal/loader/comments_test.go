package loader_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"entgo.io/ent/dialect"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/comment"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/loader"
	"github.com/procsvc/procsvc/internal/viewer"
)

// The comments a viewer's loaders read are exactly ent's for the viewer's
// workspace, field for field and in the same order; another workspace's
// procedures have none, and a context without a viewer reads nothing.
func TestCommentsAsEntReadsThem(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		sys := viewer.System(context.Background())
		shape := bench.Shape{Procedures: 30, Projects: 2, Categories: 2, Members: 3, MaxComments: 4}
		a, b := seedTwo(t, db, shape)
		procsOf := func(ws uuid.UUID) []*ent.Procedure {
			procs, err := db.Client.Procedure.Query().Where(procedure.WorkspaceID(ws)).
				WithComments(func(q *ent.CommentQuery) { q.Order(comment.ByCreatedAt(), comment.ByID()) }).All(sys)
			if err != nil {
				t.Fatal(err)
			}
			return procs
		}
		// Seeded comments were created in id order; reversed here, so
		// that an order by id alone would differ from ent's.
		seededA, err := db.Client.Comment.Query().Where(comment.WorkspaceID(a.WorkspaceID)).Order(comment.ByID()).All(sys)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range seededA {
			at := c.CreatedAt.Add(-time.Duration(i) * time.Minute)
			query := "UPDATE comments SET created_at = ? WHERE id = ?"
			if db.Dialect == dialect.Postgres {
				query = "UPDATE comments SET created_at = $1 WHERE id = $2"
			}
			if _, err := db.SQL.ExecContext(sys, query, at, c.ID); err != nil { // created_at is immutable to ent
				t.Fatal(err)
			}
		}
		procsA, procsB := procsOf(a.WorkspaceID), procsOf(b.WorkspaceID)
		var commented int
		for _, p := range procsA {
			if len(p.Edges.Comments) > 1 {
				commented++
			}
		}
		if commented == 0 {
			t.Fatal("no procedure with two comments or more: the order is not checked")
		}
		// A comment in b of a's procedure cannot exist; one of b's
		// procedures is asked for by a's viewer below, as a forged id
		// would be.
		asA := viewer.NewContext(context.Background(), &viewer.Viewer{WorkspaceID: a.WorkspaceID, Role: viewer.RoleViewer})
		run := func(ctx context.Context, fn func(ctx context.Context)) {
			loader.Middleware(db)(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { fn(r.Context()) })).
				ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx))
		}
		run(asA, func(ctx context.Context) {
			if err := loader.PrimeProcedures(ctx, append(procsA, procsB...), loader.Edges{Comments: true}); err != nil {
				t.Fatal(err)
			}
			for _, p := range procsA {
				got, err := loader.Comments(ctx, p.ID, loader.CommentWindow{})
				if err != nil {
					t.Fatal(err)
				}
				want := p.Edges.Comments
				if len(got) != len(want) {
					t.Fatalf("%s: %d comments, want %d", p.ShortID, len(got), len(want))
				}
				for i, w := range want {
					g := got[i]
					if g.ID != w.ID || g.WorkspaceID != w.WorkspaceID || g.ProcedureID != w.ProcedureID || g.AuthorID != w.AuthorID ||
						g.Text != w.Text || !g.CreatedAt.Equal(w.CreatedAt) || !g.UpdatedAt.Equal(w.UpdatedAt) ||
						g.CreatedAt.Location() != w.CreatedAt.Location() {
						t.Fatalf("%s: comment %d = %+v, want %+v", p.ShortID, i, g, w)
					}
				}
			}
			for _, p := range procsB {
				if got, err := loader.Comments(ctx, p.ID, loader.CommentWindow{}); err != nil || got == nil || len(got) != 0 {
					t.Fatalf("a's viewer reading b's %s: %v, %v; want no comments", p.ShortID, got, err)
				}
			}
		})
		run(context.Background(), func(ctx context.Context) {
			if err := loader.PrimeProcedures(ctx, procsA, loader.Edges{Comments: true}); err != viewer.ErrNoViewer {
				t.Fatalf("without a viewer: %v, want %v", err, viewer.ErrNoViewer)
			}
		})
	})
}
