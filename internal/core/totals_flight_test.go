package core_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/viewer"
)

// heldCounts holds every COUNT statement a database is sent (outside a
// transaction) before it is sent, until release is closed, and counts
// them: the tests below see how many counts their requests cost, and how
// many run at once, without timing anything.
type heldCounts struct {
	release chan struct{}

	mu         sync.Mutex
	seen, held int
}

func holdCounts(t *testing.T, db *database.DB) *heldCounts {
	h := &heldCounts{release: make(chan struct{})}
	db.Record(func(st database.Statement) {
		if !strings.Contains(strings.ToUpper(st.Query), "COUNT(") {
			return
		}
		h.mu.Lock()
		h.seen++
		h.held++
		h.mu.Unlock()
		<-h.release
		h.mu.Lock()
		h.held--
		h.mu.Unlock()
	})
	t.Cleanup(func() {
		db.Record(nil)
		h.let()
	})
	return h
}

// let lets every count held, and every later one, run.
func (h *heldCounts) let() {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.release:
	default:
		close(h.release)
	}
}

func (h *heldCounts) counts() (seen, held int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seen, h.held
}

// waitUntil polls cond (state describes what it saw) until it holds,
// failing after a generous bound: the goroutines it waits for need no
// time, only to be scheduled.
func waitUntil(t *testing.T, what string, cond func() bool, state func() string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never %s: %s", what, state())
		}
	}
}

// atVersion acts as f's admin having read the workspace's version with its
// token, as every request does (internal/auth): the totals are kept and
// shared only then.
func (f *fixture) atVersion(t *testing.T) context.Context {
	t.Helper()
	ws, err := f.db.Client.Workspace.Get(sys(), f.boot.Workspace.ID)
	if err != nil {
		t.Fatal(err)
	}
	return viewer.NewContext(context.Background(), &viewer.Viewer{WorkspaceID: ws.ID, MemberID: f.boot.Admin.ID,
		Role: viewer.RoleAdmin, WorkspaceVersion: ws.Version, VersionKnown: true})
}

// searchable gives f procedures of which matching carry term in their
// name, and the rest not, then writes once more (a version no total has
// been counted at).
func (f *fixture) searchable(t *testing.T, term string, matching, others int) {
	t.Helper()
	for i := range matching + others {
		name := fmt.Sprintf("plain %d", i)
		if i < matching {
			name = fmt.Sprintf("with %s %d", strings.ToUpper(term), i)
		}
		f.newProcedure(t, name, "TODO", f.project)
	}
}

// total lists one procedure of filter, to read its total.
type total func(ctx context.Context, svc *core.Service) (int, error)

func procedureTotal(filter core.ProcedureFilter) total {
	return func(ctx context.Context, svc *core.Service) (int, error) {
		l, err := svc.FindProcedures(ctx, filter, core.ProcedureOrder{}, core.Window{First: new(1)})
		if err != nil {
			return 0, err
		}
		return l.Total, nil
	}
}

// TestIdenticalCountsShareOneStatement: 16 requests of one list at one
// version, arriving while its count runs (held before it is sent), cost
// that one count and all get its total, on each list that counts.
func TestIdenticalCountsShareOneStatement(t *testing.T) {
	const requests = 16
	cases := []struct {
		name  string
		total total
		want  int
	}{
		{"search", procedureTotal(core.ProcedureFilter{Search: "needle"}), 4},
		{"search and priority", procedureTotal(core.ProcedureFilter{Search: "needle", Priorities: []string{"MEDIUM"}}), 4},
		{"due window", procedureTotal(core.ProcedureFilter{DueFrom: &dueAt, DueTo: &dueAt}), 10},
		{"projects by name", func(ctx context.Context, svc *core.Service) (int, error) {
			l, err := svc.FindProjects(ctx, core.ListFilter{Search: "project"}, core.Window{First: new(1)})
			if err != nil {
				return 0, err
			}
			return l.Total, nil
		}, 1},
	}
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db, "CNT")
		f.searchable(t, "needle", 4, 6)
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				// A write: the total of every filtered list is to be
				// counted again.
				f.newCategory(t, "Category of "+c.name)
				ctx := f.atVersion(t)
				h := holdCounts(t, db)
				type answer struct {
					n   int
					err error
				}
				answers := make(chan answer, requests)
				for range requests {
					go func() {
						n, err := c.total(ctx, f.svc)
						answers <- answer{n, err}
					}()
				}
				waitUntil(t, "all waiting on one count", func() bool {
					_, waiters, _ := f.svc.CountsInFlight()
					seen, held := h.counts()
					return waiters == requests && seen == 1 && held == 1
				}, func() string {
					flights, waiters, _ := f.svc.CountsInFlight()
					seen, held := h.counts()
					return fmt.Sprintf("%d counts in flight, %d waiting on them; %d count statements, %d held", flights, waiters, seen, held)
				})
				h.let()
				for range requests {
					if a := <-answers; a.err != nil || a.n != c.want {
						t.Errorf("total %d, %v; want %d", a.n, a.err, c.want)
					}
				}
				if seen, _ := h.counts(); seen != 1 {
					t.Errorf("%d requests sent %d count statements; want 1", requests, seen)
				}
			})
		}
	})
}

// TestCountWaiterGivingUpFailsNoOther: the request whose count the others
// wait for gives up (its client gone, its deadline passed): it answers
// unavailable at once, while the count goes on for the others, who get
// their total from that one count. When every waiter gives up, the count
// is dropped, and the next request counts afresh.
func TestCountWaiterGivingUpFailsNoOther(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db, "GIV")
		f.searchable(t, "needle", 3, 2)
		search := procedureTotal(core.ProcedureFilter{Search: "needle"})
		type answer struct {
			n   int
			err error
		}
		ask := func(ctx context.Context) chan answer {
			out := make(chan answer, 1)
			go func() {
				n, err := search(ctx, f.svc)
				out <- answer{n, err}
			}()
			return out
		}
		state := func(h *heldCounts) func() string {
			return func() string {
				flights, waiters, _ := f.svc.CountsInFlight()
				seen, held := h.counts()
				return fmt.Sprintf("%d counts in flight, %d waiting on them; %d count statements, %d held", flights, waiters, seen, held)
			}
		}

		t.Run("the first gives up", func(t *testing.T) {
			f.newCategory(t, "another version")
			at := f.atVersion(t)
			h := holdCounts(t, db)
			firstCtx, giveUp := context.WithCancel(at)
			defer giveUp()
			first := ask(firstCtx)
			waitUntil(t, "counting for the first", func() bool { _, held := h.counts(); return held == 1 }, state(h))
			var others []chan answer
			for range 7 {
				others = append(others, ask(at))
			}
			waitUntil(t, "all 8 waiting", func() bool { _, w, _ := f.svc.CountsInFlight(); return w == 8 }, state(h))
			giveUp()
			if a := <-first; apperr.CodeOf(a.err) != apperr.Unavailable {
				t.Fatalf("the first, given up: %d, %v; want unavailable", a.n, a.err)
			}
			if _, w, _ := f.svc.CountsInFlight(); w != 7 {
				t.Fatalf("%d waiting after the first gave up; want 7", w)
			}
			h.let()
			for _, o := range others {
				if a := <-o; a.err != nil || a.n != 3 {
					t.Errorf("another: %d, %v; want 3", a.n, a.err)
				}
			}
			if seen, _ := h.counts(); seen != 1 {
				t.Errorf("%d count statements; want 1", seen)
			}
		})

		t.Run("every one gives up", func(t *testing.T) {
			f.newCategory(t, "yet another version")
			at := f.atVersion(t)
			h := holdCounts(t, db)
			ctx, giveUp := context.WithCancel(at)
			defer giveUp()
			var asked []chan answer
			for range 3 {
				asked = append(asked, ask(ctx))
			}
			waitUntil(t, "all 3 waiting", func() bool {
				_, w, _ := f.svc.CountsInFlight()
				_, held := h.counts()
				return w == 3 && held == 1
			}, state(h))
			giveUp()
			for _, a := range asked {
				if a := <-a; apperr.CodeOf(a.err) != apperr.Unavailable {
					t.Fatalf("given up: %d, %v; want unavailable", a.n, a.err)
				}
			}
			if flights, _, _ := f.svc.CountsInFlight(); flights != 0 {
				t.Fatalf("%d counts still shared after every waiter gave up", flights)
			}
			// The next request does not wait for the abandoned count.
			next := ask(at)
			waitUntil(t, "a second count", func() bool { seen, _ := h.counts(); return seen == 2 }, state(h))
			h.let()
			if a := <-next; a.err != nil || a.n != 3 {
				t.Fatalf("the next request: %d, %v; want 3", a.n, a.err)
			}
		})
	})
}

// TestDistinctCountsAreBounded is a hostile client: a flood of distinct
// searches in one workspace, each a count of its own. At most
// perWorkspace of them run at once, the rest wait for a slot; another
// workspace's count still runs, within the replica's slots; past those, it
// waits too; once the counts end, every request gets its exact total. It
// fails without the bound: the 20 counts run at once.
func TestDistinctCountsAreBounded(t *testing.T) {
	const perWorkspace, inFlight, flood = 2, 3, 20
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		a, b, c := setup(t, db, "FLA"), setup(t, db, "FLB"), setup(t, db, "FLC")
		a.searchable(t, "needle", 2, 1)
		b.searchable(t, "needle", 3, 1)
		c.searchable(t, "needle", 4, 1)
		svc := core.New(db.Client, core.WithClock(func() time.Time { return clock }), core.WithCountLimits(perWorkspace, inFlight))
		h := holdCounts(t, db)
		type answer struct {
			who  string
			n    int
			err  error
			want int
		}
		answers := make(chan answer, flood+2)
		search := func(ctx context.Context, who, term string, want int) {
			go func() {
				n, err := procedureTotal(core.ProcedureFilter{Search: term})(ctx, svc)
				answers <- answer{who, n, err, want}
			}()
		}
		reached := func(what string, flights, held, waiting int) {
			t.Helper()
			waitUntil(t, what, func() bool {
				fl, _, wt := svc.CountsInFlight()
				_, hd := h.counts()
				return fl == flights && hd == held && wt == waiting
			}, func() string {
				fl, _, wt := svc.CountsInFlight()
				_, hd := h.counts()
				return fmt.Sprintf("%d counts in flight, %d running (held), %d waiting for a slot; want %d, %d, %d",
					fl, hd, wt, flights, held, waiting)
			})
		}
		at := a.atVersion(t)
		for i := range flood {
			// Distinct terms: each is a list of its own. "needle" and
			// "eedl" match A's two, the others none.
			term, want := fmt.Sprintf("absent %d", i), 0
			if i < 2 {
				term, want = []string{"needle", "eedl"}[i], 2
			}
			search(at, fmt.Sprintf("A %q", term), term, want)
		}
		reached("the flood bounded by its workspace's slots", flood, perWorkspace, flood-perWorkspace)
		search(b.atVersion(t), "B", "needle", 3)
		reached("another workspace counting beside the flood", flood+1, inFlight, flood-perWorkspace)
		search(c.atVersion(t), "C", "needle", 4)
		reached("a third waiting for the replica's slots", flood+2, inFlight, flood-perWorkspace+1)
		h.let()
		for range flood + 2 {
			if a := <-answers; a.err != nil || a.n != a.want {
				t.Errorf("%s: total %d, %v; want %d", a.who, a.n, a.err, a.want)
			}
		}
		if seen, _ := h.counts(); seen != flood+2 {
			t.Errorf("%d count statements; want one per distinct list, %d", seen, flood+2)
		}
	})
}
