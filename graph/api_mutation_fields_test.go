package graph_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// TestMutationRootFieldsCommitOnTheirOwn: each root field of a mutation
// runs and commits on its own, in order (docs/api.md). A three-field
// mutation whose second field fails (inside its transaction: the project
// still has a procedure) answers the first and third fields' results, null
// for the second, and one error at path [second]; the database holds
// exactly what the response says.
func TestMutationRootFieldsCommitOnTheirOwn(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Multi", "MUL")
		s.GraphQL(t, w.MemberToken, `mutation($in: CreateProcedureInput!) { createProcedure(input: $in) { id } }`, map[string]any{"in": map[string]any{
			"name": "Keeps the project", "priority": "LOW", "state": "TODO", "dueAt": "2026-05-01",
			"categoryId": w.CategoryID, "doerId": w.MemberID, "projectId": w.ProjectID,
		}}).Decode(t, &struct{}{})
		count := func(table string) int {
			t.Helper()
			var n int
			if err := db.SQL.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		tables := []string{"categories", "projects", "procedures"}
		before := map[string]int{}
		for _, table := range tables {
			before[table] = count(table)
		}

		r := s.GraphQL(t, w.MemberToken, `mutation($project: ID!) {
			first: createCategory(input: {name: "Multi first"}) { id name }
			second: deleteProject(id: $project) { success deletedId }
			third: createProject(input: {name: "Multi third"}) { id name }
		}`, map[string]any{"project": w.ProjectID})

		if r.Status != http.StatusOK {
			t.Fatalf("status %d, want 200: the operation ran", r.Status)
		}
		if len(r.Errors) != 1 || r.Errors[0].Extensions.Code != "conflict" || !reflect.DeepEqual(r.Errors[0].Path, []any{"second"}) {
			t.Fatalf("errors %+v, want one conflict at path [second]", r.Errors)
		}
		var data map[string]json.RawMessage
		if err := json.Unmarshal(r.Data, &data); err != nil || data == nil {
			t.Fatalf("data %s, want the fields' results", r.Data)
		}
		if string(data["second"]) != "null" {
			t.Fatalf("second: %s, want null", data["second"])
		}
		var first, third struct{ ID, Name string }
		if err := json.Unmarshal(data["first"], &first); err != nil || first.Name != "Multi first" {
			t.Fatalf("first: %s", data["first"])
		}
		if err := json.Unmarshal(data["third"], &third); err != nil || third.Name != "Multi third" {
			t.Fatalf("third: %s, want it run after the second failed", data["third"])
		}

		// The database: the category and the project the response shows,
		// and the project the second field could not delete.
		after := map[string]int{}
		for _, table := range tables {
			after[table] = count(table)
		}
		want := map[string]int{"categories": before["categories"] + 1, "projects": before["projects"] + 1, "procedures": before["procedures"]}
		if !reflect.DeepEqual(after, want) {
			t.Fatalf("rows %v, want %v (before: %v)", after, want, before)
		}
		for _, rec := range []struct{ table, name, id string }{
			{"categories", "Multi first", first.ID},
			{"projects", "Multi third", third.ID},
			{"projects", "Multi project", w.ProjectID},
		} {
			var id uuid.UUID
			if err := db.SQL.QueryRow(fmt.Sprintf("SELECT id FROM %s WHERE name = '%s'", rec.table, rec.name)).Scan(&id); err != nil {
				t.Fatalf("%s %q: %v", rec.table, rec.name, err)
			}
			if id.String() != rec.id {
				t.Fatalf("%s %q has id %s, the response %s", rec.table, rec.name, id, rec.id)
			}
		}
	})
}

// TestFailedMutationFieldIsNull: a mutation of one failing field answers
// data with that field null (the result is nullable), not data: null.
func TestFailedMutationFieldIsNull(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Nul", "NUL")
		r := s.GraphQL(t, w.ViewToken, `mutation { createCategory(input: {name: "Viewers cannot"}) { id } }`, nil)
		if r.Code() != "forbidden" || string(r.Data) != `{"createCategory":null}` || !reflect.DeepEqual(r.Errors[0].Path, []any{"createCategory"}) {
			t.Fatalf("data %s, errors %+v; want createCategory null with a forbidden error at its path", r.Data, r.Errors)
		}
	})
}
