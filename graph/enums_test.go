package graph_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/genchoice"
)

// generationFields are createProcedure's generation choices: the input
// field, its GraphQL enum, its values spelled both ways, and what the
// generator is asked for.
var generationFields = []struct {
	field, enum string
	choices     []genchoice.Choice
	asked       func(core.GenerateRequest) string
}{
	{"contentType", "ContentType", genchoice.ContentTypeChoices, func(r core.GenerateRequest) string { return r.ContentType }},
	{"docStyle", "DocStyle", genchoice.DocStyleChoices, func(r core.GenerateRequest) string { return r.DocStyle }},
	{"language", "Language", genchoice.LanguageChoices, func(r core.GenerateRequest) string { return r.Language }},
}

// TestGenerationEnumsOnBothFaces: GraphQL spells ContentType, DocStyle and
// Language in SCREAMING_CASE (CODE), REST in the interface's words (code).
// Each face takes its own spelling, as a literal or in a variable, to the
// same generator request; the other face's spelling is refused with
// validation_failed naming the field, never a 500, and nothing is stored.
func TestGenerationEnumsOnBothFaces(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		gen := &fakeGenerator{}
		s := apitest.Start(t, db, core.WithGenerator(gen))
		w := s.NewWorkspace(t, "Enums", "ENUM")

		// literal is createProcedure with its whole input written in the
		// document, field set to the enum value value.
		literal := func(name, field, value string) string {
			return fmt.Sprintf(`mutation { createProcedure(input: {name: %q, priority: MEDIUM, state: TODO,
				dueAt: "2026-06-01T12:00:00Z", categoryId: %q, doerId: %q, projectId: %q, content: "notes",
				generateProcedure: true, %s: %s}) { content } }`, name, w.CategoryID, w.MemberID, w.ProjectID, field, value)
		}
		rest := func(body map[string]any) (int, map[string]any) {
			t.Helper()
			b, _ := json.Marshal(body)
			req, _ := http.NewRequest(http.MethodPost, s.URL+"/procedures", bytes.NewReader(b))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+w.MemberToken)
			resp, err := s.HTTP.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			var out map[string]any
			if err := json.Unmarshal(raw, &out); err != nil {
				t.Fatalf("REST answered %d, not JSON: %s", resp.StatusCode, raw)
			}
			return resp.StatusCode, out
		}
		restBody := func(name string, over map[string]any) map[string]any {
			b := procInput(w, name, over)
			b["content"], b["generateProcedure"] = "notes", true
			return b
		}

		for _, f := range generationFields {
			for _, c := range f.choices {
				t.Run(f.field+"/"+c.Name, func(t *testing.T) {
					gen.got = core.GenerateRequest{}
					ok(t, s.GraphQL(t, w.MemberToken, literal("Literal "+c.Name, f.field, c.Name), nil), &struct{}{})
					if got := f.asked(gen.got); got != c.Word {
						t.Errorf("GraphQL literal %s: the generator was asked for %q, want %q", c.Name, got, c.Word)
					}

					gen.got = core.GenerateRequest{}
					createProc(t, s, w.MemberToken, procInput(w, "Variable "+c.Name, map[string]any{
						"content": "notes", "generateProcedure": true, f.field: c.Name}))
					if got := f.asked(gen.got); got != c.Word {
						t.Errorf("GraphQL variable %s: the generator was asked for %q, want %q", c.Name, got, c.Word)
					}

					gen.got = core.GenerateRequest{}
					status, body := rest(restBody("REST "+c.Word, map[string]any{f.field: c.Word}))
					if status != http.StatusOK {
						t.Fatalf("REST %q: %d %v", c.Word, status, body)
					}
					if got := f.asked(gen.got); got != c.Word {
						t.Errorf("REST %q: the generator was asked for %q", c.Word, got)
					}
				})
			}
			t.Run(f.field+"/WrongSpelling", func(t *testing.T) {
				before := listProcs(t, s, w.AdminToken, nil).TotalCount
				c := f.choices[0]
				wantError(t, s.GraphQL(t, w.MemberToken, literal("Refused literal", f.field, c.Word), nil), "validation_failed", f.field)
				wantError(t, s.GraphQL(t, w.MemberToken, createProcMutation, obj("in", procInput(w, "Refused variable",
					map[string]any{"generateProcedure": true, f.field: c.Word}))), "validation_failed", f.field)
				status, body := rest(restBody("Refused REST", map[string]any{f.field: c.Name}))
				if status != http.StatusBadRequest || body["code"] != "validation_failed" {
					t.Fatalf("REST with GraphQL's %s: %d %v, want 400 validation_failed", c.Name, status, body)
				}
				if fields, _ := body["fields"].([]any); len(fields) != 1 || fields[0].(map[string]any)["field"] != f.field {
					t.Fatalf("REST names %v, want %s", body["fields"], f.field)
				}
				if after := listProcs(t, s, w.AdminToken, nil).TotalCount; after != before {
					t.Fatalf("refused creates stored procedures: %d, then %d", before, after)
				}
			})
		}

		// Introspection publishes GraphQL's spelling.
		t.Run("Introspection", func(t *testing.T) {
			for _, f := range generationFields {
				var out struct {
					Type struct{ EnumValues []struct{ Name string } } `json:"__type"`
				}
				ok(t, s.GraphQL(t, w.ViewToken, `query($n: String!) { __type(name: $n) { enumValues { name } } }`, obj("n", f.enum)), &out)
				var names []string
				for _, v := range out.Type.EnumValues {
					names = append(names, v.Name)
				}
				var want []string
				for _, c := range f.choices {
					want = append(want, c.Name)
				}
				if fmt.Sprint(names) != fmt.Sprint(want) {
					t.Errorf("%s's values are %v, want %v", f.enum, names, want)
				}
			}
		})
	})
}
