package core_test

// Shared fixtures and assertions of the core tests: a workspace with an admin,
// a project and a category (setup), helpers that create and read procedures,
// and the error checks (wantCode, wantInvalid).

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
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
