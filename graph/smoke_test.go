package graph_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

func TestSmokeCreateAndList(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		create := func(t *testing.T, ws *apitest.Workspace, in map[string]any) (id, shortID, dueAt string) {
			t.Helper()
			res := s.GraphQL(t, ws.MemberToken, `mutation($in: CreateProcedureInput!) { createProcedure(input: $in) { id shortId dueAt project { name } } }`, map[string]any{
				"in": in,
			})
			var out struct {
				CreateProcedure struct {
					ID, ShortID, DueAt string
				}
			}
			res.Decode(t, &out)
			return out.CreateProcedure.ID, out.CreateProcedure.ShortID, out.CreateProcedure.DueAt
		}
		firstID, shortID, dueAt := create(t, w, map[string]any{"name": "First", "priority": "HIGH", "state": "TODO", "dueAt": "2026-12-01T10:00:00+02:00",
			"categoryId": w.CategoryID, "doerId": w.MemberID, "projectId": w.ProjectID, "content": map[string]any{"b": 1, "a": []int{1, 2}}})
		if shortID != "ACME-1" || dueAt != "2026-12-01T08:00:00.000Z" {
			t.Fatalf("created %s due %s; want ACME-1 due 2026-12-01T08:00:00.000Z", shortID, dueAt)
		}

		// A second procedure (another doer, another state, plain content), a
		// comment on the first, and a procedure in another workspace that the
		// list must not show.
		_, shortID, _ = create(t, w, map[string]any{"name": "Second", "priority": "LOW", "state": "WAITING", "dueAt": "2027-01-01T00:00:00Z",
			"categoryId": w.CategoryID, "doerId": w.ViewerID, "projectId": w.ProjectID, "content": "step one"})
		if shortID != "ACME-2" {
			t.Fatalf("second shortId = %s; want ACME-2", shortID)
		}
		var commented struct{ AddComment struct{ ID string } }
		s.GraphQL(t, w.MemberToken, `mutation($in: AddCommentInput!) { addComment(input: $in) { id } }`, map[string]any{
			"in": map[string]any{"procedureId": firstID, "text": "looks good"},
		}).Decode(t, &commented)
		other := s.NewWorkspace(t, "Other", "OTH")
		create(t, other, map[string]any{"name": "Foreign", "priority": "HIGH", "state": "TODO", "dueAt": "2026-12-01T00:00:00Z",
			"categoryId": other.CategoryID, "doerId": other.MemberID, "projectId": other.ProjectID})

		// The list shows exactly the workspace's two procedures, newest
		// first (the default order), each with its own fields and edges.
		list := s.GraphQL(t, w.ViewToken, `{ procedures { totalCount nodes { shortId name priority state content category { name } doer { name } project { name } comments(last: 10) { nodes { id text } } } } }`, nil)
		type named struct{ Name string }
		var got struct {
			Procedures struct {
				TotalCount int
				Nodes      []struct {
					ShortID, Name, Priority, State string
					Content                        *string
					Category, Doer                 *named
					Project                        named
					Comments                       nodes[struct{ ID, Text string }]
				}
			}
		}
		list.Decode(t, &got)
		if n := got.Procedures.TotalCount; n != 2 {
			t.Errorf("totalCount = %d; want 2", n)
		}
		// row flattens a listed procedure; "-" stands for null.
		type row struct {
			ShortID, Name, Priority, State, Content, Category, Doer, Project, Comments string
		}
		orNull := func(s *string) string {
			if s == nil {
				return "-"
			}
			return *s
		}
		nameOf := func(n *named) string {
			if n == nil {
				return "-"
			}
			return n.Name
		}
		var rows []row
		for _, p := range got.Procedures.Nodes {
			var comments []string
			for _, c := range p.Comments {
				comments = append(comments, c.ID+" "+c.Text)
			}
			rows = append(rows, row{p.ShortID, p.Name, p.Priority, p.State, orNull(p.Content),
				nameOf(p.Category), nameOf(p.Doer), p.Project.Name, strings.Join(comments, ", ")})
		}
		want := []row{
			{"ACME-2", "Second", "LOW", "WAITING", "step one", "Acme category", "Vic Viewer", "Acme project", ""},
			{"ACME-1", "First", "HIGH", "TODO", `{"a":[1,2],"b":1}`, "Acme category", "Max Member", "Acme project", commented.AddComment.ID + " looks good"},
		}
		if !slices.Equal(rows, want) {
			t.Fatalf("listed\n%+v\nwant\n%+v", rows, want)
		}
	})
}
