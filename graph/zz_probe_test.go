package graph_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

func TestZZProbe(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		a := s.NewWorkspace(t, "Acme", "ACME")
		p := createProc(t, s, a.MemberToken, procInput(a, "P1", nil))
		show := func(name string, r *apitest.GQLResponse) {
			t.Logf("%s: status %d code %q data %s errs %+v", name, r.Status, r.Code(), r.Data, r.Errors)
		}
		show("content NUL", s.GraphQL(t, a.MemberToken, `mutation($in: CreateProcedureInput!) { createProcedure(input: $in) { id } }`, obj("in", procInput(a, "x", map[string]any{"content": "a\x00b"}))))
		show("captureId NUL", s.GraphQL(t, a.MemberToken, `mutation($in: CreateProcedureInput!) { createProcedure(input: $in) { id } }`, obj("in", procInput(a, "x", map[string]any{"captureId": "a\x00b"}))))
		show("update content NUL", s.GraphQL(t, a.MemberToken, `mutation($id: ID!) { updateProcedure(id: $id, input: {content: "a\u0000b"}) { id } }`, obj("id", p.ID)))
		show("search NUL", s.GraphQL(t, a.MemberToken, `query($q: String) { procedures(filter: {search: $q}) { totalCount } }`, obj("q", "a\x00")))
		show("proj search NUL", s.GraphQL(t, a.MemberToken, `query($q: String) { projects(search: $q) { totalCount } }`, obj("q", "a\x00")))
		show("token name NUL", s.GraphQL(t, a.AdminToken, `mutation { createToken(input: {name: "a\u0000"}) { secret } }`, nil))
		show("name 500 é", s.GraphQL(t, a.MemberToken, `mutation($in: CreateProcedureInput!) { createProcedure(input: $in) { id } }`, obj("in", procInput(a, strings.Repeat("é", 500), nil))))
		show("cat 200 é", s.GraphQL(t, a.MemberToken, `mutation($n: String!) { createCategory(input: {name: $n}) { id } }`, obj("n", strings.Repeat("é", 200))))
		// REST search invalid utf8
		for _, q := range []string{"/procedures?search=%ff", "/procedures?search=%00", "/projects?search=%ff%fe", "/procedures/%ff", "/procedures?categoryId=%00"} {
			req, _ := http.NewRequest("GET", s.URL+q, nil)
			req.Header.Set("Authorization", "Bearer "+a.MemberToken)
			resp, err := s.HTTP.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var b [300]byte
			n, _ := resp.Body.Read(b[:])
			resp.Body.Close()
			t.Logf("%s: %d %s", q, resp.StatusCode, b[:n])
		}
	})
}
