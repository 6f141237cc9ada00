package core_test

// Races between removing a member and the writes of that member waiting
// for the workspace lock (see races_test.go for the harness).

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/comment"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/viewer"
)

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
