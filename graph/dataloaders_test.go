package graph_test

// The per-request dataloaders: in a mutation operation, a later root field
// sees what earlier root fields wrote. (How each root field commits is in
// api_mutation_fields_test.go.)

import (
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// The per-request dataloaders cache edges for the whole request. A mutation
// operation runs its root fields one after the other, so a later root
// field's procedure was rendered with the category and comments loaded
// before an earlier root field changed them: a stale response.
func TestMutationRootFieldsSeeEarlierWrites(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		p := createProc(t, s, w.MemberToken, procInput(w, "P1", nil))
		var out struct {
			M1, M4 struct {
				Category struct{ Name string }
				Comments nodes[struct{ Text string }]
				Doer     *struct{ Name string }
			}
		}
		ok(t, s.GraphQL(t, w.AdminToken, `mutation($id: ID!, $cat: ID!, $m: ID!) {
			m1: updateProcedure(id: $id, input: {priority: LOW}) { category { name } comments { nodes { text } } doer { name } }
			m2: updateCategory(id: $cat, input: {name: "Renamed"}) { name }
			m3: addComment(input: {procedureId: $id, text: "hello"}) { id }
			m5: updateMember(id: $m, input: {name: "New Name"}) { id }
			m4: updateProcedure(id: $id, input: {priority: HIGH}) { category { name } comments { nodes { text } } doer { name } }
		}`, obj("id", p.ID, "cat", w.CategoryID, "m", w.MemberID)), &out)
		if out.M1.Category.Name != "Acme category" || len(out.M1.Comments) != 0 {
			t.Fatalf("m1 = %+v", out.M1)
		}
		if out.M4.Category.Name != "Renamed" {
			t.Errorf("m4 category = %q after m2 renamed it to Renamed", out.M4.Category.Name)
		}
		if len(out.M4.Comments) != 1 || out.M4.Comments[0].Text != "hello" {
			t.Errorf("m4 comments = %+v after m3 added one", out.M4.Comments)
		}
		if out.M4.Doer == nil || out.M4.Doer.Name != "New Name" {
			t.Errorf("m4 doer = %+v after m5 renamed the member", out.M4.Doer)
		}
		// And the response read afterwards agrees.
		got := getProc(t, s, w.AdminToken, p.ID)
		if got.Category == nil || got.Category.Name != "Renamed" || len(got.Comments) != 1 {
			t.Errorf("procedure = %s", dump(got))
		}
	})
}
