package core_test

// Races between writes of one workspace. Writes are serialised by the
// workspace lock (inTx); these tests pin that everything a write stores or
// checks is as of that lock, not as of reads made before it:
//
//   - concurrent updates of one record get distinct, increasing updatedAt
//     values (and so ETags), the stored row is the last committed write, and
//     one precondition lets exactly one writer through;
//   - a member removed, demoted, or whose token is revoked while their
//     request waits for the lock cannot write;
//   - a reference deleted (or a doer removed) while a write waits answers
//     what a sequential execution would: validation_failed naming the field,
//     or not_found for the record written to.
//
// Deterministic interleavings run the Service over a client whose
// transactions first run a hook (hookedClient): the concurrent change is
// committed exactly where the write waits for the lock (after its checks
// made before the transaction, as it begins its transaction). Free-running races use a logical clock read
// only under the lock, so that timestamps order the commits.

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"entgo.io/ent/dialect"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/events"
	"github.com/procsvc/procsvc/rest"
)

// interleaveKey marks a context whose write runs hook (once) where it waits
// for the workspace lock.
type interleaveKey struct{}

type interleaving struct {
	once sync.Once
	hook func()
}

// interleaved returns ctx whose next write first runs change, at the point
// where the write waits for the workspace lock.
func interleaved(ctx context.Context, change func()) context.Context {
	return context.WithValue(ctx, interleaveKey{}, &interleaving{hook: change})
}

func runInterleaving(ctx context.Context) {
	if il, ok := ctx.Value(interleaveKey{}).(*interleaving); ok {
		il.once.Do(il.hook)
	}
}

// hooked is setup whose Service runs interleavings and barriers (runHooks)
// and uses opts (a clock, a generator) on top of the fixed test clock.
func hooked(t *testing.T, db *database.DB, key string, opts ...core.Option) *fixture {
	t.Helper()
	f := setup(t, db, key)
	base := []core.Option{core.WithClock(func() time.Time { return clock })}
	if db.Dialect == dialect.Postgres {
		// As the server runs: field updates share the workspace lock.
		base = append(base, core.WithAnnouncer(events.NewPostgresAnnouncer(nil)), core.WithLockPolicy(core.SharedFieldUpdates))
	}
	f.svc = core.New(hookedClient(db, runHooks), append(base, opts...)...)
	return f
}

// hookedClient is a client of db whose every transaction first runs hook
// with its context: a write of the core runs it where it waits for the
// workspace lock, after the checks it makes before its transaction.
func hookedClient(db *database.DB, hook func(context.Context)) *ent.Client {
	return ent.NewClient(ent.Driver(hookedDriver{Driver: db.Driver(), hook: hook}))
}

type hookedDriver struct {
	dialect.Driver
	hook func(context.Context)
}

func (d hookedDriver) Tx(ctx context.Context) (dialect.Tx, error) {
	d.hook(ctx)
	return d.Driver.Tx(ctx)
}

// version is the workspace's write counter: every committed write bumps it
// by one, a refused one leaves it alone.
func (f *fixture) version(t *testing.T) int64 {
	t.Helper()
	ws, err := f.db.Client.Workspace.Get(sys(), f.boot.Workspace.ID)
	if err != nil {
		t.Fatal(err)
	}
	return ws.Version
}

// ticks is a logical clock far ahead of any stored timestamp, so that
// nextUpdatedAt always takes it; writes read it only under the workspace
// lock, so its values order the commits.
type ticks struct{ n atomic.Int64 }

func (c *ticks) now() time.Time {
	return time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(c.n.Add(1)) * time.Millisecond)
}

// sameAnswer fails unless got and want carry the same code and fields.
func sameAnswer(t *testing.T, got, want error) {
	t.Helper()
	if apperr.CodeOf(got) != apperr.CodeOf(want) || !slices.Equal(fieldsOf(got), fieldsOf(want)) {
		t.Fatalf("answered %v; a sequential execution answers %v", got, want)
	}
}

// row is what a write returned or what is stored, reduced to what
// TestConcurrentUpdatesGetDistinctUpdatedAt compares.
type row struct {
	name      string
	updatedAt time.Time
	extra     string
}

func (r row) equal(o row) bool {
	return r.name == o.name && r.updatedAt.Equal(o.updatedAt) && r.extra == o.extra
}

// TestConcurrentUpdatesGetDistinctUpdatedAt: n concurrent updates of one
// record each build on the previous one (updatedAt read under the lock), so
// their ETags differ and only the last one still matches.
func TestConcurrentUpdatesGetDistinctUpdatedAt(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db, "LOST")
		const n = 40
		proc := f.newProcedure(t, "p", "TODO", f.project)
		proj := f.newProject(t, "lost project")
		cat := f.newCategory(t, "lost category")

		procRow := func(p *ent.Procedure) row {
			return row{p.Name, p.UpdatedAt, fmt.Sprintf("%s %v", p.State, p.Position)}
		}
		targets := []struct {
			name    string
			initial time.Time
			// write is the i-th concurrent write; conds guard it.
			write  func(i int, conds ...core.Precondition) (row, error)
			stored func() row
		}{
			{
				name: "procedure", initial: proc.UpdatedAt,
				write: func(i int, conds ...core.Precondition) (row, error) {
					if i%4 == 3 && len(conds) == 0 {
						// Moves derive updatedAt (and the column) from the row too.
						p, err := f.svc.MoveProcedure(f.admin, proc.ID.String(), strp("WAITING"), nil, nil)
						if err != nil {
							return row{}, err
						}
						return procRow(p), nil
					}
					p, err := f.svc.UpdateProcedure(f.admin, proc.ID.String(),
						core.UpdateProcedureInput{Name: core.Some(fmt.Sprintf("w%02d", i)), State: core.Some([]string{"TODO", "IN_PROGRESS"}[i%2])}, conds...)
					if err != nil {
						return row{}, err
					}
					return procRow(p), nil
				},
				stored: func() row { return procRow(db.Client.Procedure.GetX(sys(), proc.ID)) },
			},
			{
				name: "project", initial: proj.UpdatedAt,
				write: func(i int, conds ...core.Precondition) (row, error) {
					p, err := f.svc.UpdateProject(f.admin, proj.ID.String(), core.ProjectInput{Name: core.Some(fmt.Sprintf("w%02d", i))}, conds...)
					if err != nil {
						return row{}, err
					}
					return row{name: p.Name, updatedAt: p.UpdatedAt}, nil
				},
				stored: func() row {
					p := db.Client.Project.GetX(sys(), proj.ID)
					return row{name: p.Name, updatedAt: p.UpdatedAt}
				},
			},
			{
				name: "category", initial: cat.UpdatedAt,
				write: func(i int, conds ...core.Precondition) (row, error) {
					c, err := f.svc.UpdateCategory(f.admin, cat.ID.String(), core.Some(fmt.Sprintf("w%02d", i)), conds...)
					if err != nil {
						return row{}, err
					}
					return row{name: c.Name, updatedAt: c.UpdatedAt}, nil
				},
				stored: func() row {
					c := db.Client.Category.GetX(sys(), cat.ID)
					return row{name: c.Name, updatedAt: c.UpdatedAt}
				},
			},
		}
		for _, tc := range targets {
			t.Run(tc.name, func(t *testing.T) {
				rows := make([]row, n)
				errs := make([]error, n)
				start := make(chan struct{})
				var wg sync.WaitGroup
				for i := range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						rows[i], errs[i] = tc.write(i)
					}()
				}
				close(start)
				wg.Wait()
				for i, err := range errs {
					if err != nil {
						t.Fatalf("write %d: %v", i, err)
					}
				}

				// With the fixed clock, each write's updatedAt is its
				// predecessor's plus a millisecond: n writes give exactly n
				// consecutive values, in commit order.
				sort.Slice(rows, func(i, j int) bool { return rows[i].updatedAt.Before(rows[j].updatedAt) })
				first := tc.initial.Truncate(time.Millisecond).Add(time.Millisecond)
				if first.Before(clock) {
					first = clock
				}
				var distinct []string
				for k, r := range rows {
					distinct = append(distinct, rest.ETag(r.updatedAt))
					if want := first.Add(time.Duration(k) * time.Millisecond); !r.updatedAt.Equal(want) {
						t.Errorf("commit %d of %d has updatedAt %s; want %s (each write must build on the row as of the lock)",
							k+1, n, r.updatedAt.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
						break
					}
				}
				slices.Sort(distinct)
				if got := len(slices.Compact(distinct)); got != n {
					t.Errorf("%d concurrent writes answered %d distinct ETags; want %d", n, got, n)
				}
				last := rows[n-1]
				if got := tc.stored(); !got.equal(last) {
					t.Fatalf("stored row %+v; want the last committed write %+v", got, last)
				}
				if t.Failed() {
					t.FailNow()
				}

				// Every ETag but the last is stale: If-Match with it is refused
				// and changes nothing.
				for _, r := range rows[:n-1] {
					_, err := tc.write(0, core.IfUpdatedAt(r.updatedAt))
					wantCode(t, err, apperr.PreconditionFailed)
				}
				if got := tc.stored(); !got.equal(last) {
					t.Fatalf("a refused write changed the row: %+v; want %+v", got, last)
				}
				if _, err := tc.write(0, core.IfUpdatedAt(last.updatedAt)); err != nil {
					t.Fatalf("If-Match with the current ETag: %v", err)
				}
			})
		}

		// k writers holding the same (current) ETag: exactly one wins.
		for _, tc := range targets {
			t.Run(tc.name+" one precondition, one winner", func(t *testing.T) {
				const k = 8
				cur := tc.stored()
				rows := make([]row, k)
				errs := make([]error, k)
				start := make(chan struct{})
				var wg sync.WaitGroup
				for i := range k {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						rows[i], errs[i] = tc.write(100+i, core.IfUpdatedAt(cur.updatedAt))
					}()
				}
				close(start)
				wg.Wait()
				winner := -1
				for i, err := range errs {
					switch {
					case err == nil && winner >= 0:
						t.Fatalf("writers %d and %d both passed the same precondition", winner, i)
					case err == nil:
						winner = i
					default:
						wantCode(t, err, apperr.PreconditionFailed)
					}
				}
				if winner < 0 {
					t.Fatal("no writer passed the precondition")
				}
				if got := tc.stored(); !got.equal(rows[winner]) {
					t.Fatalf("stored row %+v; want the winner's %+v", got, rows[winner])
				}
			})
		}
	})
}
