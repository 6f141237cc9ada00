package graph_test

// Projects over GraphQL: createProject, updateProject, project(id),
// deleteProject and the projects list.

import (
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

func TestProjects(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		const create = `mutation($in: CreateProjectInput!) { createProject(input: $in) { ` + projectFields + ` } }`
		const update = `mutation($id: ID!, $in: UpdateProjectInput!) { updateProject(id: $id, input: $in) { ` + projectFields + ` } }`
		const get = `query($id: ID!) { project(id: $id) { ` + projectFields + ` } }`
		const del = `mutation($id: ID!) { deleteProject(id: $id) { success deletedId } }`
		getProject := func(t *testing.T, id string) projectT {
			t.Helper()
			var out struct{ Project *projectT }
			ok(t, s.GraphQL(t, w.ViewToken, get, obj("id", id)), &out)
			if out.Project == nil {
				t.Fatalf("project %s is null", id)
			}
			return *out.Project
		}
		var created projectT
		t.Run("Create", func(t *testing.T) {
			var out struct{ CreateProject projectT }
			ok(t, s.GraphQL(t, w.MemberToken, create, obj("in", obj("name", "  Launch  ", "startedAt", "2026-01-01", "dueAt", "2026-02-01T10:00:00+01:00"))), &out)
			created = out.CreateProject
			if created.Name != "Launch" || deref(created.StartedAt) != "2026-01-01T00:00:00.000Z" || deref(created.DueAt) != "2026-02-01T09:00:00.000Z" || created.WorkspaceID != w.ID {
				t.Fatalf("got %s", dump(created))
			}
			if got := getProject(t, created.ID); !same(got, created) {
				t.Fatalf("read back %s, want %s", dump(got), dump(created))
			}
		})
		t.Run("CreateWithoutDates", func(t *testing.T) {
			var out struct{ CreateProject projectT }
			ok(t, s.GraphQL(t, w.MemberToken, create, obj("in", obj("name", "Undated"))), &out)
			if out.CreateProject.StartedAt != nil || out.CreateProject.DueAt != nil {
				t.Fatalf("got %s", dump(out.CreateProject))
			}
		})
		for _, tc := range []struct {
			name   string
			in     map[string]any
			fields []string
		}{
			{"ErrNameRequired", obj("name", " "), []string{"name"}},
			{"ErrNameMissing", obj("startedAt", "2026-01-01"), []string{"name"}},
			{"ErrNameTooLong", obj("name", strings.Repeat("p", core.MaxTitleLen+1)), []string{"name"}},
			{"ErrDueAtBeforeStartedAt", obj("name", "x", "startedAt", "2026-02-01", "dueAt", "2026-01-31"), []string{"dueAt"}},
			{"ErrStartedAtInvalid", obj("name", "x", "startedAt", "soon"), []string{"startedAt"}},
		} {
			t.Run("Create"+tc.name, func(t *testing.T) {
				before := listNamed(t, s, w.ViewToken, "projects", nil).TotalCount
				wantError(t, s.GraphQL(t, w.MemberToken, create, obj("in", tc.in)), "validation_failed", tc.fields...)
				if after := listNamed(t, s, w.ViewToken, "projects", nil).TotalCount; after != before {
					t.Fatalf("a refused create stored a project")
				}
			})
		}
		t.Run("UpdateOnlyGivenFields", func(t *testing.T) {
			var out struct{ UpdateProject projectT }
			ok(t, s.GraphQL(t, w.MemberToken, update, obj("id", created.ID, "in", obj("name", "Launch v2"))), &out)
			want := created
			want.Name, want.UpdatedAt = "Launch v2", out.UpdateProject.UpdatedAt
			if !same(out.UpdateProject, want) {
				t.Fatalf("got %s, want %s", dump(out.UpdateProject), dump(want))
			}
			created = out.UpdateProject
		})
		t.Run("UpdateNullClearsDates", func(t *testing.T) {
			var out struct{ UpdateProject projectT }
			ok(t, s.GraphQL(t, w.MemberToken, update, obj("id", created.ID, "in", obj("startedAt", nil))), &out)
			if out.UpdateProject.StartedAt != nil || deref(out.UpdateProject.DueAt) != deref(created.DueAt) || out.UpdateProject.Name != created.Name {
				t.Fatalf("got %s", dump(out.UpdateProject))
			}
			ok(t, s.GraphQL(t, w.MemberToken, update, obj("id", created.ID, "in", obj("dueAt", nil))), &out)
			if got := getProject(t, created.ID); got.StartedAt != nil || got.DueAt != nil {
				t.Fatalf("got %s", dump(got))
			}
			ok(t, s.GraphQL(t, w.MemberToken, update, obj("id", created.ID, "in", obj("startedAt", "2026-05-01", "dueAt", "2026-06-01"))), &out)
			created = out.UpdateProject
		})
		for _, tc := range []struct {
			name   string
			in     map[string]any
			fields []string
		}{
			{"ErrNameNull", obj("name", nil), []string{"name"}},
			{"ErrNameEmpty", obj("name", ""), []string{"name"}},
			{"ErrDueAtBeforeStoredStartedAt", obj("dueAt", "2026-04-01"), []string{"dueAt"}},
			{"ErrStartedAtAfterStoredDueAt", obj("startedAt", "2026-07-01"), []string{"dueAt"}},
			{"ErrDueAtInvalid", obj("dueAt", "2026-02-30"), []string{"dueAt"}},
		} {
			t.Run("Update"+tc.name, func(t *testing.T) {
				wantError(t, s.GraphQL(t, w.MemberToken, update, obj("id", created.ID, "in", tc.in)), "validation_failed", tc.fields...)
				if got := getProject(t, created.ID); !same(got, created) {
					t.Fatalf("a refused update changed the project: %s", dump(got))
				}
			})
		}
		t.Run("UpdateErrNotFound", func(t *testing.T) {
			wantError(t, s.GraphQL(t, w.MemberToken, update, obj("id", w.CategoryID, "in", obj("name", "x"))), "not_found")
		})
		for _, tc := range []struct{ name, id string }{
			{"ErrUnknownId", "01900000-0000-7000-8000-000000000004"},
			{"ErrIdOfOtherKind", w.CategoryID},
			{"ErrMalformedId", "p-1"},
		} {
			t.Run("Get"+tc.name, func(t *testing.T) {
				r := s.GraphQL(t, w.ViewToken, get, obj("id", tc.id))
				wantError(t, r, "not_found")
				if string(r.Data) != `{"project":null}` {
					t.Fatalf("data %s", r.Data)
				}
			})
		}

		t.Run("DeleteWithProceduresConflicts", func(t *testing.T) {
			p := createProc(t, s, w.MemberToken, procInput(w, "Blocks delete", map[string]any{"projectId": created.ID}))
			addComment(t, s, w.MemberToken, p.ID, "still here")
			wantError(t, s.GraphQL(t, w.MemberToken, del, obj("id", created.ID)), "conflict")
			if got := getProject(t, created.ID); !same(got, created) {
				t.Fatalf("project changed: %s", dump(got))
			}
			if got := getProc(t, s, w.ViewToken, p.ID); got.ProjectID != created.ID || len(got.Comments) != 1 {
				t.Fatalf("procedure changed: %s", dump(got))
			}
			// Once empty, it deletes.
			ok(t, s.GraphQL(t, w.MemberToken, `mutation($id: ID!) { deleteProcedure(id: $id) { success } }`, obj("id", p.ID)), &struct{}{})
			var out struct {
				DeleteProject struct {
					Success   bool
					DeletedID string
				}
			}
			ok(t, s.GraphQL(t, w.MemberToken, del, obj("id", created.ID)), &out)
			if !out.DeleteProject.Success || out.DeleteProject.DeletedID != created.ID {
				t.Fatalf("got %+v", out.DeleteProject)
			}
			wantError(t, s.GraphQL(t, w.ViewToken, get, obj("id", created.ID)), "not_found")
		})
		t.Run("DeleteEmpty", func(t *testing.T) {
			id := createProject(t, s, w.MemberToken, "Empty")
			ok(t, s.GraphQL(t, w.MemberToken, del, obj("id", id)), &struct{}{})
			wantError(t, s.GraphQL(t, w.ViewToken, get, obj("id", id)), "not_found")
			wantError(t, s.GraphQL(t, w.MemberToken, del, obj("id", id)), "not_found")
		})
		t.Run("DeleteErrMalformedId", func(t *testing.T) {
			wantError(t, s.GraphQL(t, w.MemberToken, del, obj("id", "nope")), "not_found")
		})

		for _, n := range []string{"Bravo", "Charlie", "Delta", "Delta", "Echo"} {
			createProject(t, s, w.MemberToken, n)
		}
		testNamedList(t, s, w.ViewToken, "projects", nameContains, "DELTA", "ch", " acme ")
	})
}
