package graph_test

// Timestamps outside the accepted range over GraphQL: refused naming the
// field with the range, as REST refuses them (rest/hostile_test.go), never
// reported as missing.

import (
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// wantRangeError asserts a validation_failed error naming field whose
// message gives the accepted range.
func wantRangeError(t *testing.T, r *apitest.GQLResponse, field string) {
	t.Helper()
	wantError(t, r, "validation_failed", field)
	e := r.Errors[0]
	for _, msg := range []string{e.Message, e.Extensions.Fields[0].Message} {
		if strings.Contains(msg, "required") || !strings.Contains(msg, "1970-01-01") || !strings.Contains(msg, "9999-12-31") {
			t.Fatalf("message %q should give the accepted range, not call the field missing", msg)
		}
	}
}

func TestTimestampRange(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		p := createProc(t, s, w.MemberToken, procInput(w, "Target", nil))
		projectID := createProject(t, s, w.MemberToken, "Target project")

		t.Run("create, variables", func(t *testing.T) {
			for _, due := range []string{"0001-01-01T00:00:00Z", "0001-01-01", "0001-01-01T00:00:00.001Z", "1969-12-31T23:59:59Z", "9999-12-31T23:30:00-01:00"} {
				r := s.GraphQL(t, w.MemberToken, createProcMutation, obj("in", procInput(w, "Year one", map[string]any{"dueAt": due})))
				wantRangeError(t, r, "dueAt")
			}
		})
		t.Run("create, inline literal", func(t *testing.T) {
			q := `mutation { createProcedure(input: {name: "Year one", priority: MEDIUM, state: TODO, dueAt: "0001-01-01T00:00:00Z",
				categoryId: "` + w.CategoryID + `", doerId: "` + w.MemberID + `", projectId: "` + w.ProjectID + `"}) { id } }`
			wantRangeError(t, s.GraphQL(t, w.MemberToken, q, nil), "dueAt")
		})
		t.Run("update", func(t *testing.T) {
			r := s.GraphQL(t, w.MemberToken, `mutation($id: ID!) { updateProcedure(id: $id, input: {dueAt: "0001-01-01T00:00:00Z"}) { id } }`, obj("id", p.ID))
			wantRangeError(t, r, "dueAt")
		})
		t.Run("project", func(t *testing.T) {
			r := s.GraphQL(t, w.MemberToken, `mutation { createProject(input: {name: "P", startedAt: "0001-01-01T00:00:00Z"}) { id } }`, nil)
			wantRangeError(t, r, "startedAt")
			r = s.GraphQL(t, w.MemberToken, `mutation($id: ID!, $due: Time) { updateProject(id: $id, input: {dueAt: $due}) { id } }`,
				obj("id", projectID, "due", "1900-01-01"))
			wantRangeError(t, r, "dueAt")
		})
		t.Run("filter", func(t *testing.T) {
			r := s.GraphQL(t, w.ViewToken, `{ procedures(filter: {dueTo: "0001-01-01T00:00:00Z"}) { totalCount } }`, nil)
			wantRangeError(t, r, "dueTo")
		})
		t.Run("nothing stored", func(t *testing.T) {
			if page := listProcs(t, s, w.AdminToken, nil); page.TotalCount != 1 {
				t.Fatalf("refused creates stored procedures: %d", page.TotalCount)
			}
			got := getProc(t, s, w.AdminToken, p.ID)
			if got.DueAt != p.DueAt {
				t.Fatalf("a refused update changed dueAt to %s", got.DueAt)
			}
		})
		t.Run("the range's ends are accepted", func(t *testing.T) {
			for due, want := range map[string]string{
				"1970-01-01T00:00:00Z": "1970-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z": "9999-12-31T23:59:59.999Z",
			} {
				if got := createProc(t, s, w.MemberToken, procInput(w, "Edge", map[string]any{"dueAt": due})); got.DueAt != want {
					t.Fatalf("dueAt %s stored as %s", due, got.DueAt)
				}
			}
		})
	})
}
