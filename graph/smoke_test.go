package graph_test

import (
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

func TestSmokeCreateAndList(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		res := s.GraphQL(t, w.MemberToken, `mutation($in: CreateProcedureInput!) { createProcedure(input: $in) { id shortId dueAt project { name } } }`, map[string]any{
			"in": map[string]any{"name": "First", "priority": "HIGH", "state": "TODO", "dueAt": "2026-12-01T10:00:00+02:00",
				"categoryId": w.CategoryID, "doerId": w.MemberID, "projectId": w.ProjectID, "content": map[string]any{"b": 1, "a": []int{1, 2}}},
		})
		var out struct {
			CreateProcedure struct {
				ID, ShortID, DueAt string
			}
		}
		res.Decode(t, &out)
		if out.CreateProcedure.ShortID != "ACME-1" || out.CreateProcedure.DueAt != "2026-12-01T08:00:00.000Z" {
			t.Fatalf("got %+v", out)
		}
		list := s.GraphQL(t, w.ViewToken, `{ procedures { totalCount nodes { shortId content category { name } doer { name } comments { id } } } }`, nil)
		t.Logf("%s", list.Data)
		if list.Code() != "" {
			t.Fatal(list.Errors)
		}
	})
}
