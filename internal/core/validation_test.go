package core_test

// Validation of CreateProcedure: every invalid field is reported and nothing
// is stored; how content is normalised; dueAt is stored in UTC.

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/ids"
)

func TestCreateProcedureValidation(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db, "VAL")

		t.Run("every missing required field is reported", func(t *testing.T) {
			_, err := f.svc.CreateProcedure(f.admin, core.CreateProcedureInput{Name: "   "})
			wantCode(t, err, apperr.ValidationFailed)
			want := []string{"categoryId", "doerId", "dueAt", "name", "priority", "projectId", "state"}
			if got := fieldsOf(err); !slices.Equal(got, want) {
				t.Fatalf("fields = %v; want %v", got, want)
			}
		})

		invalid := []struct {
			name   string
			mutate func(in *core.CreateProcedureInput)
			fields []string
		}{
			{"unknown priority and state", func(in *core.CreateProcedureInput) { in.Priority, in.State = "URGENT", "DONE" }, []string{"priority", "state"}},
			{"malformed ids", func(in *core.CreateProcedureInput) { in.CategoryID, in.DoerID, in.ProjectID = "x", "y", "z" }, []string{"categoryId", "doerId", "projectId"}},
			{"ids of nothing", func(in *core.CreateProcedureInput) {
				in.CategoryID, in.DoerID, in.ProjectID = ids.New(ids.KindCategory).String(), ids.New(ids.KindMember).String(), ids.New(ids.KindProject).String()
			}, []string{"categoryId", "doerId", "projectId"}},
			{"name too long", func(in *core.CreateProcedureInput) { in.Name = strings.Repeat("n", core.MaxNameLen+1) }, []string{"name"}},
			{"generation enums", func(in *core.CreateProcedureInput) {
				in.ContentType, in.DocStyle, in.Language = strp("poem"), strp("fancy"), strp("cobol")
			}, []string{"contentType", "docStyle", "language"}},
			{"content over the limit", func(in *core.CreateProcedureInput) { in.Content = strings.Repeat("x", core.MaxContentLen+1) }, []string{"content"}},
			{"multibyte content over the limit", func(in *core.CreateProcedureInput) { in.Content = strings.Repeat("é", core.MaxContentLen+1) }, []string{"content"}},
			{"json string content over the limit", func(in *core.CreateProcedureInput) {
				b, _ := json.Marshal(strings.Repeat("x", core.MaxContentLen+1))
				in.Content = json.RawMessage(b)
			}, []string{"content"}},
			{"json object content over the limit", func(in *core.CreateProcedureInput) {
				b, _ := json.Marshal(map[string]string{"k": strings.Repeat("x", core.MaxContentLen)})
				in.Content = json.RawMessage(b)
			}, []string{"content"}},
			{"malformed json content", func(in *core.CreateProcedureInput) { in.Content = json.RawMessage(`{"a":`) }, []string{"content"}},
			{"invalid utf-8 content", func(in *core.CreateProcedureInput) { in.Content = "bad \xff byte" }, []string{"content"}},
		}
		for _, tc := range invalid {
			t.Run(tc.name, func(t *testing.T) {
				in := f.input("valid name", "TODO", f.project)
				tc.mutate(&in)
				before, _ := db.Client.Procedure.Query().Count(sys())
				_, err := f.svc.CreateProcedure(f.admin, in)
				wantCode(t, err, apperr.ValidationFailed)
				if got := fieldsOf(err); !slices.Equal(got, tc.fields) {
					t.Fatalf("fields = %v; want %v", got, tc.fields)
				}
				if after, _ := db.Client.Procedure.Query().Count(sys()); after != before {
					t.Fatalf("a procedure was stored despite the error")
				}
			})
		}

		atLimit := strings.Repeat("é", core.MaxContentLen)
		contents := []struct {
			name    string
			content any
			want    *string
		}{
			{"absent", nil, nil},
			{"string", "plain *markdown*\nline two", strp("plain *markdown*\nline two")},
			{"empty string", "", strp("")},
			{"string at the limit in characters", atLimit, strp(atLimit)},
			{"json object stored compact", json.RawMessage(" {\n  \"b\": 1,\n  \"a\": [1, 2, {\"c\": null}]\n} "), strp(`{"b":1,"a":[1,2,{"c":null}]}`)},
			{"json array", json.RawMessage(`[ "x" , true ]`), strp(`["x",true]`)},
			{"json null", json.RawMessage("null"), nil},
			{"json null with spaces", json.RawMessage("  null "), nil},
			{"json number", json.RawMessage("42.50"), strp("42.50")},
			{"json string is unquoted", json.RawMessage(`"hello \"world\""`), strp(`hello "world"`)},
			{"json boolean", json.RawMessage("false"), strp("false")},
			{"decoded number", float64(7), strp("7")},
			{"decoded object", map[string]any{"k": "v", "n": 1}, strp(`{"k":"v","n":1}`)},
		}
		for _, tc := range contents {
			t.Run("content "+tc.name, func(t *testing.T) {
				in := f.input("content "+tc.name, "TODO", f.project)
				in.Content = tc.content
				p, err := f.svc.CreateProcedure(f.admin, in)
				if err != nil {
					t.Fatalf("CreateProcedure: %v", err)
				}
				stored, err := f.svc.Procedure(f.admin, p.ID.String())
				if err != nil {
					t.Fatal(err)
				}
				for _, got := range []*ent.Procedure{p, stored} {
					switch {
					case tc.want == nil && got.Content != nil:
						t.Fatalf("content = %.80q; want none", *got.Content)
					case tc.want != nil && got.Content == nil:
						t.Fatalf("content = none; want %.80q", *tc.want)
					case tc.want != nil && *got.Content != *tc.want:
						t.Fatalf("content = %.80q; want %.80q", *got.Content, *tc.want)
					}
				}
			})
		}

		t.Run("dueAt is stored in UTC", func(t *testing.T) {
			in := f.input("zoned", "TODO", f.project)
			due := time.Date(2026, 12, 1, 10, 0, 0, 0, time.FixedZone("+02", 2*3600))
			in.DueAt = &due
			p, err := f.svc.CreateProcedure(f.admin, in)
			if err != nil {
				t.Fatal(err)
			}
			stored, err := f.svc.Procedure(f.admin, p.ShortID)
			if err != nil {
				t.Fatal(err)
			}
			if !stored.DueAt.Equal(due) || stored.DueAt.UTC().Hour() != 8 {
				t.Fatalf("dueAt = %v; want %v", stored.DueAt, due.UTC())
			}
		})
	})
}
