package loader_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/loader"
	"github.com/procsvc/procsvc/internal/viewer"
)

// seedTwo seeds two workspaces of shape, Acme and Bolt, for tests that
// check a read of one never sees the other's rows.
func seedTwo(t *testing.T, db *database.DB, shape bench.Shape) (a, b *bench.Seeded) {
	t.Helper()
	sys := viewer.System(context.Background())
	a, err := bench.Seed(sys, db.Client, "Acme", "ACME", shape, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err = bench.Seed(sys, db.Client, "Bolt", "BOLT", shape, 2)
	if err != nil {
		t.Fatal(err)
	}
	return a, b
}

// inRequest runs fn with a request's loaders, as loader.Middleware gives them.
func inRequest(t *testing.T, db *database.DB, fn func(ctx context.Context)) {
	t.Helper()
	inRequestAs(t, db, viewer.System(context.Background()), fn)
}

// Primed edges are answered without a statement and agree with the
// database; keys nobody primed, and every key after a Reset, are read
// through the batching dataloader, once.
func TestLoaders(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		ctx := viewer.System(context.Background())
		seeded, err := bench.Seed(ctx, db.Client, "Acme", "ACME", bench.Shape{Procedures: 40, Projects: 3, Categories: 3, Members: 4, MaxComments: 3}, 1)
		if err != nil {
			t.Fatal(err)
		}
		procs, err := db.Client.Procedure.Query().WithCategory().WithDoer().WithProject().
			WithComments(func(q *ent.CommentQuery) { q.Order(ent.Asc("created_at"), ent.Asc("id")) }).
			Order(procedure.ByShortID()).All(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// check resolves every edge of procs and compares it with what ent
		// loaded eagerly.
		check := func(t *testing.T, ctx context.Context) {
			t.Helper()
			for _, p := range procs {
				if p.CategoryID != nil {
					if c, err := loader.Category(ctx, *p.CategoryID); err != nil || c == nil || c.ID != p.Edges.Category.ID || c.Name != p.Edges.Category.Name {
						t.Fatalf("category of %s = %v, %v; want %v", p.ShortID, c, err, p.Edges.Category)
					}
				}
				if p.DoerID != nil {
					if m, err := loader.Member(ctx, *p.DoerID); err != nil || m == nil || m.ID != p.Edges.Doer.ID {
						t.Fatalf("doer of %s = %v, %v; want %v", p.ShortID, m, err, p.Edges.Doer)
					}
				}
				if pr, err := loader.Project(ctx, p.ProjectID); err != nil || pr == nil || pr.ID != p.Edges.Project.ID {
					t.Fatalf("project of %s = %v, %v; want %v", p.ShortID, pr, err, p.Edges.Project)
				}
				// As REST shows them, which AllEdges primes.
				cs, _, err := loader.Comments(ctx, p.ID, loader.CommentWindow{}, loader.RESTComments)
				if err != nil || cs == nil || len(cs) != len(p.Edges.Comments) {
					t.Fatalf("comments of %s = %v, %v; want %d", p.ShortID, cs, err, len(p.Edges.Comments))
				}
				for i := range cs {
					if cs[i].ID != p.Edges.Comments[i].ID {
						t.Fatalf("comment %d of %s = %s, want %s", i, p.ShortID, cs[i].ID, p.Edges.Comments[i].ID)
					}
				}
			}
		}
		t.Run("PrimedCostNoStatement", func(t *testing.T) {
			inRequest(t, db, func(ctx context.Context) {
				if err := loader.PrimeProcedures(ctx, procs, loader.AllEdges); err != nil {
					t.Fatal(err)
				}
				before := db.Statements()
				check(t, ctx)
				// Priming again reads nothing new.
				if err := loader.PrimeProcedures(ctx, procs, loader.AllEdges); err != nil {
					t.Fatal(err)
				}
				if n := db.Statements() - before; n != 0 {
					t.Fatalf("primed edges cost %d statements, want 0", n)
				}
			})
		})
		t.Run("UnprimedAreLoadedOnce", func(t *testing.T) {
			inRequest(t, db, func(ctx context.Context) {
				load := func() {
					for _, id := range seeded.MemberIDs {
						if m, err := loader.Member(ctx, id); err != nil || m == nil || m.ID != id {
							t.Fatalf("member %s = %v, %v", id, m, err)
						}
					}
				}
				load()
				before := db.Statements()
				load()
				if n := db.Statements() - before; n != 0 {
					t.Fatalf("members loaded again cost %d statements, want 0", n)
				}
				if m, err := loader.Member(ctx, uuid.New()); err != nil || m != nil {
					t.Fatalf("unknown member = %v, %v; want nil, nil", m, err)
				}
			})
		})
		t.Run("ResetForgets", func(t *testing.T) {
			inRequest(t, db, func(ctx context.Context) {
				if err := loader.PrimeProcedures(ctx, procs[:1], loader.Edges{Project: true}); err != nil {
					t.Fatal(err)
				}
				loader.Reset(ctx)
				before := db.Statements()
				if _, err := loader.Project(ctx, procs[0].ProjectID); err != nil {
					t.Fatal(err)
				}
				if n := db.Statements() - before; n != 1 {
					t.Fatalf("a project after Reset cost %d statements, want 1 (read afresh)", n)
				}
			})
		})
	})
}
