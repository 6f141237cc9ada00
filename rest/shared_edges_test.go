package rest_test

import (
	"strconv"
	"testing"

	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// GET /procedures takes categories, members and projects from what earlier
// reads of the workspace's version loaded (internal/loader, shared.go). An
// edit of any of them is a write, which moves the workspace to a new
// version: the next list shows it. Another workspace's lists never show
// this one's records.
func TestListSeesEditedEdges(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		other := e.srv.NewWorkspace(t, "Other", "OTH")
		p := e.createProcedure(t, nil)
		limit := 50
		// list lists as the admin under a URL not used before, so that no
		// response cache answers, and returns the procedure's edges.
		list := func(t *testing.T, token string) (cat, doer, proj map[string]any, statements int64) {
			t.Helper()
			limit--
			before := db.Statements()
			r := e.do(t, "GET", "/procedures?limit="+strconv.Itoa(limit), token, nil)
			statements = db.Statements() - before
			if h := r.Header.Get("X-Cache"); h != "" {
				t.Fatalf("X-Cache %q: the list must be computed", h)
			}
			items, _ := wantList(t, r, checkProcedure)
			for _, it := range items {
				if it["id"] == p["id"] {
					return asObject(t, it["category"], "category"), asObject(t, it["doer"], "doer"), asObject(t, it["project"], "project"), statements
				}
			}
			if token == e.ws.AdminToken {
				t.Fatalf("procedure %v not listed", p["id"])
			}
			return nil, nil, nil, statements
		}
		list(t, e.ws.AdminToken) // the token's first use writes (lastUsedAt)
		list(t, e.ws.AdminToken) // the first read of the new version
		// No statement of comments: the page's one procedure has none, as
		// its row, read with its count, says (loader.PrimeListed).
		if _, _, _, n := list(t, e.ws.AdminToken); n != 2 {
			t.Fatalf("a list at a version already read cost %d statements, want 2 (token, page)", n)
		}

		wantOK(t, e.do(t, "PUT", "/categories/"+e.ws.CategoryID, e.ws.MemberToken, map[string]any{"name": "Renamed category"}))
		if cat, _, _, _ := list(t, e.ws.AdminToken); cat["name"] != "Renamed category" {
			t.Fatalf("category after its edit: %v", cat)
		}
		wantOK(t, e.do(t, "PUT", "/projects/"+e.ws.ProjectID, e.ws.MemberToken, map[string]any{"name": "Renamed project"}))
		if _, _, proj, _ := list(t, e.ws.AdminToken); proj["name"] != "Renamed project" {
			t.Fatalf("project after its edit: %v", proj)
		}
		res := e.srv.GraphQL(t, e.ws.AdminToken, `mutation($id: ID!) { updateMember(id: $id, input: {name: "Renamed member"}) { id } }`,
			map[string]any{"id": e.ws.MemberID})
		if len(res.Errors) > 0 {
			t.Fatalf("updateMember: %+v", res.Errors)
		}
		cat, doer, proj, _ := list(t, e.ws.AdminToken)
		if doer["name"] != "Renamed member" || cat["name"] != "Renamed category" || proj["name"] != "Renamed project" {
			t.Fatalf("after the member's edit: %v, %v, %v", cat, doer, proj)
		}

		// The other workspace, read as often, lists none of it.
		for range 3 {
			if cat, _, _, _ := list(t, other.AdminToken); cat != nil {
				t.Fatalf("another workspace listed %v", cat)
			}
		}
	})
}
