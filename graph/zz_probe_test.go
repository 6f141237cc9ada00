package graph_test

import (
	"encoding/json"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/dbtest"
)

func TestZZProbe(t *testing.T) {
	db := dbtest.Open(t, "sqlite")
	s := apitest.Start(t, db)
	w := s.NewWorkspace(t, "Acme", "ACME")
	show := func(name string, r *apitest.GQLResponse) {
		b, _ := json.Marshal(r.Errors)
		t.Logf("%s: status=%d data=%s errors=%s", name, r.Status, r.Data, b)
	}
	in := func(over map[string]any) map[string]any {
		m := map[string]any{"name": "First", "priority": "HIGH", "state": "TODO", "dueAt": "2026-12-01",
			"categoryId": w.CategoryID, "doerId": w.MemberID, "projectId": w.ProjectID}
		for k, v := range over {
			if v == nil { delete(m, k) } else { m[k] = v }
		}
		return m
	}
	q := `mutation($in: CreateProcedureInput!) { createProcedure(input: $in) { id shortId } }`
	show("badprio", s.GraphQL(t, w.MemberToken, q, map[string]any{"in": in(map[string]any{"priority": "URGENT"})}))
	show("baddue", s.GraphQL(t, w.MemberToken, q, map[string]any{"in": in(map[string]any{"dueAt": "tomorrow"})}))
	show("nouuid", s.GraphQL(t, w.MemberToken, q, map[string]any{"in": in(map[string]any{"categoryId": "abc"})}))
	show("noname", s.GraphQL(t, w.MemberToken, q, map[string]any{"in": in(map[string]any{"name": nil})}))
	show("emptyname", s.GraphQL(t, w.MemberToken, q, map[string]any{"in": in(map[string]any{"name": "  "})}))
	show("inline bad prio", s.GraphQL(t, w.MemberToken, `mutation { createProcedure(input: {name:"x", priority: URGENT, state: TODO, dueAt:"2026-01-01", categoryId:"`+w.CategoryID+`", doerId:"`+w.MemberID+`", projectId:"`+w.ProjectID+`"}) { id } }`, nil))
	show("inline bad due", s.GraphQL(t, w.MemberToken, `mutation { createProcedure(input: {name:"x", priority: LOW, state: TODO, dueAt:"nope", categoryId:"`+w.CategoryID+`", doerId:"`+w.MemberID+`", projectId:"`+w.ProjectID+`"}) { id } }`, nil))
	show("upd name null", s.GraphQL(t, w.MemberToken, `mutation($id: ID!) { updateProcedure(id: $id, input: {name: null}) { id } }`, map[string]any{"id": "ACME-1"}))
	show("nodes", s.GraphQL(t, w.MemberToken, `{ nodes(ids: ["x", "`+w.ProjectID+`"]) { id __typename } }`, nil))
	show("syntax", s.GraphQL(t, w.MemberToken, `{ viewer { `, nil))
	show("unknown", s.GraphQL(t, w.MemberToken, `{ viewer { nope } }`, nil))
	show("notfound", s.GraphQL(t, w.MemberToken, `{ procedure(id: "ACME-99") { id } }`, nil))
	show("proj notfound", s.GraphQL(t, w.MemberToken, `{ project(id: "`+w.CategoryID+`") { id } }`, nil))
}
