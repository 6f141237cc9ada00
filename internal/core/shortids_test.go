package core_test

// Short ids: concurrent creates in two workspaces get gap-free per-workspace
// numbers (KEY-n), never reused after a delete; lookup by short id.

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

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
