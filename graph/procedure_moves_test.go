package graph_test

// Procedures over GraphQL: moving within and across columns, renumbering, and
// deleting.

import (
	"sort"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// column returns the ids of a (project, state) column, ordered by position,
// failing when two procedures share a position.
func column(t testing.TB, s *apitest.Server, w *apitest.Workspace, project, state string) []string {
	t.Helper()
	page := listProcs(t, s, w.ViewToken, obj("first", 100, "filter", obj("projectId", project, "state", state)))
	ps := page.Nodes
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Position < ps[j].Position })
	for i := 1; i < len(ps); i++ {
		if !(ps[i].Position > ps[i-1].Position) {
			t.Fatalf("column %s/%s: %s and %s share position %v", project, state, ps[i-1].ShortID, ps[i].ShortID, ps[i].Position)
		}
	}
	return ids(ps)
}

// ---------------------------------------------------------------------------
// moveProcedure.

const moveMutation = `mutation($id: ID!, $state: ProcedureState, $after: ID, $before: ID) {
	moveProcedure(id: $id, state: $state, afterId: $after, beforeId: $before) { id state position }
}`

func TestMoveProcedure(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		proj := createProject(t, s, w.MemberToken, "Board")
		mk := func(name, state string) string {
			return createProc(t, s, w.MemberToken, procInput(w, name, map[string]any{"projectId": proj, "state": state})).ID
		}
		A, B, C, D := mk("A", "TODO"), mk("B", "TODO"), mk("C", "TODO"), mk("D", "TODO")
		E := mk("E", "IN_PROGRESS")
		names := map[string]string{A: "A", B: "B", C: "C", D: "D", E: "E"}
		show := func(col []string) string {
			out := make([]string, len(col))
			for i, id := range col {
				out[i] = names[id]
			}
			return strings.Join(out, " ")
		}
		expect := func(t *testing.T, state, want string) {
			t.Helper()
			if got := show(column(t, s, w, proj, state)); got != want {
				t.Fatalf("%s column = %q, want %q", state, got, want)
			}
		}
		expect(t, "TODO", "A B C D")

		steps := []struct {
			name                 string
			id                   string
			vars                 map[string]any
			wantState            string
			wantTodo, wantInProg string
		}{
			{"AfterId", D, obj("after", A), "TODO", "A D B C", "E"},
			{"BeforeId", A, obj("before", C), "TODO", "D B A C", "E"},
			{"AfterAndBeforeId", C, obj("after", D, "before", B), "TODO", "D C B A", "E"},
			{"BeforeFirst", A, obj("before", D), "TODO", "A D C B", "E"},
			{"AfterLast", D, obj("after", B), "TODO", "A C B D", "E"},
			{"NoNeighboursGoesToEnd", A, obj(), "TODO", "C B D A", "E"},
			{"OtherStateToEnd", B, obj("state", "IN_PROGRESS"), "IN_PROGRESS", "C D A", "E B"},
			{"OtherStateAfterId", E, obj("state", "TODO", "after", C), "TODO", "C E D A", "B"},
			{"OtherStateBeforeId", D, obj("state", "IN_PROGRESS", "before", B), "IN_PROGRESS", "C E A", "D B"},
			{"SameStateGiven", A, obj("state", "TODO", "before", C), "TODO", "A C E", "D B"},
		}
		for _, st := range steps {
			t.Run(st.name, func(t *testing.T) {
				vars := obj("id", st.id)
				for k, v := range st.vars {
					vars[k] = v
				}
				var out struct {
					MoveProcedure struct {
						ID, State string
						Position  float64
					}
				}
				ok(t, s.GraphQL(t, w.MemberToken, moveMutation, vars), &out)
				if out.MoveProcedure.ID != st.id || out.MoveProcedure.State != st.wantState {
					t.Fatalf("moved %+v, want %s in %s", out.MoveProcedure, names[st.id], st.wantState)
				}
				expect(t, "TODO", st.wantTodo)
				expect(t, "IN_PROGRESS", st.wantInProg)
			})
		}

		// Now TODO: A C E; IN_PROGRESS: D B.
		errs := []struct {
			name, id string
			vars     map[string]any
			code     string
			fields   []string
		}{
			{"ErrAfterIdInOtherColumn", A, obj("after", D), "validation_failed", []string{"afterId"}},
			{"ErrBeforeIdInOtherColumn", A, obj("before", B), "validation_failed", []string{"beforeId"}},
			{"ErrAfterIdSelf", C, obj("after", C), "validation_failed", []string{"afterId"}},
			{"ErrBeforeIdSelf", C, obj("before", C), "validation_failed", []string{"beforeId"}},
			{"ErrAfterIdMalformed", A, obj("after", "nope"), "validation_failed", []string{"afterId"}},
			{"ErrBeforeIdMalformed", A, obj("before", "nope"), "validation_failed", []string{"beforeId"}},
			{"ErrBeforeNotDirectlyAfter", A, obj("after", C, "before", C), "validation_failed", []string{"beforeId"}},
			{"ErrNeighboursNotAdjacent", D, obj("state", "TODO", "after", A, "before", E), "validation_failed", []string{"beforeId"}},
			{"ErrStateInvalid", A, obj("state", "DONE"), "validation_failed", []string{"state"}},
			{"ErrAfterIdNotAProcedure", A, obj("after", w.ProjectID), "validation_failed", []string{"afterId"}},
			{"ErrNotFound", "ACME-999", obj(), "not_found", nil},
		}
		for _, tc := range errs {
			t.Run(tc.name, func(t *testing.T) {
				vars := obj("id", tc.id)
				for k, v := range tc.vars {
					vars[k] = v
				}
				wantError(t, s.GraphQL(t, w.MemberToken, moveMutation, vars), tc.code, tc.fields...)
				expect(t, "TODO", "A C E")
				expect(t, "IN_PROGRESS", "D B")
			})
		}
		t.Run("ErrAfterIdOfOtherProject", func(t *testing.T) {
			x := createProc(t, s, w.MemberToken, procInput(w, "elsewhere", nil)).ID
			wantError(t, s.GraphQL(t, w.MemberToken, moveMutation, obj("id", A, "after", x)), "validation_failed", "afterId")
			expect(t, "TODO", "A C E")
		})
	})
}

// TestMoveProcedureRenumbers splits the same gap until it is too small and
// checks that the column stays in strict order.
func TestMoveProcedureRenumbers(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		proj := createProject(t, s, w.MemberToken, "Tight")
		var model []string
		for _, n := range []string{"a", "b", "c", "d"} {
			model = append(model, createProc(t, s, w.MemberToken, procInput(w, n, map[string]any{"projectId": proj})).ID)
		}
		place := func(id, after string) {
			var rest []string
			for _, x := range model {
				if x != id {
					rest = append(rest, x)
				}
			}
			model = model[:0]
			for _, x := range rest {
				model = append(model, x)
				if x == after {
					model = append(model, id)
				}
			}
		}
		first := model[0]
		movers := []string{model[2], model[3]}
		for i := 0; i < 64; i++ {
			id := movers[i%2]
			ok(t, s.GraphQL(t, w.MemberToken, moveMutation, obj("id", id, "after", first)), &struct{}{})
			place(id, first)
		}
		if got := column(t, s, w, proj, "TODO"); !sameStrings(got, model) {
			t.Fatalf("column = %v, want %v", got, model)
		}
		// The renumbered column still accepts placements between any two neighbours.
		ok(t, s.GraphQL(t, w.MemberToken, moveMutation, obj("id", model[3], "after", model[0], "before", model[1])), &struct{}{})
		place(model[3], model[0])
		if got := column(t, s, w, proj, "TODO"); !sameStrings(got, model) {
			t.Fatalf("column = %v, want %v", got, model)
		}
	})
}

// ---------------------------------------------------------------------------
// deleteProcedure.

func TestDeleteProcedure(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		keep := createProc(t, s, w.MemberToken, procInput(w, "Keep", nil))
		keepComment := addComment(t, s, w.MemberToken, keep.ID, "stays")
		doomed := createProc(t, s, w.MemberToken, procInput(w, "Doomed", nil))
		c1 := addComment(t, s, w.MemberToken, doomed.ID, "one")
		c2 := addComment(t, s, w.AdminToken, doomed.ID, "two")

		const del = `mutation($id: ID!) { deleteProcedure(id: $id) { success deletedId } }`
		t.Run("Deletes", func(t *testing.T) {
			var out struct {
				DeleteProcedure struct {
					Success   bool
					DeletedID string
				}
			}
			ok(t, s.GraphQL(t, w.MemberToken, del, obj("id", doomed.ID)), &out)
			if !out.DeleteProcedure.Success || out.DeleteProcedure.DeletedID != doomed.ID {
				t.Fatalf("got %+v", out.DeleteProcedure)
			}
			wantError(t, s.GraphQL(t, w.ViewToken, `query($id: ID!) { procedure(id: $id) { id } }`, obj("id", doomed.ID)), "not_found")
			wantError(t, s.GraphQL(t, w.ViewToken, `query($id: ID!) { procedure(id: $id) { id } }`, obj("id", doomed.ShortID)), "not_found")
		})
		t.Run("CommentsGoWithIt", func(t *testing.T) {
			var out struct{ Nodes []*named }
			ok(t, s.GraphQL(t, w.ViewToken, `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, obj("ids", []string{c1, c2, keepComment})), &out)
			if out.Nodes[0] != nil || out.Nodes[1] != nil {
				t.Fatalf("comments of a deleted procedure still resolve: %+v %+v", out.Nodes[0], out.Nodes[1])
			}
			if out.Nodes[2] == nil || out.Nodes[2].ID != keepComment {
				t.Fatalf("another procedure's comment is gone")
			}
			wantError(t, s.GraphQL(t, w.AdminToken, `mutation($id: ID!) { updateComment(id: $id, input: {text: "x"}) { id } }`, obj("id", c1)), "not_found")
			if got := getProc(t, s, w.ViewToken, keep.ID); len(got.Comments) != 1 {
				t.Fatalf("kept procedure has %d comments", len(got.Comments))
			}
		})
		t.Run("ErrAlreadyDeleted", func(t *testing.T) {
			wantError(t, s.GraphQL(t, w.MemberToken, del, obj("id", doomed.ID)), "not_found")
		})
		t.Run("ErrMalformedId", func(t *testing.T) {
			wantError(t, s.GraphQL(t, w.MemberToken, del, obj("id", "zzz")), "not_found")
		})
		t.Run("ByShortId", func(t *testing.T) {
			p := createProc(t, s, w.MemberToken, procInput(w, "By short id", nil))
			ok(t, s.GraphQL(t, w.MemberToken, del, obj("id", p.ShortID)), &struct{}{})
			wantError(t, s.GraphQL(t, w.ViewToken, `query($id: ID!) { procedure(id: $id) { id } }`, obj("id", p.ID)), "not_found")
		})
		t.Run("ShortIdNeverReused", func(t *testing.T) {
			// ACME-1 kept, ACME-2 and ACME-3 deleted: the next is ACME-4.
			if p := createProc(t, s, w.MemberToken, procInput(w, "Next", nil)); p.ShortID != "ACME-4" {
				t.Fatalf("next shortId = %s, want ACME-4", p.ShortID)
			}
			if n := listProcs(t, s, w.ViewToken, nil).TotalCount; n != 2 {
				t.Fatalf("totalCount = %d, want 2", n)
			}
		})
	})
}
