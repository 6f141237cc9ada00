package graph_test

// Categories over GraphQL: createCategory, updateCategory, category(id),
// deleteCategory (which uncategorises its procedures) and the categories
// list.

import (
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

func TestCategories(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		const create = `mutation($in: CreateCategoryInput!) { createCategory(input: $in) { ` + categoryFields + ` } }`
		const update = `mutation($id: ID!, $in: UpdateCategoryInput!) { updateCategory(id: $id, input: $in) { ` + categoryFields + ` } }`
		const get = `query($id: ID!) { category(id: $id) { ` + categoryFields + ` } }`
		const del = `mutation($id: ID!) { deleteCategory(id: $id) { success deletedId } }`
		getCategory := func(t *testing.T, id string) categoryT {
			t.Helper()
			var out struct{ Category *categoryT }
			ok(t, s.GraphQL(t, w.ViewToken, get, obj("id", id)), &out)
			if out.Category == nil {
				t.Fatalf("category %s is null", id)
			}
			return *out.Category
		}
		var c categoryT
		t.Run("Create", func(t *testing.T) {
			var out struct{ CreateCategory categoryT }
			ok(t, s.GraphQL(t, w.MemberToken, create, obj("in", obj("name", " Ops "))), &out)
			c = out.CreateCategory
			if c.Name != "Ops" || c.WorkspaceID != w.ID {
				t.Fatalf("got %s", dump(c))
			}
			if got := getCategory(t, c.ID); !same(got, c) {
				t.Fatalf("read back %s", dump(got))
			}
		})
		for _, tc := range []struct {
			name string
			in   map[string]any
		}{
			{"ErrNameRequired", obj("name", "")},
			{"ErrNameMissing", obj()},
			{"ErrNameTooLong", obj("name", strings.Repeat("c", core.MaxTitleLen+1))},
		} {
			t.Run("Create"+tc.name, func(t *testing.T) {
				wantError(t, s.GraphQL(t, w.MemberToken, create, obj("in", tc.in)), "validation_failed", "name")
			})
		}
		t.Run("Update", func(t *testing.T) {
			var out struct{ UpdateCategory categoryT }
			ok(t, s.GraphQL(t, w.MemberToken, update, obj("id", c.ID, "in", obj("name", "Operations"))), &out)
			if out.UpdateCategory.Name != "Operations" || out.UpdateCategory.ID != c.ID || out.UpdateCategory.CreatedAt != c.CreatedAt {
				t.Fatalf("got %s", dump(out.UpdateCategory))
			}
			c = out.UpdateCategory
			ok(t, s.GraphQL(t, w.MemberToken, update, obj("id", c.ID, "in", obj())), &out)
			if !same(out.UpdateCategory, c) {
				t.Fatalf("an empty update changed %s to %s", dump(c), dump(out.UpdateCategory))
			}
		})
		for _, tc := range []struct {
			name string
			in   map[string]any
		}{
			{"ErrNameNull", obj("name", nil)},
			{"ErrNameEmpty", obj("name", "  ")},
			{"ErrNameTooLong", obj("name", strings.Repeat("c", core.MaxTitleLen+1))},
		} {
			t.Run("Update"+tc.name, func(t *testing.T) {
				wantError(t, s.GraphQL(t, w.MemberToken, update, obj("id", c.ID, "in", tc.in)), "validation_failed", "name")
				if got := getCategory(t, c.ID); !same(got, c) {
					t.Fatalf("changed: %s", dump(got))
				}
			})
		}
		t.Run("UpdateErrNotFound", func(t *testing.T) {
			wantError(t, s.GraphQL(t, w.MemberToken, update, obj("id", w.ProjectID, "in", obj("name", "x"))), "not_found")
		})
		t.Run("GetErrNotFound", func(t *testing.T) {
			r := s.GraphQL(t, w.ViewToken, get, obj("id", "01900000-0000-7000-8000-000000000005"))
			wantError(t, r, "not_found")
			if string(r.Data) != `{"category":null}` {
				t.Fatalf("data %s", r.Data)
			}
		})
		t.Run("DeleteUncategorisesProcedures", func(t *testing.T) {
			p1 := createProc(t, s, w.MemberToken, procInput(w, "In Ops 1", map[string]any{"categoryId": c.ID}))
			p2 := createProc(t, s, w.MemberToken, procInput(w, "In Ops 2", map[string]any{"categoryId": c.ID}))
			other := createProc(t, s, w.MemberToken, procInput(w, "Elsewhere", nil))
			var out struct {
				DeleteCategory struct {
					Success   bool
					DeletedID string
				}
			}
			ok(t, s.GraphQL(t, w.MemberToken, del, obj("id", c.ID)), &out)
			if !out.DeleteCategory.Success || out.DeleteCategory.DeletedID != c.ID {
				t.Fatalf("got %+v", out.DeleteCategory)
			}
			for _, p := range []procT{p1, p2} {
				got := getProc(t, s, w.ViewToken, p.ID)
				if got.CategoryID != nil || got.Category != nil {
					t.Fatalf("%s still has category %s", got.ShortID, deref(got.CategoryID))
				}
				if got.Name != p.Name || got.ProjectID != p.ProjectID {
					t.Fatalf("%s changed beyond its category: %s", got.ShortID, dump(got))
				}
			}
			if got := getProc(t, s, w.ViewToken, other.ID); deref(got.CategoryID) != w.CategoryID {
				t.Fatalf("a procedure of another category lost it")
			}
			wantError(t, s.GraphQL(t, w.ViewToken, get, obj("id", c.ID)), "not_found")
			wantError(t, s.GraphQL(t, w.MemberToken, del, obj("id", c.ID)), "not_found")
			// An uncategorised procedure can be categorised again.
			var upd struct{ UpdateProcedure procT }
			ok(t, s.GraphQL(t, w.MemberToken, updateProcMutation, obj("id", p1.ID, "in", obj("categoryId", w.CategoryID))), &upd)
			if deref(upd.UpdateProcedure.CategoryID) != w.CategoryID {
				t.Fatalf("got %s", dump(upd.UpdateProcedure))
			}
		})

		for _, n := range []string{"Bravo", "Charlie", "Delta", "Delta", "Echo"} {
			createCategory(t, s, w.MemberToken, n)
		}
		testNamedList(t, s, w.ViewToken, "categories", nameContains, "delta", "CH", "category")
	})
}
