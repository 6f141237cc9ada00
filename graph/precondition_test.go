package graph_test

import (
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// TestIfUpdatedAt: a write given the updatedAt the client read goes through
// only while the record still has it; otherwise precondition_failed, and
// nothing changes.
func TestIfUpdatedAt(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Occ", "OCC")
		var c struct {
			CreateCategory struct{ ID, UpdatedAt string }
		}
		s.GraphQL(t, w.MemberToken, `mutation { createCategory(input: {name: "First"}) { id updatedAt } }`, nil).Decode(t, &c)
		read := c.CreateCategory.UpdatedAt
		const update = `mutation($id: ID!, $name: String, $at: Time) { updateCategory(id: $id, input: {name: $name}, ifUpdatedAt: $at) { name updatedAt } }`
		var u struct {
			UpdateCategory struct{ Name, UpdatedAt string }
		}
		s.GraphQL(t, w.MemberToken, update, map[string]any{"id": c.CreateCategory.ID, "name": "Second", "at": read}).Decode(t, &u)
		stale := s.GraphQL(t, w.MemberToken, update, map[string]any{"id": c.CreateCategory.ID, "name": "Lost", "at": read})
		if stale.Code() != "precondition_failed" {
			t.Fatalf("stale ifUpdatedAt: %+v", stale.Errors)
		}
		del := s.GraphQL(t, w.MemberToken, `mutation($id: ID!, $at: Time) { deleteCategory(id: $id, ifUpdatedAt: $at) { success } }`,
			map[string]any{"id": c.CreateCategory.ID, "at": read})
		if del.Code() != "precondition_failed" {
			t.Fatalf("stale delete: %+v", del.Errors)
		}
		var got struct{ Category struct{ Name string } }
		s.GraphQL(t, w.ViewToken, `query($id: ID!) { category(id: $id) { name } }`, map[string]any{"id": c.CreateCategory.ID}).Decode(t, &got)
		if got.Category.Name != "Second" {
			t.Fatalf("a refused write changed the category: %q", got.Category.Name)
		}
		s.GraphQL(t, w.MemberToken, `mutation($id: ID!, $at: Time) { deleteCategory(id: $id, ifUpdatedAt: $at) { success } }`,
			map[string]any{"id": c.CreateCategory.ID, "at": u.UpdateCategory.UpdatedAt}).Decode(t, &struct{}{})
	})
}
