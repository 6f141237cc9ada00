package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

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
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/viewer"
)

// clock is the fixed time of every Service in these tests.
var clock = time.Date(2026, 1, 15, 9, 30, 0, 0, time.UTC)

// dueAt is the due date of procedures whose due date does not matter.
var dueAt = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// fixture is one workspace with an admin, a project and a category.
type fixture struct {
	db       *database.DB
	svc      *core.Service
	boot     *core.Bootstrapped
	admin    context.Context // acts as the workspace's admin
	project  *ent.Project
	category *ent.Category
}

func newService(db *database.DB) *core.Service {
	return core.New(db.Client, core.WithClock(func() time.Time { return clock }))
}

func setup(t *testing.T, db *database.DB, key string) *fixture {
	t.Helper()
	svc := newService(db)
	ctx := context.Background()
	boot, err := svc.CreateWorkspace(ctx, core.NewWorkspace{
		Name: "Workspace " + key, Key: key, AdminName: "Admin " + key, AdminEmail: strings.ToLower(key) + "-admin@example.com",
	})
	if err != nil {
		t.Fatalf("CreateWorkspace %s: %v", key, err)
	}
	admin, err := svc.ActAsAdmin(ctx, boot.Workspace.ID.String())
	if err != nil {
		t.Fatalf("ActAsAdmin: %v", err)
	}
	f := &fixture{db: db, svc: svc, boot: boot, admin: admin}
	f.project = f.newProject(t, "Project "+key)
	f.category = f.newCategory(t, "Category "+key)
	return f
}

// sys is a context that bypasses tenancy, to observe the stored truth.
func sys() context.Context { return viewer.System(context.Background()) }

func (f *fixture) newProject(t *testing.T, name string) *ent.Project {
	t.Helper()
	p, err := f.svc.CreateProject(f.admin, core.ProjectInput{Name: core.Some(name)})
	if err != nil {
		t.Fatalf("CreateProject %q: %v", name, err)
	}
	return p
}

func (f *fixture) newCategory(t *testing.T, name string) *ent.Category {
	t.Helper()
	c, err := f.svc.CreateCategory(f.admin, name)
	if err != nil {
		t.Fatalf("CreateCategory %q: %v", name, err)
	}
	return c
}

func (f *fixture) input(name, state string, p *ent.Project) core.CreateProcedureInput {
	due := dueAt
	return core.CreateProcedureInput{
		Name: name, Priority: "MEDIUM", State: state, DueAt: &due,
		CategoryID: f.category.ID.String(), DoerID: f.boot.Admin.ID.String(), ProjectID: p.ID.String(),
	}
}

func (f *fixture) newProcedure(t *testing.T, name, state string, p *ent.Project) *ent.Procedure {
	t.Helper()
	proc, err := f.svc.CreateProcedure(f.admin, f.input(name, state, p))
	if err != nil {
		t.Fatalf("CreateProcedure %q: %v", name, err)
	}
	return proc
}

// as returns a context acting as a new member of f's workspace with role.
func (f *fixture) as(t *testing.T, role viewer.Role) (context.Context, *ent.Member) {
	t.Helper()
	m, err := f.svc.AddMember(f.admin, core.MemberInput{
		Name: core.Some(string(role) + " user"), Email: core.Some(uuid.NewString() + "@example.com"), Role: core.Some(string(role)),
	})
	if err != nil {
		t.Fatalf("AddMember %s: %v", role, err)
	}
	return viewer.NewContext(context.Background(), &viewer.Viewer{
		WorkspaceID: f.boot.Workspace.ID, MemberID: m.ID, Role: role,
	}), m
}

// column reads a (project, state) column in its stored order.
func (f *fixture) column(t *testing.T, p *ent.Project, state string) []*ent.Procedure {
	t.Helper()
	col, err := f.db.Client.Procedure.Query().
		Where(procedure.ProjectID(p.ID), procedure.StateEQ(procedure.State(state))).
		Order(procedure.ByPosition(), procedure.ByID()).
		All(sys())
	if err != nil {
		t.Fatalf("read column: %v", err)
	}
	return col
}

// assertColumn checks that the column holds exactly want, in order, with
// strictly increasing positions.
func (f *fixture) assertColumn(t *testing.T, p *ent.Project, state string, want []*ent.Procedure) {
	t.Helper()
	col := f.column(t, p, state)
	if got, exp := names(col), names(want); !slices.Equal(got, exp) {
		t.Fatalf("%s column = %v; want %v", state, got, exp)
	}
	for i := 1; i < len(col); i++ {
		if !(col[i].Position > col[i-1].Position) {
			t.Fatalf("%s column positions not strictly increasing at %d: %v", state, i, positions(col))
		}
	}
}

func names(ps []*ent.Procedure) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}

func positions(ps []*ent.Procedure) []float64 {
	out := make([]float64, len(ps))
	for i, p := range ps {
		out[i] = p.Position
	}
	return out
}

func strp(s string) *string { return &s }

func idp(p *ent.Procedure) *string { return strp(p.ID.String()) }

// wantCode fails unless err carries code.
func wantCode(t *testing.T, err error, code apperr.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil; want %s", code)
	}
	if got := apperr.CodeOf(err); got != code {
		t.Fatalf("code = %s; want %s (%v)", got, code, err)
	}
}

// fieldsOf returns the sorted field names of a validation error.
func fieldsOf(err error) []string {
	var ae *apperr.Error
	if !errors.As(err, &ae) {
		return nil
	}
	var out []string
	for _, f := range ae.Fields {
		out = append(out, f.Field)
	}
	sort.Strings(out)
	return out
}

// wantInvalid fails unless err is validation_failed naming field.
func wantInvalid(t *testing.T, err error, field string) {
	t.Helper()
	wantCode(t, err, apperr.ValidationFailed)
	if fs := fieldsOf(err); !slices.Contains(fs, field) {
		t.Fatalf("fields = %v; want %q (%v)", fs, field, err)
	}
}

func TestConcurrentShortIDs(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		a := setup(t, db, "ACME")
		b := setup(t, db, "BETA")
		const nA, nB = 50, 25

		type result struct {
			ws   string
			proc *ent.Procedure
			err  error
		}
		results := make(chan result, nA+nB)
		start := make(chan struct{})
		var wg sync.WaitGroup
		spawn := func(f *fixture, ws string, i int) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				p, err := f.svc.CreateProcedure(f.admin, f.input(fmt.Sprintf("%s %d", ws, i), "TODO", f.project))
				results <- result{ws, p, err}
			}()
		}
		// Interleave the workspaces so that both sequences advance at once.
		for i := 0; i < nA; i++ {
			spawn(a, "A", i)
			if i < nB {
				spawn(b, "B", i)
			}
		}
		close(start)
		wg.Wait()
		close(results)

		got := map[string][]*ent.Procedure{}
		for r := range results {
			if r.err != nil {
				t.Errorf("CreateProcedure in %s: %v", r.ws, r.err)
				continue
			}
			got[r.ws] = append(got[r.ws], r.proc)
		}
		if t.Failed() {
			t.FailNow()
		}

		tests := []struct {
			name string
			f    *fixture
			ws   string
			key  string
			n    int
		}{
			{"first workspace", a, "A", "ACME", nA},
			{"second workspace", b, "B", "BETA", nB},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				procs := got[tc.ws]
				if len(procs) != tc.n {
					t.Fatalf("created %d; want %d", len(procs), tc.n)
				}
				var short []string
				for _, p := range procs {
					short = append(short, p.ShortID)
					if want := fmt.Sprintf("%s-%d", tc.key, p.Number); p.ShortID != want {
						t.Errorf("shortId %s does not match number %d", p.ShortID, p.Number)
					}
				}
				var want []string
				for i := 1; i <= tc.n; i++ {
					want = append(want, fmt.Sprintf("%s-%d", tc.key, i))
				}
				sort.Strings(short)
				sort.Strings(want)
				if !slices.Equal(short, want) {
					t.Fatalf("shortIds = %v; want exactly %v", short, want)
				}

				// The stored rows agree, and the sequence stands at n.
				stored, err := db.Client.Procedure.Query().
					Where(procedure.WorkspaceID(tc.f.boot.Workspace.ID)).
					Order(procedure.ByNumber()).All(sys())
				if err != nil {
					t.Fatal(err)
				}
				if len(stored) != tc.n {
					t.Fatalf("stored %d procedures; want %d", len(stored), tc.n)
				}
				for i, p := range stored {
					if p.Number != int64(i+1) || p.ShortID != fmt.Sprintf("%s-%d", tc.key, i+1) {
						t.Fatalf("stored #%d is %s (number %d)", i, p.ShortID, p.Number)
					}
					// Creates were serialised and each went to the end of
					// the column, so positions follow the numbers.
					if i > 0 && !(p.Position > stored[i-1].Position) {
						t.Fatalf("%s at %v is not after %s at %v", p.ShortID, p.Position, stored[i-1].ShortID, stored[i-1].Position)
					}
				}
				ws, err := db.Client.Workspace.Get(sys(), tc.f.boot.Workspace.ID)
				if err != nil {
					t.Fatal(err)
				}
				if ws.ProcedureSeq != int64(tc.n) {
					t.Fatalf("procedure_seq = %d; want %d", ws.ProcedureSeq, tc.n)
				}

				// Lookup by shortId works, case-insensitively.
				p, err := tc.f.svc.Procedure(tc.f.admin, strings.ToLower(tc.key)+"-1")
				if err != nil || p.Number != 1 {
					t.Fatalf("Procedure(%s-1) = %v, %v", tc.key, p, err)
				}
			})
		}

		t.Run("numbers continue after deletes and are never reused", func(t *testing.T) {
			last, err := a.svc.Procedure(a.admin, fmt.Sprintf("ACME-%d", nA))
			if err != nil {
				t.Fatal(err)
			}
			if err := a.svc.DeleteProcedure(a.admin, last.ID.String()); err != nil {
				t.Fatal(err)
			}
			p := a.newProcedure(t, "after delete", "TODO", a.project)
			if want := fmt.Sprintf("ACME-%d", nA+1); p.ShortID != want {
				t.Fatalf("shortId = %s; want %s", p.ShortID, want)
			}
			q := b.newProcedure(t, "beta next", "TODO", b.project)
			if want := fmt.Sprintf("BETA-%d", nB+1); q.ShortID != want {
				t.Fatalf("shortId = %s; want %s", q.ShortID, want)
			}
		})
	})
}

func TestPositions(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db, "POS")

		// column creates a fresh project with procedures named names in TODO.
		column := func(t *testing.T, names ...string) (*ent.Project, map[string]*ent.Procedure) {
			t.Helper()
			p := f.newProject(t, "col "+uuid.NewString())
			m := map[string]*ent.Procedure{}
			for _, n := range names {
				m[n] = f.newProcedure(t, n, "TODO", p)
			}
			return p, m
		}
		pick := func(m map[string]*ent.Procedure, ns ...string) []*ent.Procedure {
			var out []*ent.Procedure
			for _, n := range ns {
				out = append(out, m[n])
			}
			return out
		}

		t.Run("new procedures go to the end of their column", func(t *testing.T) {
			p, m := column(t, "A", "B", "C")
			other := f.newProject(t, "other")
			// Procedures in other columns do not disturb this one.
			f.newProcedure(t, "X", "IN_PROGRESS", p)
			f.newProcedure(t, "Y", "TODO", other)
			m["D"] = f.newProcedure(t, "D", "TODO", p)
			f.assertColumn(t, p, "TODO", pick(m, "A", "B", "C", "D"))
			// Even after moving the last one up, the next create lands last.
			if _, err := f.svc.MoveProcedure(f.admin, m["D"].ID.String(), nil, nil, idp(m["A"])); err != nil {
				t.Fatal(err)
			}
			m["E"] = f.newProcedure(t, "E", "TODO", p)
			f.assertColumn(t, p, "TODO", pick(m, "D", "A", "B", "C", "E"))
		})

		moves := []struct {
			name          string
			move          string
			after, before string
			want          []string
		}{
			{"after only", "E", "A", "", []string{"A", "E", "B", "C", "D"}},
			{"after only, to the end", "A", "E", "", []string{"B", "C", "D", "E", "A"}},
			{"before only", "A", "", "D", []string{"B", "C", "A", "D", "E"}},
			{"before only, to the top", "D", "", "A", []string{"D", "A", "B", "C", "E"}},
			{"both", "B", "D", "E", []string{"A", "C", "D", "B", "E"}},
			{"both, moving up", "E", "A", "B", []string{"A", "E", "B", "C", "D"}},
			{"neither goes to the end", "B", "", "", []string{"A", "C", "D", "E", "B"}},
			{"neither, already last", "E", "", "", []string{"A", "B", "C", "D", "E"}},
			{"both, to the same place", "C", "B", "D", []string{"A", "B", "C", "D", "E"}},
		}
		for _, tc := range moves {
			t.Run("move "+tc.name, func(t *testing.T) {
				p, m := column(t, "A", "B", "C", "D", "E")
				var after, before *string
				if tc.after != "" {
					after = idp(m[tc.after])
				}
				if tc.before != "" {
					before = idp(m[tc.before])
				}
				moved, err := f.svc.MoveProcedure(f.admin, m[tc.move].ID.String(), nil, after, before)
				if err != nil {
					t.Fatalf("MoveProcedure: %v", err)
				}
				if moved.ID != m[tc.move].ID || moved.State != procedure.StateTODO {
					t.Fatalf("moved = %s in %s", moved.Name, moved.State)
				}
				f.assertColumn(t, p, "TODO", pick(m, tc.want...))
			})
		}

		t.Run("repeated moves into one gap renumber the column", func(t *testing.T) {
			const items, rounds = 12, 60
			var ns []string
			for i := 0; i < items; i++ {
				ns = append(ns, fmt.Sprintf("P%02d", i))
			}
			p, m := column(t, ns...)
			model := pick(m, ns...)
			minGapSeen := 1e300
			for i := 0; i < rounds; i++ {
				// Always into the gap directly below the first procedure,
				// which halves that gap on every round.
				anchor, next, victim := model[0], model[1], model[len(model)-1]
				var after, before *string
				mode := []string{"after", "before", "both"}[i%3]
				switch mode {
				case "after":
					after = idp(anchor)
				case "before":
					before = idp(next)
				case "both":
					after, before = idp(anchor), idp(next)
				}
				if _, err := f.svc.MoveProcedure(f.admin, victim.ID.String(), nil, after, before); err != nil {
					t.Fatalf("round %d (%s): %v", i, mode, err)
				}
				rest := slices.Clone(model[1 : len(model)-1])
				model = append([]*ent.Procedure{anchor, victim}, rest...)
				col := f.column(t, p, "TODO")
				if got, want := names(col), names(model); !slices.Equal(got, want) {
					t.Fatalf("round %d (%s): column = %v; want %v (positions %v)", i, mode, got, want, positions(col))
				}
				for j := 1; j < len(col); j++ {
					gap := col[j].Position - col[j-1].Position
					if !(gap > 0) {
						t.Fatalf("round %d: positions not strictly increasing: %v", i, positions(col))
					}
					minGapSeen = min(minGapSeen, gap)
				}
			}
			// Sixty halvings of a 1024 gap would be far below float64
			// resolution: surviving them proves the column was renumbered.
			if minGapSeen <= 0 {
				t.Fatalf("min gap %v", minGapSeen)
			}
			if n := len(f.column(t, p, "TODO")); n != items {
				t.Fatalf("column has %d procedures; want %d", n, items)
			}
		})

		t.Run("moving to another state goes to the end of that column", func(t *testing.T) {
			p, m := column(t, "A", "B", "C")
			m["X"] = f.newProcedure(t, "X", "IN_PROGRESS", p)
			m["Y"] = f.newProcedure(t, "Y", "IN_PROGRESS", p)

			moved, err := f.svc.MoveProcedure(f.admin, m["A"].ID.String(), strp("IN_PROGRESS"), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if moved.State != procedure.StateIN_PROGRESS {
				t.Fatalf("state = %s", moved.State)
			}
			f.assertColumn(t, p, "IN_PROGRESS", pick(m, "X", "Y", "A"))
			f.assertColumn(t, p, "TODO", pick(m, "B", "C"))

			// With a neighbour in the target column it lands there.
			if _, err := f.svc.MoveProcedure(f.admin, m["C"].ID.String(), strp("IN_PROGRESS"), idp(m["X"]), nil); err != nil {
				t.Fatal(err)
			}
			f.assertColumn(t, p, "IN_PROGRESS", pick(m, "X", "C", "Y", "A"))
			f.assertColumn(t, p, "TODO", pick(m, "B"))

			// Into an empty column.
			if _, err := f.svc.MoveProcedure(f.admin, m["B"].ID.String(), strp("WAITING"), nil, nil); err != nil {
				t.Fatal(err)
			}
			f.assertColumn(t, p, "WAITING", pick(m, "B"))
			f.assertColumn(t, p, "TODO", nil)

			// A state change through UpdateProcedure also lands at the end.
			if _, err := f.svc.UpdateProcedure(f.admin, m["X"].ID.String(), core.UpdateProcedureInput{State: core.Some("WAITING")}); err != nil {
				t.Fatal(err)
			}
			f.assertColumn(t, p, "WAITING", pick(m, "B", "X"))
		})

		t.Run("invalid neighbours", func(t *testing.T) {
			p, m := column(t, "A", "B", "C", "D")
			m["W"] = f.newProcedure(t, "W", "IN_PROGRESS", p)
			other := f.newProject(t, "other project")
			m["O"] = f.newProcedure(t, "O", "TODO", other)
			unknown := ids.New(ids.KindProcedure).String()

			tests := []struct {
				name          string
				move          string
				state         *string
				after, before *string
				field         string
			}{
				{"after from another state", "A", nil, idp(m["W"]), nil, "afterId"},
				{"after from another project", "A", nil, idp(m["O"]), nil, "afterId"},
				{"before from another state", "A", nil, nil, idp(m["W"]), "beforeId"},
				{"before from another project", "A", nil, nil, idp(m["O"]), "beforeId"},
				{"after from the source column when changing state", "A", strp("IN_PROGRESS"), idp(m["B"]), nil, "afterId"},
				{"after is self", "B", nil, idp(m["B"]), nil, "afterId"},
				{"before is self", "B", nil, nil, idp(m["B"]), "beforeId"},
				{"before skips a procedure", "D", nil, idp(m["A"]), idp(m["C"]), "beforeId"},
				{"before and after are the same procedure", "A", nil, idp(m["B"]), idp(m["B"]), "beforeId"},
				{"before above after", "A", nil, idp(m["C"]), idp(m["B"]), "beforeId"},
				{"control: the procedure's own neighbours are valid", "B", nil, idp(m["A"]), idp(m["C"]), ""},
				{"unknown after", "A", nil, strp(unknown), nil, "afterId"},
				{"unknown before", "A", nil, nil, strp(unknown), "beforeId"},
				{"malformed after", "A", nil, strp("not-an-id"), nil, "afterId"},
				{"malformed before", "A", nil, nil, strp("1234"), "beforeId"},
				{"invalid state", "A", strp("DONE"), nil, nil, "state"},
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					before := f.column(t, p, "TODO")
					_, err := f.svc.MoveProcedure(f.admin, m[tc.move].ID.String(), tc.state, tc.after, tc.before)
					if tc.field == "" {
						// B's own slot: the column is read without B, so A and
						// C are adjacent and the move is valid.
						if err != nil {
							t.Fatalf("MoveProcedure: %v", err)
						}
						return
					}
					wantInvalid(t, err, tc.field)
					// Nothing moved.
					f.assertColumn(t, p, "TODO", before)
					if got := f.column(t, p, "TODO"); !slices.Equal(positions(got), positions(before)) {
						t.Fatalf("positions changed from %v to %v", positions(before), positions(got))
					}
				})
			}
		})
	})
}

func TestDeleteRules(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db, "DEL")

		t.Run("delete procedure removes its comments", func(t *testing.T) {
			doomed := f.newProcedure(t, "doomed", "TODO", f.project)
			kept := f.newProcedure(t, "kept", "TODO", f.project)
			var doomedComments []*ent.Comment
			for _, txt := range []string{"one", "two"} {
				c, err := f.svc.AddComment(f.admin, doomed.ID.String(), txt)
				if err != nil {
					t.Fatal(err)
				}
				doomedComments = append(doomedComments, c)
			}
			keptComment, err := f.svc.AddComment(f.admin, kept.ID.String(), "stays")
			if err != nil {
				t.Fatal(err)
			}
			if err := f.svc.DeleteProcedure(f.admin, doomed.ID.String()); err != nil {
				t.Fatalf("DeleteProcedure: %v", err)
			}
			n, err := db.Client.Comment.Query().Where(comment.ProcedureID(doomed.ID)).Count(sys())
			if err != nil || n != 0 {
				t.Fatalf("comments of the deleted procedure: %d, %v; want 0", n, err)
			}
			for _, c := range doomedComments {
				_, err := f.svc.Comment(f.admin, c.ID.String())
				wantCode(t, err, apperr.NotFound)
			}
			if _, err := f.svc.Comment(f.admin, keptComment.ID.String()); err != nil {
				t.Fatalf("the other procedure's comment is gone: %v", err)
			}
			_, err = f.svc.Procedure(f.admin, doomed.ID.String())
			wantCode(t, err, apperr.NotFound)
			// Deleting again is not_found.
			wantCode(t, f.svc.DeleteProcedure(f.admin, doomed.ID.String()), apperr.NotFound)
		})

		t.Run("delete category uncategorises its procedures", func(t *testing.T) {
			doomedCat := f.newCategory(t, "doomed category")
			in1 := f.input("in1", "TODO", f.project)
			in1.CategoryID = doomedCat.ID.String()
			p1, err := f.svc.CreateProcedure(f.admin, in1)
			if err != nil {
				t.Fatal(err)
			}
			in2 := f.input("in2", "WAITING", f.project)
			in2.CategoryID = doomedCat.ID.String()
			p2, err := f.svc.CreateProcedure(f.admin, in2)
			if err != nil {
				t.Fatal(err)
			}
			untouched := f.newProcedure(t, "other category", "TODO", f.project)

			if err := f.svc.DeleteCategory(f.admin, doomedCat.ID.String()); err != nil {
				t.Fatalf("DeleteCategory: %v", err)
			}
			for _, p := range []*ent.Procedure{p1, p2} {
				got, err := f.svc.Procedure(f.admin, p.ID.String())
				if err != nil {
					t.Fatalf("procedure %s was deleted with its category: %v", p.Name, err)
				}
				if got.CategoryID != nil {
					t.Fatalf("procedure %s still has category %v", p.Name, *got.CategoryID)
				}
			}
			got, err := f.svc.Procedure(f.admin, untouched.ID.String())
			if err != nil || got.CategoryID == nil || *got.CategoryID != f.category.ID {
				t.Fatalf("unrelated procedure's category changed: %+v, %v", got, err)
			}
			_, err = f.svc.Category(f.admin, doomedCat.ID.String())
			wantCode(t, err, apperr.NotFound)
		})

		t.Run("delete project with procedures is a conflict", func(t *testing.T) {
			busy := f.newProject(t, "busy")
			p1 := f.newProcedure(t, "busy 1", "TODO", busy)
			f.newProcedure(t, "busy 2", "COMPLETED", busy)
			c, err := f.svc.AddComment(f.admin, p1.ID.String(), "note")
			if err != nil {
				t.Fatal(err)
			}
			before, _ := db.Client.Workspace.Get(sys(), f.boot.Workspace.ID)

			wantCode(t, f.svc.DeleteProject(f.admin, busy.ID.String()), apperr.Conflict)

			if _, err := f.svc.Project(f.admin, busy.ID.String()); err != nil {
				t.Fatalf("project deleted despite the conflict: %v", err)
			}
			n, err := db.Client.Procedure.Query().Where(procedure.ProjectID(busy.ID)).Count(sys())
			if err != nil || n != 2 {
				t.Fatalf("project has %d procedures after the refused delete (%v); want 2", n, err)
			}
			if _, err := f.svc.Comment(f.admin, c.ID.String()); err != nil {
				t.Fatalf("comment deleted despite the conflict: %v", err)
			}
			after, _ := db.Client.Workspace.Get(sys(), f.boot.Workspace.ID)
			if after.Version != before.Version {
				t.Fatalf("workspace version moved from %d to %d on a refused delete", before.Version, after.Version)
			}

			// Once empty it may go.
			for _, p := range f.column(t, busy, "TODO") {
				if err := f.svc.DeleteProcedure(f.admin, p.ID.String()); err != nil {
					t.Fatal(err)
				}
			}
			wantCode(t, f.svc.DeleteProject(f.admin, busy.ID.String()), apperr.Conflict)
			for _, p := range f.column(t, busy, "COMPLETED") {
				if err := f.svc.DeleteProcedure(f.admin, p.ID.String()); err != nil {
					t.Fatal(err)
				}
			}
			if err := f.svc.DeleteProject(f.admin, busy.ID.String()); err != nil {
				t.Fatalf("DeleteProject of an empty project: %v", err)
			}
			_, err = f.svc.Project(f.admin, busy.ID.String())
			wantCode(t, err, apperr.NotFound)
		})
	})
}

func TestCreateProcedureValidation(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db, "VAL")

		t.Run("every missing required field is reported", func(t *testing.T) {
			_, err := f.svc.CreateProcedure(f.admin, core.CreateProcedureInput{Name: "   "})
			wantCode(t, err, apperr.ValidationFailed)
			want := []string{"categoryId", "doerId", "dueAt", "name", "priority", "projectId", "state"}
			if got := fieldsOf(err); !slices.Equal(got, want) {
				t.Fatalf("fields = %v; want %v", got, want)
			}
		})

		invalid := []struct {
			name   string
			mutate func(in *core.CreateProcedureInput)
			fields []string
		}{
			{"unknown priority and state", func(in *core.CreateProcedureInput) { in.Priority, in.State = "URGENT", "DONE" }, []string{"priority", "state"}},
			{"malformed ids", func(in *core.CreateProcedureInput) { in.CategoryID, in.DoerID, in.ProjectID = "x", "y", "z" }, []string{"categoryId", "doerId", "projectId"}},
			{"ids of nothing", func(in *core.CreateProcedureInput) {
				in.CategoryID, in.DoerID, in.ProjectID = ids.New(ids.KindCategory).String(), ids.New(ids.KindMember).String(), ids.New(ids.KindProject).String()
			}, []string{"categoryId", "doerId", "projectId"}},
			{"name too long", func(in *core.CreateProcedureInput) { in.Name = strings.Repeat("n", core.MaxNameLen+1) }, []string{"name"}},
			{"generation enums", func(in *core.CreateProcedureInput) {
				in.ContentType, in.DocStyle, in.Language = strp("poem"), strp("fancy"), strp("cobol")
			}, []string{"contentType", "docStyle", "language"}},
			{"content over the limit", func(in *core.CreateProcedureInput) { in.Content = strings.Repeat("x", core.MaxContentLen+1) }, []string{"content"}},
			{"multibyte content over the limit", func(in *core.CreateProcedureInput) { in.Content = strings.Repeat("é", core.MaxContentLen+1) }, []string{"content"}},
			{"json string content over the limit", func(in *core.CreateProcedureInput) {
				b, _ := json.Marshal(strings.Repeat("x", core.MaxContentLen+1))
				in.Content = json.RawMessage(b)
			}, []string{"content"}},
			{"json object content over the limit", func(in *core.CreateProcedureInput) {
				b, _ := json.Marshal(map[string]string{"k": strings.Repeat("x", core.MaxContentLen)})
				in.Content = json.RawMessage(b)
			}, []string{"content"}},
			{"malformed json content", func(in *core.CreateProcedureInput) { in.Content = json.RawMessage(`{"a":`) }, []string{"content"}},
			{"invalid utf-8 content", func(in *core.CreateProcedureInput) { in.Content = "bad \xff byte" }, []string{"content"}},
		}
		for _, tc := range invalid {
			t.Run(tc.name, func(t *testing.T) {
				in := f.input("valid name", "TODO", f.project)
				tc.mutate(&in)
				before, _ := db.Client.Procedure.Query().Count(sys())
				_, err := f.svc.CreateProcedure(f.admin, in)
				wantCode(t, err, apperr.ValidationFailed)
				if got := fieldsOf(err); !slices.Equal(got, tc.fields) {
					t.Fatalf("fields = %v; want %v", got, tc.fields)
				}
				if after, _ := db.Client.Procedure.Query().Count(sys()); after != before {
					t.Fatalf("a procedure was stored despite the error")
				}
			})
		}

		atLimit := strings.Repeat("é", core.MaxContentLen)
		contents := []struct {
			name    string
			content any
			want    *string
		}{
			{"absent", nil, nil},
			{"string", "plain *markdown*\nline two", strp("plain *markdown*\nline two")},
			{"empty string", "", strp("")},
			{"string at the limit in characters", atLimit, strp(atLimit)},
			{"json object stored compact", json.RawMessage(" {\n  \"b\": 1,\n  \"a\": [1, 2, {\"c\": null}]\n} "), strp(`{"b":1,"a":[1,2,{"c":null}]}`)},
			{"json array", json.RawMessage(`[ "x" , true ]`), strp(`["x",true]`)},
			{"json null", json.RawMessage("null"), nil},
			{"json null with spaces", json.RawMessage("  null "), nil},
			{"json number", json.RawMessage("42.50"), strp("42.50")},
			{"json string is unquoted", json.RawMessage(`"hello \"world\""`), strp(`hello "world"`)},
			{"json boolean", json.RawMessage("false"), strp("false")},
			{"decoded number", float64(7), strp("7")},
			{"decoded object", map[string]any{"k": "v", "n": 1}, strp(`{"k":"v","n":1}`)},
		}
		for _, tc := range contents {
			t.Run("content "+tc.name, func(t *testing.T) {
				in := f.input("content "+tc.name, "TODO", f.project)
				in.Content = tc.content
				p, err := f.svc.CreateProcedure(f.admin, in)
				if err != nil {
					t.Fatalf("CreateProcedure: %v", err)
				}
				stored, err := f.svc.Procedure(f.admin, p.ID.String())
				if err != nil {
					t.Fatal(err)
				}
				for _, got := range []*ent.Procedure{p, stored} {
					switch {
					case tc.want == nil && got.Content != nil:
						t.Fatalf("content = %.80q; want none", *got.Content)
					case tc.want != nil && got.Content == nil:
						t.Fatalf("content = none; want %.80q", *tc.want)
					case tc.want != nil && *got.Content != *tc.want:
						t.Fatalf("content = %.80q; want %.80q", *got.Content, *tc.want)
					}
				}
			})
		}

		t.Run("dueAt is stored in UTC", func(t *testing.T) {
			in := f.input("zoned", "TODO", f.project)
			due := time.Date(2026, 12, 1, 10, 0, 0, 0, time.FixedZone("+02", 2*3600))
			in.DueAt = &due
			p, err := f.svc.CreateProcedure(f.admin, in)
			if err != nil {
				t.Fatal(err)
			}
			stored, err := f.svc.Procedure(f.admin, p.ShortID)
			if err != nil {
				t.Fatal(err)
			}
			if !stored.DueAt.Equal(due) || stored.DueAt.UTC().Hour() != 8 {
				t.Fatalf("dueAt = %v; want %v", stored.DueAt, due.UTC())
			}
		})
	})
}

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

func TestRoles(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db, "ROLE")
		svc := f.svc
		proc := f.newProcedure(t, "target", "TODO", f.project)
		neighbour := f.newProcedure(t, "neighbour", "TODO", f.project)
		emptyProject := f.newProject(t, "empty")
		spareCategory := f.newCategory(t, "spare")
		adminComment, err := svc.AddComment(f.admin, proc.ID.String(), "by admin")
		if err != nil {
			t.Fatal(err)
		}
		viewerCtx, viewerMember := f.as(t, viewer.RoleViewer)
		memberCtx, _ := f.as(t, viewer.RoleMember)
		_, spare := f.as(t, viewer.RoleMember)
		tok, _, err := svc.CreateToken(f.admin, core.TokenInput{MemberID: spare.ID.String(), Name: "spare"})
		if err != nil {
			t.Fatal(err)
		}
		// The viewer's own comment, planted directly: a viewer cannot write one.
		ownComment, err := db.Client.Comment.Create().SetWorkspaceID(f.boot.Workspace.ID).SetProcedureID(proc.ID).
			SetAuthorID(viewerMember.ID).SetText("by viewer").Save(sys())
		if err != nil {
			t.Fatal(err)
		}

		type call func(ctx context.Context) error
		writes := map[string]call{
			"CreateProcedure": func(ctx context.Context) error {
				_, err := svc.CreateProcedure(ctx, f.input("new", "TODO", f.project))
				return err
			},
			"UpdateProcedure": func(ctx context.Context) error {
				_, err := svc.UpdateProcedure(ctx, proc.ID.String(), core.UpdateProcedureInput{Name: core.Some("renamed")})
				return err
			},
			"MoveProcedure": func(ctx context.Context) error {
				_, err := svc.MoveProcedure(ctx, proc.ID.String(), nil, idp(neighbour), nil)
				return err
			},
			"DeleteProcedure": func(ctx context.Context) error { return svc.DeleteProcedure(ctx, proc.ID.String()) },
			"CreateProject": func(ctx context.Context) error {
				_, err := svc.CreateProject(ctx, core.ProjectInput{Name: core.Some("p")})
				return err
			},
			"UpdateProject": func(ctx context.Context) error {
				_, err := svc.UpdateProject(ctx, emptyProject.ID.String(), core.ProjectInput{Name: core.Some("renamed")})
				return err
			},
			"DeleteProject": func(ctx context.Context) error { return svc.DeleteProject(ctx, emptyProject.ID.String()) },
			"CreateCategory": func(ctx context.Context) error {
				_, err := svc.CreateCategory(ctx, "c")
				return err
			},
			"UpdateCategory": func(ctx context.Context) error {
				_, err := svc.UpdateCategory(ctx, spareCategory.ID.String(), core.Some("renamed"))
				return err
			},
			"DeleteCategory": func(ctx context.Context) error { return svc.DeleteCategory(ctx, spareCategory.ID.String()) },
			"AddComment": func(ctx context.Context) error {
				_, err := svc.AddComment(ctx, proc.ID.String(), "hello")
				return err
			},
			"UpdateComment (own)": func(ctx context.Context) error {
				_, err := svc.UpdateComment(ctx, ownComment.ID.String(), "edited")
				return err
			},
			"DeleteComment (own)": func(ctx context.Context) error { return svc.DeleteComment(ctx, ownComment.ID.String()) },
			"AddMember": func(ctx context.Context) error {
				_, err := svc.AddMember(ctx, core.MemberInput{Name: core.Some("n"), Email: core.Some("new@example.com")})
				return err
			},
			"UpdateMember": func(ctx context.Context) error {
				_, err := svc.UpdateMember(ctx, spare.ID.String(), core.MemberInput{Role: core.Some("ADMIN")})
				return err
			},
			"RemoveMember": func(ctx context.Context) error {
				_, err := svc.RemoveMember(ctx, spare.ID.String())
				return err
			},
			"CreateToken": func(ctx context.Context) error {
				_, _, err := svc.CreateToken(ctx, core.TokenInput{Name: "mine"})
				return err
			},
			"RevokeToken": func(ctx context.Context) error {
				_, err := svc.RevokeToken(ctx, tok.ID.String())
				return err
			},
			"Tokens": func(ctx context.Context) error {
				_, err := svc.Tokens(ctx)
				return err
			},
		}
		sortedKeys := func(m map[string]call) []string {
			ks := make([]string, 0, len(m))
			for k := range m {
				ks = append(ks, k)
			}
			sort.Strings(ks)
			return ks
		}
		adminOnly := []string{"AddMember", "UpdateMember", "RemoveMember", "CreateToken", "RevokeToken", "Tokens"}

		tests := []struct {
			name      string
			ctx       context.Context
			forbidden []string
		}{
			{"VIEWER", viewerCtx, sortedKeys(writes)},
			{"MEMBER", memberCtx, adminOnly},
		}
		version := func(t *testing.T) int64 {
			t.Helper()
			ws, err := db.Client.Workspace.Get(sys(), f.boot.Workspace.ID)
			if err != nil {
				t.Fatal(err)
			}
			return ws.Version
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				v0 := version(t)
				for _, name := range tc.forbidden {
					t.Run(name, func(t *testing.T) {
						wantCode(t, writes[name](tc.ctx), apperr.Forbidden)
					})
				}
				if v := version(t); v != v0 {
					t.Fatalf("workspace version moved from %d to %d: a forbidden call wrote", v0, v)
				}
			})
		}

		t.Run("forbidden calls left everything in place", func(t *testing.T) {
			if p, err := svc.Procedure(f.admin, proc.ID.String()); err != nil || p.Name != "target" {
				t.Fatalf("procedure = %+v, %v", p, err)
			}
			if _, err := svc.Project(f.admin, emptyProject.ID.String()); err != nil {
				t.Fatal(err)
			}
			if c, err := svc.Category(f.admin, spareCategory.ID.String()); err != nil || c.Name != "spare" {
				t.Fatalf("category = %+v, %v", c, err)
			}
			if m, err := svc.Member(f.admin, spare.ID.String()); err != nil || m.RemovedAt != nil || m.Role != member.RoleMEMBER {
				t.Fatalf("member = %+v, %v", m, err)
			}
			if c, err := svc.Comment(f.admin, ownComment.ID.String()); err != nil || c.Text != "by viewer" {
				t.Fatalf("comment = %+v, %v", c, err)
			}
		})

		t.Run("reads and member writes are allowed", func(t *testing.T) {
			if _, err := svc.FindProcedures(viewerCtx, core.ProcedureFilter{}, core.DefaultProcedureOrder, core.Window{}); err != nil {
				t.Fatalf("VIEWER FindProcedures: %v", err)
			}
			if _, err := svc.Procedure(viewerCtx, proc.ShortID); err != nil {
				t.Fatalf("VIEWER Procedure: %v", err)
			}
			if _, err := svc.CreateProcedure(memberCtx, f.input("by member", "TODO", f.project)); err != nil {
				t.Fatalf("MEMBER CreateProcedure: %v", err)
			}
			// A member may not edit an admin's comment (author rule).
			_, err := svc.UpdateComment(memberCtx, adminComment.ID.String(), "x")
			wantCode(t, err, apperr.Forbidden)
		})
	})
}

func TestAuthenticate(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db, "AUTH")
		a := auth.New(db)
		ctx := context.Background()
		bearer := func(secret string) string { return "Bearer " + secret }

		t.Run("fresh token is accepted", func(t *testing.T) {
			tests := []struct {
				name   string
				header string
			}{
				{"canonical", bearer(f.boot.Secret)},
				{"lower-case scheme", "bearer " + f.boot.Secret},
				{"extra spaces", "Bearer   " + f.boot.Secret + "  "},
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					v, err := a.Authenticate(ctx, tc.header)
					if err != nil {
						t.Fatalf("Authenticate: %v", err)
					}
					ws, _ := db.Client.Workspace.Get(sys(), f.boot.Workspace.ID)
					if v.WorkspaceID != f.boot.Workspace.ID || v.MemberID != f.boot.Admin.ID ||
						v.TokenID != f.boot.Token.ID || v.Role != viewer.RoleAdmin {
						t.Fatalf("viewer = %+v; want workspace %s member %s token %s ADMIN",
							*v, f.boot.Workspace.ID, f.boot.Admin.ID, f.boot.Token.ID)
					}
					// The first use writes lastUsedAt, which bumps the version:
					// that request must not trust version-keyed caches. Later
					// uses carry the current version.
					if v.VersionKnown && v.WorkspaceVersion != ws.Version {
						t.Fatalf("viewer version %d is not the workspace's %d", v.WorkspaceVersion, ws.Version)
					}
					if tc.name != "canonical" && !v.VersionKnown {
						t.Fatalf("a token used within the minute must carry a known version: %+v", *v)
					}
				})
			}
		})

		t.Run("lastUsedAt is written on first use", func(t *testing.T) {
			_, m := f.as(t, viewer.RoleViewer)
			tok, secret, err := f.svc.CreateToken(f.admin, core.TokenInput{MemberID: m.ID.String(), Name: "fresh"})
			if err != nil {
				t.Fatal(err)
			}
			stored, _ := db.Client.Token.Get(sys(), tok.ID)
			if stored.LastUsedAt != nil {
				t.Fatalf("lastUsedAt set before any use: %v", stored.LastUsedAt)
			}
			v, err := a.Authenticate(ctx, bearer(secret))
			if err != nil {
				t.Fatal(err)
			}
			if v.Role != viewer.RoleViewer || v.MemberID != m.ID || v.TokenID != tok.ID {
				t.Fatalf("viewer = %+v", v)
			}
			stored, _ = db.Client.Token.Get(sys(), tok.ID)
			if stored.LastUsedAt == nil {
				t.Fatal("lastUsedAt not written on first use")
			}
			if _, err := a.Authenticate(ctx, bearer(secret)); err != nil {
				t.Fatalf("second use: %v", err)
			}
		})

		unknownSecret, _ := auth.NewSecret()
		rejected := []struct {
			name   string
			header string
		}{
			{"missing", ""},
			{"scheme only", "Bearer"},
			{"scheme and space", "Bearer "},
			{"basic scheme", "Basic " + f.boot.Secret},
			{"no scheme", f.boot.Secret},
			{"too short", "Bearer pms_short"},
			{"space inside the secret", "Bearer pms_abcdefgh ijklmnopqrstuvwxyz"},
			{"control character", "Bearer pms_abcdefghijklmnop\x01qrstuvwxyz"},
			{"too long", "Bearer " + strings.Repeat("a", 201)},
			{"unknown", bearer(unknownSecret)},
			{"hash instead of secret", bearer(auth.Hash(f.boot.Secret))},
			{"secret with a trailing character", bearer(f.boot.Secret + "x")},
		}
		for _, tc := range rejected {
			t.Run("rejects "+tc.name, func(t *testing.T) {
				v, err := a.Authenticate(ctx, tc.header)
				wantCode(t, err, apperr.Unauthenticated)
				if v != nil {
					t.Fatalf("viewer %+v returned with the error", v)
				}
			})
		}

		// Disconnected cases each build their own token.
		disconnected := []struct {
			name  string
			setup func(t *testing.T) (secret string)
		}{
			{"revoked token", func(t *testing.T) string {
				_, m := f.as(t, viewer.RoleMember)
				tok, secret, err := f.svc.CreateToken(f.admin, core.TokenInput{MemberID: m.ID.String()})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := a.Authenticate(ctx, bearer(secret)); err != nil {
					t.Fatalf("before revoking: %v", err)
				}
				if _, err := f.svc.RevokeToken(f.admin, tok.ID.String()); err != nil {
					t.Fatal(err)
				}
				return secret
			}},
			{"expired token", func(t *testing.T) string {
				// A service whose clock is in 2001 issues a token that
				// expired long before any real now.
				past := core.New(db.Client, core.WithClock(func() time.Time {
					return time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
				}))
				adm, err := past.ActAsAdmin(ctx, f.boot.Workspace.ID.String())
				if err != nil {
					t.Fatal(err)
				}
				exp := time.Date(2001, 2, 1, 0, 0, 0, 0, time.UTC)
				_, secret, err := past.CreateToken(adm, core.TokenInput{Name: "old", ExpiresAt: &exp})
				if err != nil {
					t.Fatal(err)
				}
				return secret
			}},
			{"removed member", func(t *testing.T) string {
				_, m := f.as(t, viewer.RoleMember)
				_, secret, err := f.svc.CreateToken(f.admin, core.TokenInput{MemberID: m.ID.String()})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := a.Authenticate(ctx, bearer(secret)); err != nil {
					t.Fatalf("before removal: %v", err)
				}
				if _, err := f.svc.RemoveMember(f.admin, m.ID.String()); err != nil {
					t.Fatal(err)
				}
				return secret
			}},
			{"removed member with a token that is not revoked", func(t *testing.T) string {
				_, m := f.as(t, viewer.RoleMember)
				tok, secret, err := f.svc.CreateToken(f.admin, core.TokenInput{MemberID: m.ID.String()})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.svc.RemoveMember(f.admin, m.ID.String()); err != nil {
					t.Fatal(err)
				}
				// Undo the revocation so that only the removal can refuse it.
				if err := db.Client.Token.UpdateOneID(tok.ID).ClearRevokedAt().Exec(sys()); err != nil {
					t.Fatal(err)
				}
				return secret
			}},
		}
		for _, tc := range disconnected {
			t.Run("disconnects "+tc.name, func(t *testing.T) {
				secret := tc.setup(t)
				v, err := a.Authenticate(ctx, bearer(secret))
				wantCode(t, err, apperr.Disconnected)
				if v != nil {
					t.Fatalf("viewer %+v returned with the error", v)
				}
				var ae *apperr.Error
				if errors.As(err, &ae) && ae.Message != apperr.DisconnectedMessage {
					t.Fatalf("message = %q", ae.Message)
				}
			})
		}

		t.Run("token expiring in the future is accepted", func(t *testing.T) {
			exp := time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC)
			_, secret, err := f.svc.CreateToken(f.admin, core.TokenInput{Name: "long", ExpiresAt: &exp})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.Authenticate(ctx, bearer(secret)); err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
		})
	})
}
