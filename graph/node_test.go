package graph_test

// node(id) and nodes(ids) over GraphQL: every type by its global id, null
// for ids that are unknown, malformed or not visible, the 100-id limit, and
// each id once.

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

func TestNode(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		p := createProc(t, s, w.MemberToken, procInput(w, "Noded", nil))
		c := addComment(t, s, w.MemberToken, p.ID, "hi")
		var tk struct {
			CreateToken struct{ Token struct{ ID string } }
		}
		ok(t, s.GraphQL(t, w.AdminToken, `mutation { createToken(input: {name: "n"}) { token { id } } }`, nil), &tk)
		tokenID := tk.CreateToken.Token.ID

		const q = `query($id: ID!) { node(id: $id) { __typename id
			... on Procedure { shortId name }
			... on Project { name }
			... on Category { name }
			... on Member { email }
			... on Comment { text procedureId }
			... on Workspace { key }
			... on Token { name }
		} }`
		type nodeT struct {
			Typename    string `json:"__typename"`
			ID          string
			ShortID     string
			Name        string
			Email       string
			Text        string
			ProcedureID string
			Key         string
		}
		cases := []struct {
			name, id, typename string
			check              func(n nodeT) bool
		}{
			{"Procedure", p.ID, "Procedure", func(n nodeT) bool { return n.ShortID == "ACME-1" && n.Name == "Noded" }},
			{"Project", w.ProjectID, "Project", func(n nodeT) bool { return n.Name == "Acme project" }},
			{"Category", w.CategoryID, "Category", func(n nodeT) bool { return n.Name == "Acme category" }},
			{"Member", w.MemberID, "Member", func(n nodeT) bool { return n.Email == "member@acme.example" }},
			{"Comment", c, "Comment", func(n nodeT) bool { return n.Text == "hi" && n.ProcedureID == p.ID }},
			{"Workspace", w.ID, "Workspace", func(n nodeT) bool { return n.Key == "ACME" }},
			{"Token", tokenID, "Token", func(n nodeT) bool { return n.Name == "n" }},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				var out struct{ Node *nodeT }
				ok(t, s.GraphQL(t, w.AdminToken, q, obj("id", tc.id)), &out)
				if out.Node == nil || out.Node.Typename != tc.typename || out.Node.ID != tc.id || !tc.check(*out.Node) {
					t.Fatalf("node(%s) = %s", tc.id, dump(out.Node))
				}
			})
		}
		for _, tc := range []struct{ name, id string }{
			{"UnknownIdIsNull", "01900000-0000-7000-8000-000000000006"},
			{"MalformedIdIsNull", "hello"},
			{"ShortIdIsNull", "ACME-1"},
			{"UntaggedUUIDIsNull", "6ba7b810-9dad-11d1-80b4-00c04fd430c8"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := s.GraphQL(t, w.AdminToken, q, obj("id", tc.id))
				if len(r.Errors) > 0 || string(r.Data) != `{"node":null}` {
					t.Fatalf("data %s errors %+v", r.Data, r.Errors)
				}
			})
		}
		t.Run("TokenHiddenFromNonAdmins", func(t *testing.T) {
			for _, token := range []string{w.MemberToken, w.ViewToken} {
				r := s.GraphQL(t, token, q, obj("id", tokenID))
				if len(r.Errors) > 0 || string(r.Data) != `{"node":null}` {
					t.Fatalf("node(token) for a non-admin: data %s errors %+v", r.Data, r.Errors)
				}
				// One invisible id does not fail the others.
				var out struct{ Nodes []*named }
				ok(t, s.GraphQL(t, token, `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, obj("ids", []string{tokenID, w.ProjectID})), &out)
				if len(out.Nodes) != 2 || out.Nodes[0] != nil || out.Nodes[1] == nil {
					t.Fatalf("nodes = %s", dump(out.Nodes))
				}
			}
		})
		t.Run("NodesInOrderWithNulls", func(t *testing.T) {
			idList := []string{w.CategoryID, "nope", p.ID, "01900000-0000-7000-8000-000000000006", w.ProjectID, w.ID}
			var out struct{ Nodes []*nodeT }
			ok(t, s.GraphQL(t, w.ViewToken, `query($ids: [ID!]!) { nodes(ids: $ids) { __typename id } }`, obj("ids", idList)), &out)
			if len(out.Nodes) != len(idList) {
				t.Fatalf("%d nodes for %d ids", len(out.Nodes), len(idList))
			}
			for i, id := range idList {
				n := out.Nodes[i]
				wantNull := i == 1 || i == 3
				if wantNull != (n == nil) || (n != nil && n.ID != id) {
					t.Fatalf("nodes[%d] = %s for %s", i, dump(n), id)
				}
			}
		})
		t.Run("NodesEmpty", func(t *testing.T) {
			r := s.GraphQL(t, w.ViewToken, `{ nodes(ids: []) { id } }`, nil)
			if len(r.Errors) > 0 || string(r.Data) != `{"nodes":[]}` {
				t.Fatalf("data %s errors %+v", r.Data, r.Errors)
			}
		})
		t.Run("NodesAtLimit", func(t *testing.T) {
			// 100 distinct ids: the last names the project, the others
			// nothing.
			idList := make([]string, 100)
			for i := range idList {
				idList[i] = fmt.Sprintf("01900000-0000-7000-8000-%012x", 0x1000+i)
			}
			idList[99] = w.ProjectID
			var out struct{ Nodes []*named }
			ok(t, s.GraphQL(t, w.ViewToken, `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, obj("ids", idList)), &out)
			if len(out.Nodes) != 100 || out.Nodes[99] == nil || out.Nodes[0] != nil {
				t.Fatalf("%d nodes", len(out.Nodes))
			}
		})
		// The review's amplification: one id 100 times rendered one record
		// 100 times for the price of a small list. A repeated id, in any
		// spelling of its UUID, literal or variable, is refused before
		// anything runs (no statement beyond authentication).
		t.Run("ErrNodesRepeated", func(t *testing.T) {
			same := make([]string, 100)
			for i := range same {
				same[i] = p.ID
			}
			literal := `{ nodes(ids: [` + strings.TrimSuffix(strings.Repeat(quote(p.ID)+",", 100), ",") + `]) { ... on Procedure { content } } }`
			for name, send := range map[string]func() *apitest.GQLResponse{
				"Variable x100": func() *apitest.GQLResponse {
					return s.GraphQL(t, w.ViewToken, `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, obj("ids", same))
				},
				"Literal x100": func() *apitest.GQLResponse { return s.GraphQL(t, w.ViewToken, literal, nil) },
				"UpperCase": func() *apitest.GQLResponse {
					return s.GraphQL(t, w.ViewToken, `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, obj("ids", []string{p.ID, w.ID, strings.ToUpper(p.ID)}))
				},
			} {
				// What authentication alone runs, just before.
				before := s.DB.Statements()
				if r := s.GraphQL(t, w.ViewToken, `{ __typename }`, nil); len(r.Errors) > 0 {
					t.Fatal(r.Errors)
				}
				auth := s.DB.Statements() - before
				before = s.DB.Statements()
				r := send()
				ran := s.DB.Statements() - before
				wantError(t, r, "validation_failed", "ids")
				if r.Status != http.StatusBadRequest || len(r.Data) != 0 || !strings.Contains(r.Errors[0].Message, "once") {
					t.Fatalf("%s: status %d, data %s: %+v", name, r.Status, r.Data, r.Errors)
				}
				if ran != auth {
					t.Fatalf("%s: a refused nodes(ids:) ran %d statements, authentication %d", name, ran, auth)
				}
			}
		})
		t.Run("ErrNodesOverLimit", func(t *testing.T) {
			idList := make([]string, 101)
			for i := range idList {
				idList[i] = w.ProjectID
			}
			wantError(t, s.GraphQL(t, w.ViewToken, `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, obj("ids", idList)), "validation_failed", "ids")
		})
	})
}
