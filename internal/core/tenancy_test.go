package core_test

// Tenancy below the resolvers: the ent client scoped by the viewer's
// workspace reads, writes and eager-loads only that workspace's rows, and
// fails closed with no viewer.

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/category"
	"github.com/procsvc/procsvc/ent/comment"
	"github.com/procsvc/procsvc/ent/member"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/ent/project"
	"github.com/procsvc/procsvc/ent/token"
	"github.com/procsvc/procsvc/ent/workspace"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/auth"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/viewer"
)

// tenancyWorld is two workspaces, A and B, each with a project, a category,
// a procedure and a comment.
type tenancyWorld struct {
	a, b         *fixture
	procA, procB *ent.Procedure
	commA        *ent.Comment
	ctxB         context.Context
}

func newTenancyWorld(t *testing.T, db *database.DB) *tenancyWorld {
	t.Helper()
	w := &tenancyWorld{a: setup(t, db, "AAA"), b: setup(t, db, "BBB")}
	w.procA = w.a.newProcedure(t, "alpha secret", "TODO", w.a.project)
	w.procB = w.b.newProcedure(t, "beta", "TODO", w.b.project)
	var err error
	if w.commA, err = w.a.svc.AddComment(w.a.admin, w.procA.ID.String(), "secret-A comment"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.b.svc.AddComment(w.b.admin, w.procB.ID.String(), "B comment"); err != nil {
		t.Fatal(err)
	}
	// Entities returned by the service are bound to the transaction that
	// wrote them; reload the ones whose edges the tests traverse.
	reload := func(p *ent.Procedure) *ent.Procedure {
		got, err := db.Client.Procedure.Get(sys(), p.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	w.procA, w.procB = reload(w.procA), reload(w.procB)
	if w.a.boot.Workspace, err = db.Client.Workspace.Get(sys(), w.a.boot.Workspace.ID); err != nil {
		t.Fatal(err)
	}
	if w.a.boot.Admin, err = db.Client.Member.Get(sys(), w.a.boot.Admin.ID); err != nil {
		t.Fatal(err)
	}
	w.ctxB = viewer.NewContext(context.Background(), &viewer.Viewer{
		WorkspaceID: w.b.boot.Workspace.ID, MemberID: w.b.boot.Admin.ID, Role: viewer.RoleAdmin,
	})
	return w
}

func TestTenancyBelowResolvers(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		w := newTenancyWorld(t, db)
		c := db.Client
		wsA, wsB := w.a.boot.Workspace.ID, w.b.boot.Workspace.ID

		// For every tenant-owned table, B's viewer sees exactly B's rows.
		type idsFn func(ctx context.Context) ([]uuid.UUID, error)
		tables := []struct {
			name   string
			scoped idsFn // as B's viewer
			truth  idsFn // B's rows, read as the system
		}{
			{"procedures",
				func(ctx context.Context) ([]uuid.UUID, error) { return c.Procedure.Query().IDs(ctx) },
				func(ctx context.Context) ([]uuid.UUID, error) {
					return c.Procedure.Query().Where(procedure.WorkspaceID(wsB)).IDs(ctx)
				}},
			{"comments",
				func(ctx context.Context) ([]uuid.UUID, error) { return c.Comment.Query().IDs(ctx) },
				func(ctx context.Context) ([]uuid.UUID, error) {
					return c.Comment.Query().Where(comment.WorkspaceID(wsB)).IDs(ctx)
				}},
			{"projects",
				func(ctx context.Context) ([]uuid.UUID, error) { return c.Project.Query().IDs(ctx) },
				func(ctx context.Context) ([]uuid.UUID, error) {
					return c.Project.Query().Where(project.WorkspaceID(wsB)).IDs(ctx)
				}},
			{"categories",
				func(ctx context.Context) ([]uuid.UUID, error) { return c.Category.Query().IDs(ctx) },
				func(ctx context.Context) ([]uuid.UUID, error) {
					return c.Category.Query().Where(category.WorkspaceID(wsB)).IDs(ctx)
				}},
			{"members",
				func(ctx context.Context) ([]uuid.UUID, error) { return c.Member.Query().IDs(ctx) },
				func(ctx context.Context) ([]uuid.UUID, error) {
					return c.Member.Query().Where(member.WorkspaceID(wsB)).IDs(ctx)
				}},
			{"tokens",
				func(ctx context.Context) ([]uuid.UUID, error) { return c.Token.Query().IDs(ctx) },
				func(ctx context.Context) ([]uuid.UUID, error) {
					return c.Token.Query().Where(token.WorkspaceID(wsB)).IDs(ctx)
				}},
			{"workspaces",
				func(ctx context.Context) ([]uuid.UUID, error) { return c.Workspace.Query().IDs(ctx) },
				func(ctx context.Context) ([]uuid.UUID, error) {
					return c.Workspace.Query().Where(workspace.ID(wsB)).IDs(ctx)
				}},
		}
		for _, tc := range tables {
			t.Run("list "+tc.name, func(t *testing.T) {
				all, err := tc.truth(sys())
				if err != nil || len(all) == 0 {
					t.Fatalf("fixture has no B %s (%v)", tc.name, err)
				}
				got, err := tc.scoped(w.ctxB)
				if err != nil {
					t.Fatal(err)
				}
				slices.SortFunc(got, func(x, y uuid.UUID) int { return strings.Compare(x.String(), y.String()) })
				slices.SortFunc(all, func(x, y uuid.UUID) int { return strings.Compare(x.String(), y.String()) })
				if !slices.Equal(got, all) {
					t.Fatalf("B's viewer sees %v; want exactly B's %v", got, all)
				}
			})
		}

		reads := []struct {
			name string
			run  func(ctx context.Context) (int, error) // how many of A's rows ctx sees
		}{
			{"Procedure.Query().All", func(ctx context.Context) (int, error) {
				ps, err := c.Procedure.Query().All(ctx)
				n := 0
				for _, p := range ps {
					if p.WorkspaceID == wsA {
						n++
					}
				}
				return n, err
			}},
			{"Procedure.Query().Count by A's id", func(ctx context.Context) (int, error) {
				return c.Procedure.Query().Where(procedure.ID(w.procA.ID)).Count(ctx)
			}},
			{"Procedure.Query().Exist by A's shortId", func(ctx context.Context) (int, error) {
				ok, err := c.Procedure.Query().Where(procedure.ShortID(w.procA.ShortID)).Exist(ctx)
				return b2i(ok), err
			}},
			{"Procedure.Get of A's id", func(ctx context.Context) (int, error) {
				_, err := c.Procedure.Get(ctx, w.procA.ID)
				if ent.IsNotFound(err) {
					return 0, nil
				}
				return 1, err
			}},
			{"QueryComments from A's procedure entity", func(ctx context.Context) (int, error) {
				return w.procA.QueryComments().Count(ctx)
			}},
			{"QueryCategory from A's procedure entity", func(ctx context.Context) (int, error) {
				return w.procA.QueryCategory().Count(ctx)
			}},
			{"QueryProcedures from A's workspace entity", func(ctx context.Context) (int, error) {
				return w.a.boot.Workspace.QueryProcedures().Count(ctx)
			}},
			{"QueryComments from A's comment author", func(ctx context.Context) (int, error) {
				return w.a.boot.Admin.QueryComments().Count(ctx)
			}},
			{"Procedure.Query().WithCategory().WithComments()", func(ctx context.Context) (int, error) {
				ps, err := c.Procedure.Query().WithCategory().WithComments().WithProject().All(ctx)
				n := 0
				for _, p := range ps {
					if p.WorkspaceID == wsA {
						n++
					}
					if cat := p.Edges.Category; cat != nil && cat.WorkspaceID == wsA {
						n++
					}
					if pr := p.Edges.Project; pr != nil && pr.WorkspaceID == wsA {
						n++
					}
					for _, cm := range p.Edges.Comments {
						if cm.WorkspaceID == wsA {
							n++
						}
					}
				}
				return n, err
			}},
			{"Procedure.Query().Where(HasCommentsWith(A's text)).Count", func(ctx context.Context) (int, error) {
				return c.Procedure.Query().Where(procedure.HasCommentsWith(comment.TextContains("secret-A"))).Count(ctx)
			}},
			{"Procedure.Query().Where(HasCategoryWith(A's category)).Count", func(ctx context.Context) (int, error) {
				return c.Procedure.Query().Where(procedure.HasCategoryWith(category.ID(w.a.category.ID))).Count(ctx)
			}},
			{"Comment.Query().QueryProcedure()", func(ctx context.Context) (int, error) {
				return c.Comment.Query().Where(comment.ID(w.commA.ID)).QueryProcedure().Count(ctx)
			}},
			{"Member.Query() by A's admin email", func(ctx context.Context) (int, error) {
				return c.Member.Query().Where(member.Email(w.a.boot.Admin.Email)).Count(ctx)
			}},
			{"Token.Query() by A's secret hash", func(ctx context.Context) (int, error) {
				return c.Token.Query().Where(token.SecretHash(auth.Hash(w.a.boot.Secret))).Count(ctx)
			}},
		}
		for _, tc := range reads {
			t.Run("read "+tc.name, func(t *testing.T) {
				// Control: A's own viewer (or the system) does see the rows,
				// so a zero below is the scope at work, not an empty query.
				if n, err := tc.run(w.a.admin); err != nil || n == 0 {
					t.Fatalf("A's viewer sees %d of A's rows (%v); the probe is broken", n, err)
				}
				n, err := tc.run(w.ctxB)
				if err != nil {
					t.Fatalf("as B: %v", err)
				}
				if n != 0 {
					t.Fatalf("B's viewer sees %d of A's rows", n)
				}
			})
		}

		writes := []struct {
			name string
			run  func(ctx context.Context) (int, error) // rows affected
		}{
			{"Procedure.Update by A's id", func(ctx context.Context) (int, error) {
				return c.Procedure.Update().Where(procedure.ID(w.procA.ID)).SetName("hijacked").Save(ctx)
			}},
			{"Procedure.Update of every row", func(ctx context.Context) (int, error) {
				n, err := c.Procedure.Update().SetPriority(procedure.PriorityLOW).Save(ctx)
				// B's own procedure is fair game; count only A's.
				if err != nil {
					return n, err
				}
				return c.Procedure.Query().Where(procedure.WorkspaceID(wsA), procedure.PriorityEQ(procedure.PriorityLOW)).Count(sys())
			}},
			{"Procedure.UpdateOneID of A's id", func(ctx context.Context) (int, error) {
				err := c.Procedure.UpdateOneID(w.procA.ID).SetName("hijacked").Exec(ctx)
				if ent.IsNotFound(err) {
					return 0, nil
				}
				return 1, err
			}},
			{"Procedure.Delete by A's id", func(ctx context.Context) (int, error) {
				return c.Procedure.Delete().Where(procedure.ID(w.procA.ID)).Exec(ctx)
			}},
			{"Procedure.DeleteOneID of A's id", func(ctx context.Context) (int, error) {
				err := c.Procedure.DeleteOneID(w.procA.ID).Exec(ctx)
				if ent.IsNotFound(err) {
					return 0, nil
				}
				return 1, err
			}},
			{"Comment.Delete by A's id", func(ctx context.Context) (int, error) {
				return c.Comment.Delete().Where(comment.ID(w.commA.ID)).Exec(ctx)
			}},
			{"Comment.Update by A's id", func(ctx context.Context) (int, error) {
				return c.Comment.Update().Where(comment.ID(w.commA.ID)).SetText("hijacked").Save(ctx)
			}},
			{"Category.Delete by A's id", func(ctx context.Context) (int, error) {
				return c.Category.Delete().Where(category.ID(w.a.category.ID)).Exec(ctx)
			}},
			{"Project.Update by A's id", func(ctx context.Context) (int, error) {
				return c.Project.Update().Where(project.ID(w.a.project.ID)).SetName("hijacked").Save(ctx)
			}},
			{"Member.Update by A's id", func(ctx context.Context) (int, error) {
				return c.Member.Update().Where(member.ID(w.a.boot.Admin.ID)).SetRole(member.RoleVIEWER).Save(ctx)
			}},
			{"Token.Update by A's id", func(ctx context.Context) (int, error) {
				return c.Token.Update().Where(token.ID(w.a.boot.Token.ID)).SetRevokedAt(clock).Save(ctx)
			}},
			{"Workspace.Update by A's id", func(ctx context.Context) (int, error) {
				return c.Workspace.Update().Where(workspace.ID(wsA)).SetName("hijacked").Save(ctx)
			}},
		}
		for _, tc := range writes {
			t.Run("write "+tc.name, func(t *testing.T) {
				n, err := tc.run(w.ctxB)
				if err != nil {
					t.Fatalf("as B: %v", err)
				}
				if n != 0 {
					t.Fatalf("B's viewer affected %d of A's rows", n)
				}
			})
		}

		t.Run("A's rows are intact", func(t *testing.T) {
			p, err := c.Procedure.Get(sys(), w.procA.ID)
			if err != nil || p.Name != "alpha secret" || p.Priority != procedure.PriorityMEDIUM {
				t.Fatalf("A's procedure = %+v, %v", p, err)
			}
			cm, err := c.Comment.Get(sys(), w.commA.ID)
			if err != nil || cm.Text != "secret-A comment" {
				t.Fatalf("A's comment = %+v, %v", cm, err)
			}
			for name, ok := range map[string]func() (bool, error){
				"category": func() (bool, error) { return c.Category.Query().Where(category.ID(w.a.category.ID)).Exist(sys()) },
				"project": func() (bool, error) {
					return c.Project.Query().Where(project.ID(w.a.project.ID), project.Name(w.a.project.Name)).Exist(sys())
				},
				"admin": func() (bool, error) {
					return c.Member.Query().Where(member.ID(w.a.boot.Admin.ID), member.RoleEQ(member.RoleADMIN)).Exist(sys())
				},
				"token": func() (bool, error) {
					return c.Token.Query().Where(token.ID(w.a.boot.Token.ID), token.RevokedAtIsNil()).Exist(sys())
				},
				"workspace": func() (bool, error) {
					return c.Workspace.Query().Where(workspace.ID(wsA), workspace.Name(w.a.boot.Workspace.Name)).Exist(sys())
				},
			} {
				if found, err := ok(); err != nil || !found {
					t.Errorf("A's %s was changed (%v)", name, err)
				}
			}
		})

		t.Run("create in another workspace is refused", func(t *testing.T) {
			_, err := c.Category.Create().SetWorkspaceID(wsA).SetName("planted").Save(w.ctxB)
			if err == nil {
				t.Fatal("B's viewer created a category in A")
			}
			if n, _ := c.Category.Query().Where(category.Name("planted")).Count(sys()); n != 0 {
				t.Fatalf("%d planted categories stored", n)
			}
			// Without an explicit workspace the row is stamped with B's.
			cat, err := c.Category.Create().SetName("stamped").Save(w.ctxB)
			if err != nil {
				t.Fatal(err)
			}
			if cat.WorkspaceID != wsB {
				t.Fatalf("created in %v; want B %v", cat.WorkspaceID, wsB)
			}
		})

		t.Run("service lookups of A's records are not_found", func(t *testing.T) {
			for _, id := range []string{w.procA.ID.String(), w.procA.ShortID} {
				_, err := w.b.svc.Procedure(w.ctxB, id)
				wantCode(t, err, apperr.NotFound)
			}
			_, err := w.b.svc.Comment(w.ctxB, w.commA.ID.String())
			wantCode(t, err, apperr.NotFound)
			_, err = w.b.svc.AddComment(w.ctxB, w.procA.ID.String(), "hi")
			wantCode(t, err, apperr.NotFound)
			in := w.b.input("cross", "TODO", w.b.project)
			in.CategoryID = w.a.category.ID.String()
			_, err = w.b.svc.CreateProcedure(w.ctxB, in)
			wantInvalid(t, err, "categoryId")
		})

		t.Run("eager loads ignore cross-tenant references", func(t *testing.T) {
			// Plant rows no API would write: B's procedure pointing at A's
			// category, and an A comment hanging off B's procedure.
			if err := c.Procedure.UpdateOneID(w.procB.ID).SetCategoryID(w.a.category.ID).Exec(sys()); err != nil {
				t.Fatal(err)
			}
			planted, err := c.Comment.Create().SetWorkspaceID(wsA).SetProcedureID(w.procB.ID).
				SetAuthorID(w.a.boot.Admin.ID).SetText("planted A comment").Save(sys())
			if err != nil {
				t.Fatal(err)
			}
			p, err := c.Procedure.Query().Where(procedure.ID(w.procB.ID)).WithCategory().WithComments().Only(w.ctxB)
			if err != nil {
				t.Fatal(err)
			}
			if p.Edges.Category != nil {
				t.Fatalf("WithCategory loaded A's category %v", p.Edges.Category.ID)
			}
			for _, cm := range p.Edges.Comments {
				if cm.ID == planted.ID {
					t.Fatal("WithComments loaded A's comment")
				}
			}
			if n, err := w.procB.QueryCategory().Count(w.ctxB); err != nil || n != 0 {
				t.Fatalf("QueryCategory sees %d (%v)", n, err)
			}
			if n, err := w.procB.QueryComments().Where(comment.ID(planted.ID)).Count(w.ctxB); err != nil || n != 0 {
				t.Fatalf("QueryComments sees the planted comment: %d (%v)", n, err)
			}
		})
	})
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestTenancyFailsClosed(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		w := newTenancyWorld(t, db)
		c := db.Client
		bare := context.Background()
		before, err := c.Procedure.Query().Count(sys())
		if err != nil || before == 0 {
			t.Fatalf("fixture: %d procedures (%v)", before, err)
		}

		tests := []struct {
			name string
			run  func(ctx context.Context) (rows int, err error)
		}{
			{"Procedure.Query().All", func(ctx context.Context) (int, error) {
				ps, err := c.Procedure.Query().All(ctx)
				return len(ps), err
			}},
			{"Procedure.Query().Count", func(ctx context.Context) (int, error) { return c.Procedure.Query().Count(ctx) }},
			{"Procedure.Query().Exist", func(ctx context.Context) (int, error) {
				ok, err := c.Procedure.Query().Exist(ctx)
				return b2i(ok), err
			}},
			{"Procedure.Get", func(ctx context.Context) (int, error) {
				p, err := c.Procedure.Get(ctx, w.procA.ID)
				return b2i(p != nil), err
			}},
			{"QueryComments from an entity", func(ctx context.Context) (int, error) {
				cs, err := w.procA.QueryComments().All(ctx)
				return len(cs), err
			}},
			{"Workspace.Query().All", func(ctx context.Context) (int, error) {
				ws, err := c.Workspace.Query().All(ctx)
				return len(ws), err
			}},
			{"Token.Query().All", func(ctx context.Context) (int, error) {
				ts, err := c.Token.Query().All(ctx)
				return len(ts), err
			}},
			{"Procedure.Update", func(ctx context.Context) (int, error) {
				return c.Procedure.Update().SetName("nobody").Save(ctx)
			}},
			{"Procedure.Delete", func(ctx context.Context) (int, error) { return c.Procedure.Delete().Exec(ctx) }},
			{"Workspace.Update", func(ctx context.Context) (int, error) {
				return c.Workspace.Update().AddVersion(1).Save(ctx)
			}},
			{"Category.Create", func(ctx context.Context) (int, error) {
				cat, err := c.Category.Create().SetWorkspaceID(w.a.boot.Workspace.ID).SetName("orphan").Save(ctx)
				return b2i(cat != nil), err
			}},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				n, err := tc.run(bare)
				if !errors.Is(err, viewer.ErrNoViewer) {
					t.Fatalf("err = %v; want viewer.ErrNoViewer", err)
				}
				if n != 0 {
					t.Fatalf("returned %d rows with no viewer", n)
				}
			})
		}

		t.Run("nothing was written", func(t *testing.T) {
			after, err := c.Procedure.Query().Count(sys())
			if err != nil || after != before {
				t.Fatalf("procedures: %d before, %d after (%v)", before, after, err)
			}
			if n, _ := c.Procedure.Query().Where(procedure.Name("nobody")).Count(sys()); n != 0 {
				t.Fatalf("%d procedures renamed without a viewer", n)
			}
			if n, _ := c.Category.Query().Where(category.Name("orphan")).Count(sys()); n != 0 {
				t.Fatal("a category was created without a viewer")
			}
		})

		t.Run("service calls without a viewer are unauthenticated", func(t *testing.T) {
			_, err := w.a.svc.Procedure(bare, w.procA.ID.String())
			wantCode(t, err, apperr.Unauthenticated)
			_, err = w.a.svc.CreateProcedure(bare, w.a.input("x", "TODO", w.a.project))
			wantCode(t, err, apperr.Unauthenticated)
		})
	})
}
