package events

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/viewer"
)

// TestLocalAnnouncer writes through a core.Service and checks that each
// committed write is published, by the time the write returns, to the
// workspace's subscribers only, with what it changed and the workspace's
// version as of it.
func TestLocalAnnouncer(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		h := NewHub(HubOptions{})
		svc := core.New(db.Client, core.WithAnnouncer(NewLocalAnnouncer(h)))
		f := setup(t, db, svc, "LOC")
		outsider := setup(t, db, svc, "OUT")
		sub, outside := h.Subscribe(f.ws), h.Subscribe(outsider.ws)

		var p *ent.Procedure
		steps := []struct {
			name   string
			write  func(t *testing.T) error
			kind   core.ChangeKind
			before *core.Facets
			after  *core.Facets
		}{
			{"CreateProcedure", func(t *testing.T) error { p = f.create(t, "Live"); return nil },
				core.ProcedureCreated, nil, col(f.project, "TODO")},
			{"UpdateProcedure", func(*testing.T) error {
				_, err := svc.UpdateProcedure(f.admin, p.ID.String(), core.UpdateProcedureInput{Name: core.Some("Renamed")})
				return err
			}, core.ProcedureUpdated, col(f.project, "TODO"), col(f.project, "TODO")},
			{"UpdateProcedureProject", func(*testing.T) error {
				_, err := svc.UpdateProcedure(f.admin, p.ID.String(), core.UpdateProcedureInput{ProjectID: core.Some(f.other.ID.String())})
				return err
			}, core.ProcedureUpdated, col(f.project, "TODO"), col(f.other, "TODO")},
			{"MoveProcedure", func(*testing.T) error {
				_, err := svc.MoveProcedure(f.admin, p.ID.String(), strp("IN_PROGRESS"), nil, nil)
				return err
			}, core.ProcedureMoved, col(f.other, "TODO"), col(f.other, "IN_PROGRESS")},
			{"AddComment", func(*testing.T) error {
				_, err := svc.AddComment(f.admin, p.ID.String(), "Looks good")
				return err
			}, core.ProcedureCommented, nil, col(f.other, "IN_PROGRESS")},
			{"DeleteProcedure", func(*testing.T) error { return svc.DeleteProcedure(f.admin, p.ID.String()) },
				core.ProcedureDeleted, col(f.other, "IN_PROGRESS"), nil},
		}
		for _, st := range steps {
			t.Run(st.name, func(t *testing.T) {
				if err := st.write(t); err != nil {
					t.Fatalf("%s: %v", st.name, err)
				}
				e, ok := pending(sub)
				if !ok {
					t.Fatal("no event by the time the write returned")
				}
				e = columnsOf(e)
				want := Notification{Change: core.Change{WorkspaceID: f.ws, Kind: st.kind, ProcedureID: p.ID, Before: st.before, After: st.after},
					Version: f.version(t)}
				if !reflect.DeepEqual(e, want) {
					t.Fatalf("event = %s; want %s", show(e), show(want))
				}
				if e, ok := pending(sub); ok {
					t.Fatalf("an extra event: %s", show(e))
				}
			})
		}
		if e, ok := pending(outside); ok {
			t.Fatalf("another workspace's subscriber got %s", show(e))
		}
	})
}

// TestLocalAnnouncerRollback checks that a write that fails delivers
// nothing, including one whose change was announced before its transaction
// rolled back, and that the announcer keeps nothing of it.
func TestLocalAnnouncerRollback(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		h := NewHub(HubOptions{})
		local := NewLocalAnnouncer(h).(*localAnnouncer)
		failing := &failAfter{Announcer: local}
		svc := core.New(db.Client, core.WithAnnouncer(failing))
		f := setup(t, db, svc, "RBK")
		p := f.create(t, "Stays")
		sub := h.Subscribe(f.ws)

		tests := []struct {
			name  string
			write func() error
			code  apperr.Code
		}{
			{"ValidationFailed", func() error {
				_, err := svc.UpdateProcedure(f.admin, p.ID.String(), core.UpdateProcedureInput{Priority: core.Some("URGENT!")})
				return err
			}, apperr.ValidationFailed},
			{"PreconditionFailed", func() error {
				return svc.DeleteProcedure(f.admin, p.ID.String(), core.IfUpdatedAt(p.UpdatedAt.Add(-time.Hour)))
			}, apperr.PreconditionFailed},
			{"FailedAfterAnnouncing", func() error {
				failing.fail.Store(true)
				defer failing.fail.Store(false)
				_, err := svc.MoveProcedure(f.admin, p.ID.String(), strp("COMPLETED"), nil, nil)
				return err
			}, apperr.Internal},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				versionBefore := f.version(t)
				if err := tt.write(); apperr.CodeOf(err) != tt.code {
					t.Fatalf("err = %v; want %s", err, tt.code)
				}
				if e, ok := pending(sub); ok {
					t.Fatalf("a failed write delivered %s", show(e))
				}
				if got := f.version(t); got != versionBefore {
					t.Fatalf("version = %d; want %d (the write should have rolled back)", got, versionBefore)
				}
				local.mu.Lock()
				left := len(local.pending)
				local.mu.Unlock()
				if left != 0 {
					t.Fatalf("%d transactions still pending in the announcer", left)
				}
			})
		}
		t.Run("NextWriteDelivered", func(t *testing.T) {
			if _, err := svc.AddComment(f.admin, p.ID.String(), "after the failures"); err != nil {
				t.Fatal(err)
			}
			e, ok := pending(sub)
			if !ok || e.Kind != core.ProcedureCommented || e.Version != f.version(t) {
				t.Fatalf("got %s (%v); want the comment at version %d", show(e), ok, f.version(t))
			}
		})
	})
}

// TestLocalAnnouncerAccessChanged checks a change that names no procedure.
func TestLocalAnnouncerAccessChanged(t *testing.T) {
	t.Parallel()
	db := dbtest.Open(t, "sqlite")
	h := NewHub(HubOptions{})
	svc := core.New(db.Client, core.WithAnnouncer(NewLocalAnnouncer(h)))
	f := setup(t, db, svc, "ACC")
	m, err := svc.AddMember(f.admin, core.MemberInput{Name: core.Some("Leaver"), Email: core.Some("leaver@example.com"), Role: core.Some(string(viewer.RoleMember))})
	if err != nil {
		t.Fatal(err)
	}
	sub := h.Subscribe(f.ws)
	if _, err := svc.RemoveMember(f.admin, m.ID.String()); err != nil {
		t.Fatal(err)
	}
	want := Notification{Change: core.Change{WorkspaceID: f.ws, Kind: core.AccessChanged}, Version: f.version(t)}
	if e, ok := pending(sub); !ok || !reflect.DeepEqual(columnsOf(e), want) {
		t.Fatalf("got %s (%v); want %s", show(e), ok, show(want))
	}
}

func strp(s string) *string { return &s }

// show renders an event with its columns, for failure messages.
func show(e Notification) string {
	c := func(c *core.Facets) string {
		if c == nil {
			return "nil"
		}
		return c.ProjectID.String()[:8] + "/" + string(c.State)
	}
	id := "nil"
	if e.ProcedureID != uuid.Nil {
		id = e.ProcedureID.String()[:8]
	}
	return "{" + string(e.Kind) + " ws=" + e.WorkspaceID.String()[:8] + " proc=" + id +
		" before=" + c(e.Before) + " after=" + c(e.After) + " v=" + itoa(e.Version) + " refetch=" + btoa(e.Refetch) + "}"
}

// TestLocalAnnouncerOrder writes concurrently in one workspace and checks
// that the events arrive in commit order: versions strictly increasing.
func TestLocalAnnouncerOrder(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		const writers, each = 4, 10
		h := NewHub(HubOptions{Buffer: writers * each})
		svc := core.New(db.Client, core.WithAnnouncer(NewLocalAnnouncer(h)))
		f := setup(t, db, svc, "ORD")
		sub := h.Subscribe(f.ws)
		errs := make(chan error, writers)
		for range writers {
			go func() {
				for range each {
					if _, err := svc.CreateProcedure(f.admin, f.input("Concurrent")); err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		for range writers {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		var last int64
		for range writers * each {
			e, ok := pending(sub)
			if !ok {
				t.Fatalf("only part of the events arrived (last version %d)", last)
			}
			if e.Version <= last {
				t.Fatalf("version %d after %d: events out of commit order", e.Version, last)
			}
			last = e.Version
		}
	})
}
