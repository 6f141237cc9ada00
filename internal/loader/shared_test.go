package loader_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/loader"
	"github.com/procsvc/procsvc/internal/viewer"
)

// The shared cache of categories, members and projects answers a read-only
// request from what another request of the same workspace and version read,
// and nothing else: not another version (every write bumps it), not another
// workspace, not a request that did not declare itself read-only or whose
// version was not read with its token, and not after a Reset.
func TestSharedEdges(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		sys := viewer.System(context.Background())
		shape := bench.Shape{Procedures: 12, Projects: 2, Categories: 2, Members: 3, MaxComments: 1}
		a, b := seedTwo(t, db, shape)
		withDoer := func(ws *bench.Seeded) []*ent.Procedure {
			procs, err := db.Client.Procedure.Query().
				Where(procedure.WorkspaceID(ws.WorkspaceID), procedure.DoerIDNotNil(), procedure.CategoryIDNotNil()).All(sys)
			if err != nil || len(procs) == 0 {
				t.Fatalf("procedures with a doer and a category: %d, %v", len(procs), err)
			}
			return procs
		}
		procsA, procsB := withDoer(a), withDoer(b)
		h := loader.Middleware(db)
		// prime primes procs' edges in a request of ws at version as v,
		// read-only when readOnly, and returns the loaders' category, doer
		// and project of procs[0], with the statements it cost.
		type edges struct {
			cat  *ent.Category
			doer *ent.Member
			proj *ent.Project
		}
		prime := func(t *testing.T, ws *bench.Seeded, version int64, known, readOnly bool, procs []*ent.Procedure, between func(ctx context.Context)) (edges, int64) {
			t.Helper()
			var (
				got edges
				n   int64
			)
			ctx := viewer.NewContext(context.Background(), &viewer.Viewer{WorkspaceID: ws.WorkspaceID, Role: viewer.RoleViewer,
				WorkspaceVersion: version, VersionKnown: known})
			h(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				ctx := r.Context()
				if readOnly {
					loader.SharedMode(ctx)
				}
				if between != nil {
					between(ctx)
				}
				before := db.Statements()
				if err := loader.PrimeProcedures(ctx, procs, loader.Edges{Category: true, Doer: true, Project: true}); err != nil {
					t.Fatal(err)
				}
				n = db.Statements() - before
				var err error
				if got.cat, err = loader.Category(ctx, *procs[0].CategoryID); err != nil {
					t.Fatal(err)
				}
				if got.doer, err = loader.Member(ctx, *procs[0].DoerID); err != nil {
					t.Fatal(err)
				}
				if got.proj, err = loader.Project(ctx, procs[0].ProjectID); err != nil {
					t.Fatal(err)
				}
			})).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx))
			return got, n
		}
		rename := func(t *testing.T, p *ent.Procedure, name string) {
			t.Helper()
			if err := db.Client.Category.UpdateOneID(*p.CategoryID).SetName(name).Exec(sys); err != nil {
				t.Fatal(err)
			}
			if err := db.Client.Member.UpdateOneID(*p.DoerID).SetName(name).Exec(sys); err != nil {
				t.Fatal(err)
			}
			if err := db.Client.Project.UpdateOneID(p.ProjectID).SetName(name).Exec(sys); err != nil {
				t.Fatal(err)
			}
		}
		want := func(t *testing.T, got edges, name string) {
			t.Helper()
			if got.cat == nil || got.doer == nil || got.proj == nil {
				t.Fatalf("edges %+v: want all three", got)
			}
			if got.cat.Name != name || got.doer.Name != name || got.proj.Name != name {
				t.Fatalf("names %q, %q, %q; want %q", got.cat.Name, got.doer.Name, got.proj.Name, name)
			}
		}

		rename(t, procsA[0], "v10")
		if got, n := prime(t, a, 10, true, true, procsA, nil); n != 1 {
			t.Fatalf("first read-only request of a version cost %d statements, want 1", n)
		} else {
			want(t, got, "v10")
		}
		t.Run("SameVersionIsServedWithoutStatements", func(t *testing.T) {
			got, n := prime(t, a, 10, true, true, procsA, nil)
			if n != 0 {
				t.Fatalf("cost %d statements, want 0", n)
			}
			want(t, got, "v10")
		})
		t.Run("EditSeenAtTheNextVersion", func(t *testing.T) {
			// Every write bumps the version; here the rows change
			// behind the cache, and the next version reads them.
			rename(t, procsA[0], "v11")
			got, n := prime(t, a, 11, true, true, procsA, nil)
			if n != 1 {
				t.Fatalf("cost %d statements, want 1", n)
			}
			want(t, got, "v11")
			// A request still at the older version neither uses nor
			// replaces the newer entry.
			if _, n := prime(t, a, 10, true, true, procsA, nil); n != 1 {
				t.Fatalf("an older version cost %d statements, want 1", n)
			}
			if got, n := prime(t, a, 11, true, true, procsA, nil); n != 0 {
				t.Fatalf("version 11 after a read of 10 cost %d statements, want 0", n)
			} else {
				want(t, got, "v11")
			}
		})
		t.Run("NotSharedModeReadsAfresh", func(t *testing.T) {
			rename(t, procsA[0], "v11 written")
			for name, c := range map[string]struct {
				known, readOnly bool
				between         func(context.Context)
			}{
				"not declared":    {known: true},
				"version unknown": {readOnly: true},
				"after a Reset":   {known: true, readOnly: true, between: loader.Reset},
			} {
				got, n := prime(t, a, 11, c.known, c.readOnly, procsA, c.between)
				if n != 1 {
					t.Fatalf("%s: cost %d statements, want 1", name, n)
				}
				want(t, got, "v11 written")
			}
		})
		t.Run("OtherWorkspaceSeesNothingOfIt", func(t *testing.T) {
			// Workspace b at the same version asks for a's records (by
			// id, as a forged reference would): tenancy answers nil, and
			// the cache of a is not consulted.
			rename(t, procsB[0], "b's own")
			got, n := prime(t, b, 11, true, true, procsA, nil)
			if n != 1 || got.cat != nil || got.doer != nil || got.proj != nil {
				t.Fatalf("b reading a's edges: %+v in %d statements; want nothing, 1 statement", got, n)
			}
			// ... and remembers that, while its own records are read.
			got, n = prime(t, b, 11, true, true, append(procsA[:1:1], procsB...), nil)
			if n != 1 || got.cat != nil {
				t.Fatalf("b again: %+v in %d statements; want nothing of a, 1 statement for b's own", got, n)
			}
			got, n = prime(t, b, 11, true, true, procsB, nil)
			if n != 0 {
				t.Fatalf("b's own, cached: %d statements, want 0", n)
			}
			want(t, got, "b's own")
		})
		t.Run("ReadsAsAnotherViewerAreNotCached", func(t *testing.T) {
			// SharedMode recorded a's viewer; reads made through a context
			// of another viewer (as a subscription's event reads are)
			// are scoped by that viewer and bypass the cache.
			ctx := viewer.NewContext(context.Background(), &viewer.Viewer{WorkspaceID: a.WorkspaceID, Role: viewer.RoleViewer,
				WorkspaceVersion: 11, VersionKnown: true})
			h(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				loader.SharedMode(r.Context())
				other := viewer.NewContext(r.Context(), &viewer.Viewer{WorkspaceID: b.WorkspaceID, Role: viewer.RoleViewer,
					WorkspaceVersion: 11, VersionKnown: true})
				before := db.Statements()
				if err := loader.PrimeProcedures(other, procsA[:1], loader.Edges{Category: true}); err != nil {
					t.Fatal(err)
				}
				if n := db.Statements() - before; n != 1 {
					t.Fatalf("another viewer's read cost %d statements, want 1 (not cached)", n)
				}
				if c, err := loader.Category(other, *procsA[0].CategoryID); err != nil || c != nil {
					t.Fatalf("another workspace's viewer got %v, %v; want nil", c, err)
				}
			})).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx))
		})
	})
}
