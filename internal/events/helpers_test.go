package events

// Shared fixtures of the events tests: a workspace with an admin, two
// projects and a category behind a core.Service with a given announcer,
// an announcer that fails after announcing (to roll a write back once its
// change was announced), and receive helpers.

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/viewer"
)

// fixture is one workspace with an admin, two projects and a category.
type fixture struct {
	db       *database.DB
	svc      *core.Service
	ws       uuid.UUID
	admin    context.Context
	adminID  uuid.UUID
	project  *ent.Project
	other    *ent.Project
	category *ent.Category
}

func setup(t *testing.T, db *database.DB, svc *core.Service, key string) *fixture {
	t.Helper()
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
	f := &fixture{db: db, svc: svc, ws: boot.Workspace.ID, admin: admin, adminID: boot.Admin.ID}
	for _, p := range []**ent.Project{&f.project, &f.other} {
		if *p, err = svc.CreateProject(admin, core.ProjectInput{Name: core.Some("Project " + uuid.NewString()[:8])}); err != nil {
			t.Fatalf("CreateProject: %v", err)
		}
	}
	if f.category, err = svc.CreateCategory(admin, "Category "+key); err != nil {
		t.Fatalf("CreateCategory: %v", err)
	}
	return f
}

// input is a valid new procedure in f.project's TODO column.
func (f *fixture) input(name string) core.CreateProcedureInput {
	due := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	return core.CreateProcedureInput{
		Name: name, Priority: "MEDIUM", State: "TODO", DueAt: &due,
		CategoryID: f.category.ID.String(), DoerID: f.adminID.String(), ProjectID: f.project.ID.String(),
	}
}

func (f *fixture) create(t *testing.T, name string) *ent.Procedure {
	t.Helper()
	p, err := f.svc.CreateProcedure(f.admin, f.input(name))
	if err != nil {
		t.Fatalf("CreateProcedure %q: %v", name, err)
	}
	return p
}

// version reads the workspace's stored version.
func (f *fixture) version(t *testing.T) int64 {
	t.Helper()
	ws, err := f.db.Client.Workspace.Get(viewer.System(context.Background()), f.ws)
	if err != nil {
		t.Fatalf("read workspace: %v", err)
	}
	return ws.Version
}

// errInjected is what failAfter returns.
var errInjected = errors.New("injected failure after announcing")

// failAfter announces through the real announcer, then fails when fail is
// set: the write rolls back although its change was announced in it.
type failAfter struct {
	core.Announcer
	fail atomic.Bool
}

// statementFailAfter is failAfter over a core.StatementAnnouncer: the
// announcements field updates make from their own statement pass through
// unchanged.
type statementFailAfter struct{ *failAfter }

func (a statementFailAfter) Notification(c core.Change) (func(*sql.Builder, string), func(*ent.Tx, int64), error) {
	return a.Announcer.(core.StatementAnnouncer).Notification(c)
}

func (a *failAfter) Announce(ctx context.Context, tx *ent.Tx, c core.Change) error {
	if err := a.Announcer.Announce(ctx, tx, c); err != nil {
		return err
	}
	if a.fail.Load() {
		return errInjected
	}
	return nil
}

// receive returns s's next event, failing t if none comes within d or s
// ends. d is a guard against a hang, not a synchronisation.
func receive(t *testing.T, s *Subscription, d time.Duration) Notification {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case e, ok := <-s.Events():
		if !ok {
			t.Fatalf("subscription ended: %v", s.Err())
		}
		return e
	case <-timer.C:
		t.Fatalf("no event within %s", d)
	}
	return Notification{}
}

// pending returns s's next event if one is buffered already.
func pending(s *Subscription) (Notification, bool) {
	select {
	case e, ok := <-s.Events():
		return e, ok
	default:
		return Notification{}, false
	}
}

// col is the column (p, state), for comparisons with columnsOf.
func col(p *ent.Project, state string) *core.Facets {
	return &core.Facets{ProjectID: p.ID, State: procedure.State(state)}
}

// columnsOf is e with its facets cut to their column (project and state),
// which is what these tests follow; TestDecode round-trips whole facets,
// and internal/core's footprint tests what they mean.
func columnsOf(e Notification) Notification {
	cut := func(f *core.Facets) *core.Facets {
		if f == nil {
			return nil
		}
		return &core.Facets{ProjectID: f.ProjectID, State: f.State}
	}
	e.Before, e.After = cut(e.Before), cut(e.After)
	e.Reworded, e.Renamed = false, false
	// The hub's numbering is checked on its own (TestHubNumbersEvents).
	e.Seq = 0
	return e
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func btoa(b bool) string { return strconv.FormatBool(b) }
