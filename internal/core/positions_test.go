package core_test

// Positions: where creates and moves put a procedure in its (project, state)
// column, renumbering of a column whose gaps run out, and neighbours that are
// refused.

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/ids"
)

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
