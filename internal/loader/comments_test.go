package loader_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"entgo.io/ent/dialect"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/comment"
	"github.com/procsvc/procsvc/ent/member"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/limits"
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
				got, _, err := loader.Comments(ctx, p.ID, loader.CommentWindow{})
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
				if got, _, err := loader.Comments(ctx, p.ID, loader.CommentWindow{}); err != nil || got == nil || len(got) != 0 {
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

// A page's comments are read in one statement for every window its views
// take: a view the read covers costs nothing more, one it does not is read
// through the dataloader; a procedure over the bound on comments shows its
// newest limits.CommentPage by default. The text one request
// reads stops at its bound with payload_too_large, and a Reset (a
// mutation's next root field) starts it afresh.
func TestCommentWindows(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		sys := viewer.System(context.Background())
		a, _ := seedTwo(t, db, bench.Shape{Procedures: 2, Projects: 1, Categories: 1, Members: 1})
		procs, err := db.Client.Procedure.Query().Where(procedure.WorkspaceID(a.WorkspaceID)).Order(procedure.ByShortID()).All(sys)
		if err != nil || len(procs) != 2 {
			t.Fatalf("%d procedures: %v", len(procs), err)
		}
		small, legacy := procs[0], procs[1]
		author, err := db.Client.Member.Query().Where(member.WorkspaceID(a.WorkspaceID)).First(sys)
		if err != nil {
			t.Fatal(err)
		}
		counts := map[uuid.UUID]int{small.ID: 7, legacy.ID: limits.CommentPage + 5}
		at := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
		for _, p := range procs {
			// Replace what the seed wrote: c0, c1, … a second apart.
			if _, err := db.Client.Comment.Delete().Where(comment.ProcedureID(p.ID)).Exec(sys); err != nil {
				t.Fatal(err)
			}
			builders := make([]*ent.CommentCreate, counts[p.ID])
			for i := range builders {
				builders[i] = db.Client.Comment.Create().SetWorkspaceID(a.WorkspaceID).SetProcedureID(p.ID).SetAuthorID(author.ID).
					SetText(fmt.Sprintf("c%d", i)).SetCreatedAt(at.Add(time.Duration(i) * time.Second))
			}
			if _, err := db.Client.Comment.CreateBulk(builders...).Save(sys); err != nil {
				t.Fatal(err)
			}
		}
		texts := func(cs []*ent.Comment) []string {
			out := make([]string, len(cs))
			for i, c := range cs {
				out[i] = c.Text
			}
			return out
		}
		span := func(from, to int) []string {
			out := []string{}
			for i := from; i < to; i++ {
				out = append(out, fmt.Sprintf("c%d", i))
			}
			return out
		}
		asA := viewer.NewContext(context.Background(), &viewer.Viewer{WorkspaceID: a.WorkspaceID, Role: viewer.RoleViewer})
		run := func(fn func(ctx context.Context), opts ...loader.Option) {
			loader.Middleware(db, opts...)(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { fn(r.Context()) })).
				ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil).WithContext(asA))
		}
		over := counts[legacy.ID]
		run(func(ctx context.Context) {
			window := loader.CommentWindow{First: 2}.Union(loader.CommentWindow{Last: 3})
			before := db.Statements()
			if err := loader.PrimeProcedures(ctx, procs, loader.Edges{Comments: true, CommentWindow: window}); err != nil {
				t.Fatal(err)
			}
			if n := db.Statements() - before; n != 1 {
				t.Fatalf("priming two views of two procedures' comments ran %d statements", n)
			}
			for _, c := range []struct {
				p    *ent.Procedure
				view loader.CommentWindow
				want []string
			}{
				{small, loader.CommentWindow{First: 2}, span(0, 2)},
				{small, loader.CommentWindow{Last: 3}, span(4, 7)},
				{small, loader.CommentWindow{First: 1}, span(0, 1)},
				{legacy, loader.CommentWindow{First: 1}, span(0, 1)},
				{legacy, loader.CommentWindow{Last: 3}, span(over-3, over)},
			} {
				got, _, err := loader.Comments(ctx, c.p.ID, c.view)
				if err != nil || !slices.Equal(texts(got), c.want) {
					t.Fatalf("%s %+v: %v, %v; want %v", c.p.ShortID, c.view, texts(got), err, c.want)
				}
			}
			if n := db.Statements() - before; n != 1 {
				t.Fatalf("views the read covers ran %d more statements", n-1)
			}
			// Not covered: the legacy procedure's default view, its newest
			// limits.CommentPage, read through the dataloader.
			got, _, err := loader.Comments(ctx, legacy.ID, loader.CommentWindow{})
			if err != nil || !slices.Equal(texts(got), span(over-limits.CommentPage, over)) {
				t.Fatalf("default view of %s: %d comments, %v", legacy.ShortID, len(got), err)
			}
			if n := db.Statements() - before; n != 2 {
				t.Fatalf("a view the read did not cover ran %d statements in all, want 2", n)
			}
		})
		// A procedure read whole (the default view holds its 7 comments)
		// covers every view.
		run(func(ctx context.Context) {
			if err := loader.PrimeProcedures(ctx, []*ent.Procedure{small}, loader.Edges{Comments: true}); err != nil {
				t.Fatal(err)
			}
			before := db.Statements()
			for _, view := range []loader.CommentWindow{{First: 50}, {Last: 1}, {First: 7}} {
				if _, _, err := loader.Comments(ctx, small.ID, view); err != nil {
					t.Fatal(err)
				}
			}
			if n := db.Statements() - before; n != 0 {
				t.Fatalf("views of a procedure read whole ran %d statements", n)
			}
		})
		// 105 comments of 2 or 3 bytes each: 265 bytes of text.
		run(func(ctx context.Context) {
			err := loader.PrimeProcedures(ctx, []*ent.Procedure{legacy}, loader.Edges{Comments: true})
			if err == nil || apperr.CodeOf(err) != apperr.PayloadTooLarge {
				t.Fatalf("over the bound on text: %v", err)
			}
			loader.Reset(ctx)
			if err := loader.PrimeProcedures(ctx, []*ent.Procedure{small}, loader.Edges{Comments: true}); err != nil {
				t.Fatalf("after a Reset: %v", err)
			}
		}, loader.MaxCommentText(100))
	})
}
