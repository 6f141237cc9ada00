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
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"entgo.io/ent/dialect"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/comment"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/events"
	"github.com/procsvc/procsvc/internal/viewer"
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

// write is one core write, performed as ctx.
type write struct {
	name string
	do   func(ctx context.Context) error
}

// memberWrites are the writes a MEMBER may make, on fresh targets each time
// (own is the acting member: their comment is the one edited).
func (f *fixture) memberWrites(t *testing.T, own *ent.Member) []write {
	t.Helper()
	svc := f.svc
	proc := f.newProcedure(t, "target", "TODO", f.project)
	other := f.newProcedure(t, "other", "TODO", f.project)
	emptyProject := f.newProject(t, "empty")
	spareCategory := f.newCategory(t, "spare")
	ownComment, err := f.db.Client.Comment.Create().SetWorkspaceID(f.boot.Workspace.ID).SetProcedureID(proc.ID).
		SetAuthorID(own.ID).SetText("own").Save(sys())
	if err != nil {
		t.Fatal(err)
	}
	doomed, err := f.db.Client.Comment.Create().SetWorkspaceID(f.boot.Workspace.ID).SetProcedureID(proc.ID).
		SetAuthorID(own.ID).SetText("to delete").Save(sys())
	if err != nil {
		t.Fatal(err)
	}
	return []write{
		{"CreateProcedure", func(ctx context.Context) error {
			_, err := svc.CreateProcedure(ctx, f.input("new", "TODO", f.project))
			return err
		}},
		{"UpdateProcedure", func(ctx context.Context) error {
			_, err := svc.UpdateProcedure(ctx, proc.ID.String(), core.UpdateProcedureInput{Name: core.Some("renamed")})
			return err
		}},
		{"MoveProcedure", func(ctx context.Context) error {
			_, err := svc.MoveProcedure(ctx, proc.ID.String(), nil, idp(other), nil)
			return err
		}},
		{"DeleteProcedure", func(ctx context.Context) error { return svc.DeleteProcedure(ctx, other.ID.String()) }},
		{"AddComment", func(ctx context.Context) error {
			_, err := svc.AddComment(ctx, proc.ID.String(), "hello")
			return err
		}},
		{"UpdateComment", func(ctx context.Context) error {
			_, err := svc.UpdateComment(ctx, ownComment.ID.String(), "edited")
			return err
		}},
		{"DeleteComment", func(ctx context.Context) error { return svc.DeleteComment(ctx, doomed.ID.String()) }},
		{"CreateProject", func(ctx context.Context) error {
			_, err := svc.CreateProject(ctx, core.ProjectInput{Name: core.Some("new project")})
			return err
		}},
		{"UpdateProject", func(ctx context.Context) error {
			_, err := svc.UpdateProject(ctx, emptyProject.ID.String(), core.ProjectInput{Name: core.Some("renamed")})
			return err
		}},
		{"DeleteProject", func(ctx context.Context) error { return svc.DeleteProject(ctx, emptyProject.ID.String()) }},
		{"CreateCategory", func(ctx context.Context) error {
			_, err := svc.CreateCategory(ctx, "new category")
			return err
		}},
		{"UpdateCategory", func(ctx context.Context) error {
			_, err := svc.UpdateCategory(ctx, spareCategory.ID.String(), core.Some("renamed"))
			return err
		}},
		{"DeleteCategory", func(ctx context.Context) error { return svc.DeleteCategory(ctx, spareCategory.ID.String()) }},
	}
}

// adminWrites are the writes only an ADMIN may make.
func (f *fixture) adminWrites(t *testing.T) []write {
	t.Helper()
	svc := f.svc
	_, target := f.as(t, viewer.RoleMember)
	_, doomed := f.as(t, viewer.RoleMember)
	tok, _, err := svc.CreateToken(f.admin, core.TokenInput{MemberID: target.ID.String(), Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	// Someone else's comment: only an admin may edit it.
	proc := f.newProcedure(t, "commented", "TODO", f.project)
	theirs, err := svc.AddComment(f.admin, proc.ID.String(), "the first admin's")
	if err != nil {
		t.Fatal(err)
	}
	return []write{
		{"AddMember", func(ctx context.Context) error {
			_, err := svc.AddMember(ctx, core.MemberInput{Name: core.Some("new"), Email: core.Some(uuid.NewString() + "@example.com")})
			return err
		}},
		{"UpdateMember", func(ctx context.Context) error {
			_, err := svc.UpdateMember(ctx, target.ID.String(), core.MemberInput{Role: core.Some("VIEWER")})
			return err
		}},
		{"RemoveMember", func(ctx context.Context) error {
			_, err := svc.RemoveMember(ctx, doomed.ID.String())
			return err
		}},
		{"CreateToken", func(ctx context.Context) error {
			_, _, err := svc.CreateToken(ctx, core.TokenInput{MemberID: target.ID.String(), Name: "new"})
			return err
		}},
		{"RevokeToken", func(ctx context.Context) error {
			_, err := svc.RevokeToken(ctx, tok.ID.String())
			return err
		}},
		{"UpdateComment of another member", func(ctx context.Context) error {
			_, err := svc.UpdateComment(ctx, theirs.ID.String(), "edited by an admin")
			return err
		}},
	}
}

// TestActingMemberChangedWhileWaiting: the acting member's membership, role
// and token are checked as of the workspace lock. Each write's own checks
// pass before it waits; the change then commits; the write must be refused
// and write nothing.
func TestActingMemberChangedWhileWaiting(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := hooked(t, db, "WAIT")
		changes := []struct {
			name string
			role viewer.Role
			// change is committed by an admin while the write waits.
			change func(m *ent.Member, tok *ent.Token) error
			want   apperr.Code
		}{
			{"removed member", viewer.RoleMember, func(m *ent.Member, _ *ent.Token) error {
				_, err := f.svc.RemoveMember(f.admin, m.ID.String())
				return err
			}, apperr.Disconnected},
			{"member demoted to viewer", viewer.RoleMember, func(m *ent.Member, _ *ent.Token) error {
				_, err := f.svc.UpdateMember(f.admin, m.ID.String(), core.MemberInput{Role: core.Some("VIEWER")})
				return err
			}, apperr.Forbidden},
			{"revoked token", viewer.RoleMember, func(_ *ent.Member, tok *ent.Token) error {
				_, err := f.svc.RevokeToken(f.admin, tok.ID.String())
				return err
			}, apperr.Disconnected},
			{"removed admin", viewer.RoleAdmin, func(m *ent.Member, _ *ent.Token) error {
				_, err := f.svc.RemoveMember(f.admin, m.ID.String())
				return err
			}, apperr.Disconnected},
			{"admin demoted to member", viewer.RoleAdmin, func(m *ent.Member, _ *ent.Token) error {
				_, err := f.svc.UpdateMember(f.admin, m.ID.String(), core.MemberInput{Role: core.Some("MEMBER")})
				return err
			}, apperr.Forbidden},
		}
		for _, ch := range changes {
			t.Run(ch.name, func(t *testing.T) {
				// writes builds the writes, on fresh targets, for actor m.
				writes := func(m *ent.Member) []write { return f.memberWrites(t, m) }
				if ch.role == viewer.RoleAdmin {
					writes = func(*ent.Member) []write { return f.adminWrites(t) }
				}
				for i, w := range writes(f.boot.Admin) {
					t.Run(w.name, func(t *testing.T) {
						// A fresh actor, with a token, per write: the change
						// cannot be undone.
						ctx, m := f.as(t, ch.role)
						tok, _, err := f.svc.CreateToken(f.admin, core.TokenInput{MemberID: m.ID.String(), Name: "acting"})
						if err != nil {
							t.Fatal(err)
						}
						v := *viewer.FromContext(ctx)
						v.TokenID = tok.ID
						ctx = viewer.NewContext(context.Background(), &v)
						w := writes(m)[i]
						var changeErr error
						ctx = interleaved(ctx, func() { changeErr = ch.change(m, tok) })
						before := f.version(t)
						err = w.do(ctx)
						if changeErr != nil {
							t.Fatalf("concurrent change: %v", changeErr)
						}
						wantCode(t, err, ch.want)
						if ch.want == apperr.Disconnected {
							var ae *apperr.Error
							if errors.As(err, &ae) && ae.Message != apperr.DisconnectedMessage {
								t.Fatalf("message %q; want %q", ae.Message, apperr.DisconnectedMessage)
							}
						}
						if got := f.version(t); got != before+1 {
							t.Fatalf("workspace version moved by %d; want 1 (the change only: the write must not commit)", got-before)
						}
					})
				}
			})
		}
	})
}

// generatorFunc adapts a function to core.Generator.
type generatorFunc func(ctx context.Context, req core.GenerateRequest) (string, error)

func (g generatorFunc) Generate(ctx context.Context, req core.GenerateRequest) (string, error) {
	return g(ctx, req)
}

// TestReferencesGoneWhileWaiting: a record a write references, or writes
// to, is deleted (a doer removed) after the write's own early checks and
// before its transaction. The write must answer exactly what it answers
// when run after the change (validation_failed naming the field, or
// not_found), never a bare conflict, never store a removed doer, and write
// nothing.
func TestReferencesGoneWhileWaiting(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		// onGenerate, when set, runs inside content generation: between
		// CreateProcedure's early reference check and its transaction.
		var onGenerate func()
		f := hooked(t, db, "GONE", core.WithGenerator(generatorFunc(func(ctx context.Context, req core.GenerateRequest) (string, error) {
			if onGenerate != nil {
				onGenerate()
			}
			return "generated", nil
		})))
		svc := f.svc
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("concurrent change: %v", err)
			}
		}
		deleteCategory := func(c *ent.Category) func() {
			return func() { must(svc.DeleteCategory(f.admin, c.ID.String())) }
		}
		deleteProject := func(p *ent.Project) func() {
			return func() { must(svc.DeleteProject(f.admin, p.ID.String())) }
		}
		deleteProcedure := func(p *ent.Procedure) func() {
			return func() { must(svc.DeleteProcedure(f.admin, p.ID.String())) }
		}
		removeMember := func(m *ent.Member) func() {
			return func() {
				_, err := svc.RemoveMember(f.admin, m.ID.String())
				must(err)
			}
		}

		type scenario struct {
			// write is run twice: interleaved with change, then again after it.
			write  func(ctx context.Context) error
			change func()
			want   apperr.Code
			field  string // for validation_failed
			// viaGenerator commits the change during content generation
			// instead of at the lock.
			viaGenerator bool
		}
		scenarios := map[string]func(t *testing.T) scenario{
			"CreateProcedure, category deleted": func(t *testing.T) scenario {
				c := f.newCategory(t, "doomed")
				in := f.input("new", "TODO", f.project)
				in.CategoryID = c.ID.String()
				return scenario{write: func(ctx context.Context) error { _, err := svc.CreateProcedure(ctx, in); return err },
					change: deleteCategory(c), want: apperr.ValidationFailed, field: "categoryId"}
			},
			"CreateProcedure, doer removed": func(t *testing.T) scenario {
				_, m := f.as(t, viewer.RoleMember)
				in := f.input("new", "TODO", f.project)
				in.DoerID = m.ID.String()
				return scenario{write: func(ctx context.Context) error { _, err := svc.CreateProcedure(ctx, in); return err },
					change: removeMember(m), want: apperr.ValidationFailed, field: "doerId"}
			},
			"CreateProcedure, project deleted": func(t *testing.T) scenario {
				p := f.newProject(t, "doomed")
				in := f.input("new", "TODO", p)
				return scenario{write: func(ctx context.Context) error { _, err := svc.CreateProcedure(ctx, in); return err },
					change: deleteProject(p), want: apperr.ValidationFailed, field: "projectId"}
			},
			"CreateProcedure with generation, category deleted while generating": func(t *testing.T) scenario {
				c := f.newCategory(t, "doomed")
				in := f.input("new", "TODO", f.project)
				in.CategoryID = c.ID.String()
				in.GenerateProcedure = true
				return scenario{write: func(ctx context.Context) error { _, err := svc.CreateProcedure(ctx, in); return err },
					change: deleteCategory(c), want: apperr.ValidationFailed, field: "categoryId", viaGenerator: true}
			},
			"CreateProcedure with generation, doer removed while generating": func(t *testing.T) scenario {
				_, m := f.as(t, viewer.RoleMember)
				in := f.input("new", "TODO", f.project)
				in.DoerID = m.ID.String()
				in.GenerateProcedure = true
				return scenario{write: func(ctx context.Context) error { _, err := svc.CreateProcedure(ctx, in); return err },
					change: removeMember(m), want: apperr.ValidationFailed, field: "doerId", viaGenerator: true}
			},
			"UpdateProcedure, category deleted": func(t *testing.T) scenario {
				p := f.newProcedure(t, "p", "TODO", f.project)
				c := f.newCategory(t, "doomed")
				return scenario{write: func(ctx context.Context) error {
					_, err := svc.UpdateProcedure(ctx, p.ID.String(), core.UpdateProcedureInput{CategoryID: core.Some(c.ID.String())})
					return err
				}, change: deleteCategory(c), want: apperr.ValidationFailed, field: "categoryId"}
			},
			"UpdateProcedure, doer removed": func(t *testing.T) scenario {
				p := f.newProcedure(t, "p", "TODO", f.project)
				_, m := f.as(t, viewer.RoleMember)
				return scenario{write: func(ctx context.Context) error {
					_, err := svc.UpdateProcedure(ctx, p.ID.String(), core.UpdateProcedureInput{DoerID: core.Some(m.ID.String())})
					return err
				}, change: removeMember(m), want: apperr.ValidationFailed, field: "doerId"}
			},
			"UpdateProcedure, project deleted": func(t *testing.T) scenario {
				p := f.newProcedure(t, "p", "TODO", f.project)
				target := f.newProject(t, "doomed")
				return scenario{write: func(ctx context.Context) error {
					_, err := svc.UpdateProcedure(ctx, p.ID.String(), core.UpdateProcedureInput{ProjectID: core.Some(target.ID.String())})
					return err
				}, change: deleteProject(target), want: apperr.ValidationFailed, field: "projectId"}
			},
			"UpdateProcedure, procedure deleted": func(t *testing.T) scenario {
				p := f.newProcedure(t, "p", "TODO", f.project)
				return scenario{write: func(ctx context.Context) error {
					_, err := svc.UpdateProcedure(ctx, p.ShortID, core.UpdateProcedureInput{Name: core.Some("x"), State: core.Some("WAITING")})
					return err
				}, change: deleteProcedure(p), want: apperr.NotFound}
			},
			"MoveProcedure, procedure deleted": func(t *testing.T) scenario {
				p := f.newProcedure(t, "p", "TODO", f.project)
				return scenario{write: func(ctx context.Context) error {
					_, err := svc.MoveProcedure(ctx, p.ID.String(), strp("WAITING"), nil, nil)
					return err
				}, change: deleteProcedure(p), want: apperr.NotFound}
			},
			"AddComment, procedure deleted": func(t *testing.T) scenario {
				p := f.newProcedure(t, "p", "TODO", f.project)
				return scenario{write: func(ctx context.Context) error {
					_, err := svc.AddComment(ctx, p.ID.String(), "hello")
					return err
				}, change: deleteProcedure(p), want: apperr.NotFound}
			},
			"UpdateComment, its procedure deleted": func(t *testing.T) scenario {
				p := f.newProcedure(t, "p", "TODO", f.project)
				c, err := svc.AddComment(f.admin, p.ID.String(), "hello")
				if err != nil {
					t.Fatal(err)
				}
				return scenario{write: func(ctx context.Context) error {
					_, err := svc.UpdateComment(ctx, c.ID.String(), "edited")
					return err
				}, change: deleteProcedure(p), want: apperr.NotFound}
			},
			"CreateToken, member removed": func(t *testing.T) scenario {
				_, m := f.as(t, viewer.RoleMember)
				return scenario{write: func(ctx context.Context) error {
					_, _, err := svc.CreateToken(ctx, core.TokenInput{MemberID: m.ID.String(), Name: "late"})
					return err
				}, change: removeMember(m), want: apperr.ValidationFailed, field: "memberId"}
			},
			"UpdateMember, member removed": func(t *testing.T) scenario {
				_, m := f.as(t, viewer.RoleMember)
				return scenario{write: func(ctx context.Context) error {
					_, err := svc.UpdateMember(ctx, m.ID.String(), core.MemberInput{Role: core.Some("ADMIN")})
					return err
				}, change: removeMember(m), want: apperr.NotFound}
			},
			"RemoveMember, member removed": func(t *testing.T) scenario {
				_, m := f.as(t, viewer.RoleMember)
				return scenario{write: func(ctx context.Context) error {
					_, err := svc.RemoveMember(ctx, m.ID.String())
					return err
				}, change: removeMember(m), want: apperr.NotFound}
			},
		}
		names := make([]string, 0, len(scenarios))
		for name := range scenarios {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			t.Run(name, func(t *testing.T) {
				sc := scenarios[name](t)
				ctx := f.admin
				if sc.viaGenerator {
					onGenerate = sc.change
					defer func() { onGenerate = nil }()
				} else {
					ctx = interleaved(f.admin, sc.change)
				}
				before := f.version(t)
				err := sc.write(ctx)
				onGenerate = nil
				wantCode(t, err, sc.want)
				if sc.field != "" {
					if fs := fieldsOf(err); !slices.Equal(fs, []string{sc.field}) {
						t.Fatalf("fields = %v; want [%s] (%v)", fs, sc.field, err)
					}
				}
				if got := f.version(t); got != before+1 {
					t.Fatalf("workspace version moved by %d; want 1 (the change only: the write must not commit)", got-before)
				}
				// The same write, run after the change: the same answer.
				sameAnswer(t, err, sc.write(f.admin))
			})
		}
	})
}

// barrier holds writes where they wait for the workspace lock until all n
// have arrived and release is closed.
type barrier struct {
	arrived sync.WaitGroup
	release chan struct{}
}

func newBarrier(n int) *barrier {
	b := &barrier{release: make(chan struct{})}
	b.arrived.Add(n)
	return b
}

type barrierKey struct{}

func (b *barrier) context(ctx context.Context) context.Context {
	return context.WithValue(ctx, barrierKey{}, b)
}

// runHooks runs a context's interleaving or barrier.
func runHooks(ctx context.Context) {
	if b, ok := ctx.Value(barrierKey{}).(*barrier); ok {
		b.arrived.Done()
		<-b.release
	}
	runInterleaving(ctx)
}

// TestRemovalWhileWritesQueue: n writes by one member (creates, updates,
// comments) have all passed their early checks and queue for the lock when
// the member is removed or demoted; released together, they race for the
// lock and every one must be refused. Likewise n writes assigning a doer
// who is removed meanwhile.
func TestRemovalWhileWritesQueue(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := hooked(t, db, "QUEUE")
		const n = 12
		svc := f.svc

		// run starts n writes held at the lock, commits change once all
		// have arrived, releases them and returns their errors.
		run := func(t *testing.T, ctx context.Context, writes []func(ctx context.Context) error, change func() error) []error {
			t.Helper()
			b := newBarrier(len(writes))
			errs := make([]error, len(writes))
			var wg sync.WaitGroup
			for i, w := range writes {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = w(b.context(ctx))
				}()
			}
			b.arrived.Wait()
			err := change()
			close(b.release)
			wg.Wait()
			if err != nil {
				t.Fatalf("concurrent change: %v", err)
			}
			return errs
		}
		memberWrites := func(t *testing.T, m *ent.Member) ([]func(ctx context.Context) error, []*ent.Procedure) {
			var writes []func(ctx context.Context) error
			var procs []*ent.Procedure
			for i := range n {
				p := f.newProcedure(t, fmt.Sprintf("p%d", i), "TODO", f.project)
				procs = append(procs, p)
				switch i % 3 {
				case 0:
					writes = append(writes, func(ctx context.Context) error {
						_, err := svc.CreateProcedure(ctx, f.input(fmt.Sprintf("by member %d", i), "TODO", f.project))
						return err
					})
				case 1:
					writes = append(writes, func(ctx context.Context) error {
						_, err := svc.UpdateProcedure(ctx, p.ID.String(), core.UpdateProcedureInput{Name: core.Some("changed"), State: core.Some("WAITING")})
						return err
					})
				case 2:
					writes = append(writes, func(ctx context.Context) error {
						_, err := svc.AddComment(ctx, p.ID.String(), "by member")
						return err
					})
				}
			}
			return writes, procs
		}
		untouched := func(t *testing.T, m *ent.Member, procs []*ent.Procedure) {
			t.Helper()
			if n, err := db.Client.Procedure.Query().Where(procedure.CreatorID(m.ID)).Count(sys()); err != nil || n != 0 {
				t.Fatalf("%d procedures created by the member (%v); want 0", n, err)
			}
			if n, err := db.Client.Comment.Query().Where(comment.AuthorID(m.ID)).Count(sys()); err != nil || n != 0 {
				t.Fatalf("%d comments by the member (%v); want 0", n, err)
			}
			for _, p := range procs {
				if got := db.Client.Procedure.GetX(sys(), p.ID); got.Name != p.Name || !got.UpdatedAt.Equal(p.UpdatedAt) {
					t.Fatalf("%s was changed: %q at %v", p.ShortID, got.Name, got.UpdatedAt)
				}
			}
		}

		t.Run("member removed", func(t *testing.T) {
			ctx, m := f.as(t, viewer.RoleMember)
			writes, procs := memberWrites(t, m)
			errs := run(t, ctx, writes, func() error { _, err := svc.RemoveMember(f.admin, m.ID.String()); return err })
			for _, err := range errs {
				wantCode(t, err, apperr.Disconnected)
			}
			untouched(t, m, procs)
		})
		t.Run("member demoted", func(t *testing.T) {
			ctx, m := f.as(t, viewer.RoleMember)
			writes, procs := memberWrites(t, m)
			errs := run(t, ctx, writes, func() error {
				_, err := svc.UpdateMember(f.admin, m.ID.String(), core.MemberInput{Role: core.Some("VIEWER")})
				return err
			})
			for _, err := range errs {
				wantCode(t, err, apperr.Forbidden)
			}
			untouched(t, m, procs)
		})
		t.Run("doer removed", func(t *testing.T) {
			_, d := f.as(t, viewer.RoleMember)
			var writes []func(ctx context.Context) error
			for i := range n {
				if i%2 == 0 {
					in := f.input(fmt.Sprintf("for doer %d", i), "TODO", f.project)
					in.DoerID = d.ID.String()
					writes = append(writes, func(ctx context.Context) error { _, err := svc.CreateProcedure(ctx, in); return err })
					continue
				}
				p := f.newProcedure(t, fmt.Sprintf("reassigned %d", i), "TODO", f.project)
				writes = append(writes, func(ctx context.Context) error {
					_, err := svc.UpdateProcedure(ctx, p.ID.String(), core.UpdateProcedureInput{DoerID: core.Some(d.ID.String())})
					return err
				})
			}
			errs := run(t, f.admin, writes, func() error { _, err := svc.RemoveMember(f.admin, d.ID.String()); return err })
			for _, err := range errs {
				wantInvalid(t, err, "doerId")
			}
			if n, err := db.Client.Procedure.Query().Where(procedure.DoerID(d.ID)).Count(sys()); err != nil || n != 0 {
				t.Fatalf("%d procedures assigned to the removed doer (%v); want 0", n, err)
			}
		})
	})
}

// TestRemovalRacesWrites: free-running, n updates by a member race the
// member's removal, and n updates assigning a doer race the doer's removal.
// The logical clock is read only under the lock, so updatedAt and removedAt
// order the commits: no write by the member, and no assignment of the doer,
// may commit after the removal.
func TestRemovalRacesWrites(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		var c ticks
		f := hooked(t, db, "RACE", core.WithClock(c.now))
		const n = 20
		svc := f.svc
		type outcome struct {
			proc *ent.Procedure
			err  error
		}
		race := func(t *testing.T, writes []func() (*ent.Procedure, error), remove func() (*ent.Member, error)) ([]outcome, *ent.Member) {
			t.Helper()
			out := make([]outcome, len(writes))
			var removed *ent.Member
			var removeErr error
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i, w := range writes {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					out[i].proc, out[i].err = w()
				}()
				if i == len(writes)/2 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						removed, removeErr = remove()
					}()
				}
			}
			close(start)
			wg.Wait()
			if removeErr != nil {
				t.Fatalf("removal: %v", removeErr)
			}
			return out, removed
		}

		t.Run("member's own updates", func(t *testing.T) {
			ctx, m := f.as(t, viewer.RoleMember)
			var procs []*ent.Procedure
			var writes []func() (*ent.Procedure, error)
			for i := range n {
				p := f.newProcedure(t, fmt.Sprintf("m%d", i), "TODO", f.project)
				procs = append(procs, p)
				writes = append(writes, func() (*ent.Procedure, error) {
					return svc.UpdateProcedure(ctx, p.ID.String(), core.UpdateProcedureInput{Name: core.Some("by member")})
				})
			}
			out, removed := race(t, writes, func() (*ent.Member, error) { return svc.RemoveMember(f.admin, m.ID.String()) })
			for i, o := range out {
				stored := db.Client.Procedure.GetX(sys(), procs[i].ID)
				if o.err != nil {
					wantCode(t, o.err, apperr.Disconnected)
					if stored.Name != procs[i].Name {
						t.Fatalf("a refused update was stored: %q", stored.Name)
					}
					continue
				}
				if !o.proc.UpdatedAt.Before(*removed.RemovedAt) {
					t.Fatalf("update committed at %v, after the member's removal at %v", o.proc.UpdatedAt, *removed.RemovedAt)
				}
			}
		})
		t.Run("doer assignments", func(t *testing.T) {
			_, d := f.as(t, viewer.RoleMember)
			var writes []func() (*ent.Procedure, error)
			for i := range n {
				p := f.newProcedure(t, fmt.Sprintf("d%d", i), "TODO", f.project)
				writes = append(writes, func() (*ent.Procedure, error) {
					return svc.UpdateProcedure(f.admin, p.ID.String(), core.UpdateProcedureInput{DoerID: core.Some(d.ID.String())})
				})
			}
			out, removed := race(t, writes, func() (*ent.Member, error) { return svc.RemoveMember(f.admin, d.ID.String()) })
			for _, o := range out {
				if o.err != nil {
					wantInvalid(t, o.err, "doerId")
				}
			}
			assigned, err := db.Client.Procedure.Query().Where(procedure.DoerID(d.ID)).All(sys())
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range assigned {
				if !p.UpdatedAt.Before(*removed.RemovedAt) {
					t.Fatalf("%s assigned to the doer at %v, after their removal at %v", p.ShortID, p.UpdatedAt, *removed.RemovedAt)
				}
			}
		})
	})
}
