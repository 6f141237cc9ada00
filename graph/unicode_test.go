package graph_test

// Text that is not valid Unicode over GraphQL: invalid UTF-8 bytes and
// unpaired surrogate escapes, in variables or in the document's string
// literals, are refused naming the field instead of being stored as U+FFFD.

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

func TestInvalidUnicodeRefused(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		createCat := `mutation($in: CreateCategoryInput!) { createCategory(input: $in) { id name } }`
		// body is a POST body whose variables.in.name is the raw JSON string name.
		body := func(name string) []byte {
			return []byte(`{"query":"mutation($in: CreateCategoryInput!) { createCategory(input: $in) { id name } }","variables":{"in":{"name":` + name + `}}}`)
		}
		for _, tc := range []struct {
			name     string
			raw      []byte
			field    string
			mentions string
		}{
			{"lone high surrogate in a variable", body(`"a\ud800"`), "name", `\ud800`},
			{"lone low surrogate in a variable", body(`"\udc00"`), "name", `\udc00`},
			{"invalid byte in a variable", body("\"caf\xe9\""), "name", "0xe9"},
			{"surrogate escape in a literal", []byte(`{"query":"mutation { createCategory(input: {name: \"x\\ud800\"}) { id } }"}`), "name", `\ud800`},
			{"invalid byte in a literal", []byte("{\"query\":\"mutation { createCategory(input: {name: \\\"x\xff\\\"}) { id } }\"}"), "query", "0xff"}, // caught in the JSON, before the document exists
			{"surrogate escape in the query's JSON", []byte(`{"query":"mutation { createCategory(input: {name: \"x\ud800\"}) { id } }"}`), "query", `\ud800`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := s.GraphQLRaw(t, w.MemberToken, "application/json", tc.raw)
				if r.Status != http.StatusBadRequest {
					t.Fatalf("status %d, want 400: %+v %s", r.Status, r.Errors, r.Data)
				}
				wantError(t, r, "validation_failed", tc.field)
				if msg := r.Errors[0].Extensions.Fields[0].Message; !strings.Contains(msg, "UTF-8") || !strings.Contains(msg, tc.mentions) {
					t.Fatalf("message %q should say the text is not UTF-8 and mention %s", msg, tc.mentions)
				}
			})
		}
		t.Run("GET variables", func(t *testing.T) {
			q := url.Values{"query": {`query($id: ID!) { procedure(id: $id) { id } }`}, "variables": {`{"id":"\ud800"}`}}
			req, _ := http.NewRequest(http.MethodGet, s.URL+"/graphql?"+q.Encode(), nil)
			req.Header.Set("Authorization", "Bearer "+w.ViewToken)
			resp, err := s.HTTP.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("status %d, want 400", resp.StatusCode)
			}
		})
		t.Run("nothing stored; valid pairs and escaped backslashes are text", func(t *testing.T) {
			var out struct{ CreateCategory named }
			ok(t, s.GraphQL(t, w.MemberToken, createCat, obj("in", obj("name", "😀 \\ud800 \uFFFD"))), &out)
			r := s.GraphQLRaw(t, w.MemberToken, "application/json", body(`"\ud83d\ude00 \\ud800"`))
			var again struct{ CreateCategory named }
			ok(t, r, &again)
			if again.CreateCategory.Name != "😀 \\ud800" {
				t.Fatalf("name stored as %q", again.CreateCategory.Name)
			}
			page := listNamed(t, s, w.AdminToken, "categories", nil)
			if len(page.Nodes) != 3 { // the workspace's own, and the two above
				t.Fatalf("categories: %+v", page.Nodes)
			}
		})
	})
}
