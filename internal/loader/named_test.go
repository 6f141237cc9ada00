package loader_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/category"
	"github.com/procsvc/procsvc/ent/member"
	"github.com/procsvc/procsvc/ent/project"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/loader"
	"github.com/procsvc/procsvc/internal/viewer"
)

// sameFields reports the first exported field (Edges aside) in which a and
// b, two records of one type, differ, or "".
func sameFields(a, b any) string {
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	for i := range va.NumField() {
		f := va.Type().Field(i)
		if !f.IsExported() || f.Name == "Edges" {
			continue
		}
		x, y := va.Field(i), vb.Field(i)
		if x.Kind() == reflect.Pointer {
			if x.IsNil() != y.IsNil() {
				return f.Name
			}
			if x.IsNil() {
				continue
			}
			x, y = x.Elem(), y.Elem()
		}
		if tx, ok := x.Interface().(time.Time); ok {
			if ty := y.Interface().(time.Time); !tx.Equal(ty) || tx.Location().String() != ty.Location().String() {
				return f.Name
			}
			continue
		}
		if !reflect.DeepEqual(x.Interface(), y.Interface()) {
			return f.Name
		}
	}
	return ""
}

// The categories, members and projects a viewer's loaders read together
// are ent's, field for field (optional fields set and not); ids of another
// workspace read as nil; a context without a viewer reads nothing.
func TestNamedAsEntReadsThem(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		sys := viewer.System(context.Background())
		shape := bench.Shape{Procedures: 4, Projects: 4, Categories: 3, Members: 4}
		a, b := seedTwo(t, db, shape)
		now := time.Now().UTC().Truncate(time.Microsecond)
		if err := db.Client.Project.UpdateOneID(a.ProjectIDs[0]).SetStartedAt(now.Add(-time.Hour)).SetDueAt(now).Exec(sys); err != nil {
			t.Fatal(err)
		}
		if err := db.Client.Project.UpdateOneID(a.ProjectIDs[1]).SetDueAt(now).ClearStartedAt().Exec(sys); err != nil {
			t.Fatal(err)
		}
		if err := db.Client.Member.UpdateOneID(a.MemberIDs[1]).SetRemovedAt(now).SetRole(member.RoleVIEWER).Exec(sys); err != nil {
			t.Fatal(err)
		}
		cats, err := db.Client.Category.Query().Where(category.WorkspaceID(a.WorkspaceID)).All(sys)
		if err != nil {
			t.Fatal(err)
		}
		members, err := db.Client.Member.Query().Where(member.WorkspaceID(a.WorkspaceID)).All(sys)
		if err != nil {
			t.Fatal(err)
		}
		projs, err := db.Client.Project.Query().Where(project.WorkspaceID(a.WorkspaceID)).All(sys)
		if err != nil {
			t.Fatal(err)
		}
		// One procedure per record to prime through, and b's records asked
		// for by a's viewer, as forged references would be.
		var procs []*ent.Procedure
		for _, c := range append(ids(cats, func(c *ent.Category) uuid.UUID { return c.ID }), b.CategoryIDs...) {
			procs = append(procs, &ent.Procedure{ID: uuid.New(), CategoryID: &c})
		}
		for _, m := range append(ids(members, func(m *ent.Member) uuid.UUID { return m.ID }), b.MemberIDs...) {
			procs = append(procs, &ent.Procedure{ID: uuid.New(), DoerID: &m})
		}
		for _, p := range append(ids(projs, func(p *ent.Project) uuid.UUID { return p.ID }), b.ProjectIDs...) {
			procs = append(procs, &ent.Procedure{ID: uuid.New(), ProjectID: p})
		}
		run := func(ctx context.Context, fn func(ctx context.Context)) {
			loader.Middleware(db)(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { fn(r.Context()) })).
				ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx))
		}
		asA := viewer.NewContext(context.Background(), &viewer.Viewer{WorkspaceID: a.WorkspaceID, Role: viewer.RoleViewer})
		run(asA, func(ctx context.Context) {
			before := db.Statements()
			if err := loader.PrimeProcedures(ctx, procs, loader.Edges{Category: true, Doer: true, Project: true}); err != nil {
				t.Fatal(err)
			}
			if n := db.Statements() - before; n != 1 {
				t.Fatalf("categories, members and projects cost %d statements, want 1", n)
			}
			before = db.Statements()
			for _, want := range cats {
				if got, err := loader.Category(ctx, want.ID); err != nil || got == nil || sameFields(got, want) != "" {
					t.Fatalf("category %s = %v, %v; want %v (differs in %s)", want.ID, got, err, want, sameFields(got, want))
				}
			}
			for _, want := range members {
				if got, err := loader.Member(ctx, want.ID); err != nil || got == nil || sameFields(got, want) != "" {
					t.Fatalf("member %s = %v, %v; want %v (differs in %s)", want.ID, got, err, want, sameFields(got, want))
				}
			}
			for _, want := range projs {
				if got, err := loader.Project(ctx, want.ID); err != nil || got == nil || sameFields(got, want) != "" {
					t.Fatalf("project %s = %v, %v; want %v (differs in %s)", want.ID, got, err, want, sameFields(got, want))
				}
			}
			for _, id := range b.CategoryIDs {
				if got, err := loader.Category(ctx, id); err != nil || got != nil {
					t.Fatalf("b's category %s read by a: %v, %v", id, got, err)
				}
			}
			for _, id := range b.MemberIDs {
				if got, err := loader.Member(ctx, id); err != nil || got != nil {
					t.Fatalf("b's member %s read by a: %v, %v", id, got, err)
				}
			}
			for _, id := range b.ProjectIDs {
				if got, err := loader.Project(ctx, id); err != nil || got != nil {
					t.Fatalf("b's project %s read by a: %v, %v", id, got, err)
				}
			}
			if n := db.Statements() - before; n != 0 {
				t.Fatalf("primed records cost %d statements, want 0", n)
			}
		})
		// Each edge alone, and members alone (PrimeMembers), read as well.
		for _, edges := range []loader.Edges{{Category: true}, {Doer: true}, {Project: true}} {
			run(asA, func(ctx context.Context) {
				if err := loader.PrimeProcedures(ctx, procs, edges); err != nil {
					t.Fatal(err)
				}
				if got, err := loader.Project(ctx, projs[0].ID); edges.Project && (err != nil || got == nil || sameFields(got, projs[0]) != "") {
					t.Fatalf("project alone = %v, %v; want %v", got, err, projs[0])
				}
			})
		}
		run(asA, func(ctx context.Context) {
			if err := loader.PrimeMembers(ctx, []uuid.UUID{members[1].ID}); err != nil {
				t.Fatal(err)
			}
			before := db.Statements()
			if got, err := loader.Member(ctx, members[1].ID); err != nil || got == nil || sameFields(got, members[1]) != "" || got.RemovedAt == nil {
				t.Fatalf("removed member = %v, %v; want %v", got, err, members[1])
			}
			if n := db.Statements() - before; n != 0 {
				t.Fatalf("a primed member cost %d statements", n)
			}
		})
		run(context.Background(), func(ctx context.Context) {
			if err := loader.PrimeProcedures(ctx, procs, loader.AllEdges); err != viewer.ErrNoViewer {
				t.Fatalf("without a viewer: %v, want %v", err, viewer.ErrNoViewer)
			}
		})
	})
}

func ids[T any](records []T, id func(T) uuid.UUID) []uuid.UUID {
	out := make([]uuid.UUID, len(records))
	for i, r := range records {
		out[i] = id(r)
	}
	return out
}
