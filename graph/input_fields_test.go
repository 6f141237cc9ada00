package graph_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// TestRefusedLiteralNamesItsField: a value written in the document that
// validation refuses (a wrong enum value, a wrong type) is answered 400
// validation_failed with extensions.fields naming its argument or input
// field, the innermost one, as the same value in a variable is.
func TestRefusedLiteralNamesItsField(t *testing.T) {
	s := apitest.Start(t, dbtest.Open(t, "sqlite"))
	w := s.NewWorkspace(t, "Literals", "LIT")
	create := func(field, value string) string {
		in := map[string]string{"name": `"n"`, "priority": "MEDIUM", "state": "TODO", "dueAt": `"2026-06-01"`,
			"categoryId": quote(w.CategoryID), "doerId": quote(w.MemberID), "projectId": quote(w.ProjectID)}
		in[field] = value
		return fmt.Sprintf(`mutation { createProcedure(input: {name: %s, priority: %s, state: %s, dueAt: %s, categoryId: %s, doerId: %s, projectId: %s}) { id } }`,
			in["name"], in["priority"], in["state"], in["dueAt"], in["categoryId"], in["doerId"], in["projectId"])
	}
	for _, tc := range []struct{ name, query, field string }{
		{"EnumInInput", create("priority", "URGENT"), "priority"},
		{"EnumInLowerCase", create("state", "todo"), "state"},
		{"StringForEnum", create("priority", `"HIGH"`), "priority"},
		{"NumberForString", create("name", "5"), "name"},
		{"NestedInputField", `{ procedures(orderBy: {field: NAMEX}) { totalCount } }`, "field"},
		{"Argument", `{ procedures(first: "ten") { totalCount } }`, "first"},
		{"ListElement", `{ nodes(ids: ["a", 5.5]) { id } }`, "ids"},
		{"DirectiveArgument", `{ viewer { id @include(if: "yes") } }`, "if"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.GraphQL(t, w.MemberToken, tc.query, nil)
			if r.Status != http.StatusBadRequest {
				t.Fatalf("status %d: %+v", r.Status, r.Errors)
			}
			wantError(t, r, "validation_failed", tc.field)
		})
	}
}
