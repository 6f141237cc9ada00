package graph_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// The categories, members and projects read-only requests share
// (internal/loader, shared.go) outlive writes of procedures and comments,
// which change none of them: a page read after such a write names them
// without a statement of its own. A write of a category, member or
// project is never carried over: the next page reads them again and shows
// the change.
func TestSharedRecordsOutliveProcedureWrites(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		f := newNestFixture(t, s, db)
		token := f.w.ViewToken
		// page reads a page of first procedures with their named edges
		// (first varies, so that no response is served from the response
		// cache) and returns how many of its statements read categories,
		// members or projects, and the names it shows.
		page := func(t *testing.T, first int) (int, string) {
			t.Helper()
			// A first request of the token within the minute records its
			// use, a write: this one is not measured.
			var out struct {
				Procedures struct {
					Nodes []struct {
						Category, Project *struct{ Name string }
						Doer              *struct{ Name, Role string }
					}
				}
			}
			q := fmt.Sprintf(`{ procedures(first: %d) { nodes { category { name } doer { name role } project { name } } } }`, first)
			var mu sync.Mutex
			n := 0
			db.Record(func(st database.Statement) {
				if readsNamed(st.Query) {
					mu.Lock()
					n++
					mu.Unlock()
				}
			})
			ok(t, s.GraphQL(t, token, q, nil), &out)
			db.Record(nil)
			var names []string
			for _, p := range out.Procedures.Nodes {
				for _, r := range []*struct{ Name string }{p.Category, p.Project} {
					if r != nil {
						names = append(names, r.Name)
					}
				}
				if p.Doer != nil {
					names = append(names, p.Doer.Name, p.Doer.Role)
				}
			}
			return n, strings.Join(names, ",")
		}
		page(t, 1) // the token's use recorded
		if n, _ := page(t, 3); n != 1 {
			t.Fatalf("the first page read the named records in %d statements, want 1: nothing is tested", n)
		}
		if n, _ := page(t, 4); n != 0 {
			t.Fatalf("a page at the same version read the named records in %d statements, want none", n)
		}
		// Writes of a procedure and of a comment: the next page reads no
		// named record.
		var out map[string]any
		ok(t, s.GraphQL(t, f.w.MemberToken, `mutation($id: ID!) { updateProcedure(id: $id, input: {priority: HIGH}) { id } }`, obj("id", f.procs[0].ID)), &out)
		if n, _ := page(t, 5); n != 0 {
			t.Fatalf("a page after a procedure's write read the named records in %d statements, want none", n)
		}
		addComment(t, s, f.w.MemberToken, f.procs[1].ID, "a comment")
		if n, _ := page(t, 6); n != 0 {
			t.Fatalf("a page after a comment read the named records in %d statements, want none", n)
		}
		// Writes of the records themselves, and a role's change (which
		// is announced, as the access it changes): each read again, and
		// shown.
		for i, w := range []struct {
			mutation string
			vars     map[string]any
			shown    string
		}{
			{`mutation($id: ID!) { updateCategory(id: $id, input: {name: "renamed 0"}) { id } }`, obj("id", f.parent["Category"][12]), "renamed 0"},
			{`mutation($id: ID!) { updateMember(id: $id, input: {name: "renamed 1"}) { id } }`, obj("id", f.parent["Member"][12]), "renamed 1"},
			{`mutation($id: ID!) { updateProject(id: $id, input: {name: "renamed 2"}) { id } }`, obj("id", f.parent["Project"][12]), "renamed 2"},
			{`mutation($id: ID!) { updateMember(id: $id, input: {role: VIEWER}) { id } }`, obj("id", f.parent["Member"][12]), "VIEWER"},
		} {
			name := w.shown
			ok(t, s.GraphQL(t, f.w.AdminToken, w.mutation, w.vars), &out)
			n, names := page(t, 20+i)
			if n != 1 {
				t.Fatalf("a page after rename %d read the named records in %d statements, want 1", i, n)
			}
			if !strings.Contains(names, name) {
				t.Fatalf("a page after rename %d shows %s, without %q", i, names, name)
			}
		}
	})
}

// readsNamed reports whether query reads categories, members or projects
// (other than the token lookup's member).
func readsNamed(query string) bool {
	if strings.Contains(query, "`tokens`") || strings.Contains(query, `"tokens"`) {
		return false
	}
	for _, table := range []string{"categories", "members", "projects"} {
		if strings.Contains(query, "`"+table+"`") || strings.Contains(query, `"`+table+`"`) {
			return true
		}
	}
	return false
}
