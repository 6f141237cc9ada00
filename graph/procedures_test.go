package graph_test

// Procedures over GraphQL: create, read, update, move, delete, and the list
// with its filters, orders and Relay pagination.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// ---------------------------------------------------------------------------
// createProcedure.

func TestCreateProcedure(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")

		t.Run("AllFields", func(t *testing.T) {
			p := createProc(t, s, w.MemberToken, procInput(w, "  Deploy the service  ", map[string]any{
				"priority": "HIGH", "state": "WAITING", "dueAt": "2026-12-01T10:00:00+02:00", "content": "step one",
				"captureId": "cap-1", "displayVideo": true, "isFineTunedData": true, "doerId": w.AdminID,
			}))
			if p.ShortID != "ACME-1" {
				t.Errorf("shortId = %q, want ACME-1", p.ShortID)
			}
			if p.Name != "Deploy the service" {
				t.Errorf("name = %q, want it trimmed", p.Name)
			}
			if p.Priority != "HIGH" || p.State != "WAITING" || deref(p.Content) != "step one" {
				t.Errorf("got %+v", p)
			}
			if p.DueAt != "2026-12-01T08:00:00.000Z" {
				t.Errorf("dueAt = %q, want UTC with milliseconds", p.DueAt)
			}
			if deref(p.CategoryID) != w.CategoryID || p.Category == nil || p.Category.ID != w.CategoryID {
				t.Errorf("category = %v / %+v", deref(p.CategoryID), p.Category)
			}
			if deref(p.DoerID) != w.AdminID || p.Doer == nil || p.Doer.Name != "Ada Admin" {
				t.Errorf("doer = %v / %+v", deref(p.DoerID), p.Doer)
			}
			if p.ProjectID != w.ProjectID || p.Project.ID != w.ProjectID || p.Project.Name != "Acme project" {
				t.Errorf("project = %v / %+v", p.ProjectID, p.Project)
			}
			if p.CreatorID != w.MemberID {
				t.Errorf("creatorId = %s, want the viewer %s", p.CreatorID, w.MemberID)
			}
			if p.WorkspaceID != w.ID {
				t.Errorf("workspaceId = %s, want %s", p.WorkspaceID, w.ID)
			}
			if deref(p.CaptureID) != "cap-1" || !p.DisplayVideo || !p.IsFineTunedData {
				t.Errorf("captureId/displayVideo/isFineTunedData = %v/%v/%v", deref(p.CaptureID), p.DisplayVideo, p.IsFineTunedData)
			}
			if p.Comments == nil || len(p.Comments) != 0 {
				t.Errorf("comments = %v, want []", p.Comments)
			}
			if _, err := time.Parse("2006-01-02T15:04:05.000Z", p.CreatedAt); err != nil {
				t.Errorf("createdAt %q: %v", p.CreatedAt, err)
			}
			if got := getProc(t, s, w.ViewToken, p.ID); got.Name != p.Name || got.ShortID != p.ShortID {
				t.Errorf("read back %+v", got)
			}
		})

		t.Run("Defaults", func(t *testing.T) {
			p := createProc(t, s, w.MemberToken, procInput(w, "Defaults", nil))
			if p.Content != nil || p.CaptureID != nil || p.DisplayVideo || p.IsFineTunedData {
				t.Errorf("content=%v captureId=%v displayVideo=%v isFineTunedData=%v, want null/null/false/false",
					deref(p.Content), deref(p.CaptureID), p.DisplayVideo, p.IsFineTunedData)
			}
		})

		t.Run("ContentJSONValueStoredAsText", func(t *testing.T) {
			p := createProc(t, s, w.MemberToken, procInput(w, "JSON", map[string]any{"content": map[string]any{"b": 1, "a": []int{1, 2}}}))
			if deref(p.Content) != `{"a":[1,2],"b":1}` {
				t.Errorf("content = %s", deref(p.Content))
			}
			p = createProc(t, s, w.MemberToken, procInput(w, "Number", map[string]any{"content": 42}))
			if deref(p.Content) != "42" {
				t.Errorf("content = %s", deref(p.Content))
			}
		})

		t.Run("ContentNull", func(t *testing.T) {
			in := procInput(w, "Null content", nil)
			in["content"] = nil // explicit JSON null
			var out struct{ CreateProcedure procT }
			ok(t, s.GraphQL(t, w.MemberToken, createProcMutation, obj("in", in)), &out)
			if out.CreateProcedure.Content != nil {
				t.Errorf("content = %q, want null", *out.CreateProcedure.Content)
			}
		})

		t.Run("DateOnlyDueAt", func(t *testing.T) {
			p := createProc(t, s, w.MemberToken, procInput(w, "Date", map[string]any{"dueAt": "2027-03-04"}))
			if p.DueAt != "2027-03-04T00:00:00.000Z" {
				t.Errorf("dueAt = %s", p.DueAt)
			}
		})

		t.Run("ShortIdSequenceAndColumnEnd", func(t *testing.T) {
			proj := createProject(t, s, w.MemberToken, "Sequence")
			a := createProc(t, s, w.MemberToken, procInput(w, "Seq A", map[string]any{"projectId": proj}))
			b := createProc(t, s, w.AdminToken, procInput(w, "Seq B", map[string]any{"projectId": proj}))
			c := createProc(t, s, w.MemberToken, procInput(w, "Seq C", map[string]any{"projectId": proj, "state": "COMPLETED"}))
			na, _ := strconv.Atoi(strings.TrimPrefix(a.ShortID, "ACME-"))
			if b.ShortID != fmt.Sprintf("ACME-%d", na+1) || c.ShortID != fmt.Sprintf("ACME-%d", na+2) {
				t.Errorf("shortIds %s %s %s are not consecutive", a.ShortID, b.ShortID, c.ShortID)
			}
			if !(b.Position > a.Position) {
				t.Errorf("second procedure of a column at %v, not after the first at %v", b.Position, a.Position)
			}
		})
	})
}

func TestCreateProcedureValidation(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		other := s.NewWorkspace(t, "Beta", "BETA")
		gone := removedMember(t, s, w, "gone@acme.example")

		cases := []struct {
			name   string
			over   map[string]any
			code   string
			fields []string
		}{
			{"ErrNameRequired", map[string]any{"name": "   "}, "validation_failed", []string{"name"}},
			{"ErrNameMissing", map[string]any{"name": nil}, "validation_failed", []string{"name"}},
			{"ErrNameTooLong", map[string]any{"name": strings.Repeat("n", core.MaxNameLen+1)}, "validation_failed", []string{"name"}},
			{"ErrNameNUL", map[string]any{"name": "a\x00b"}, "validation_failed", []string{"name"}},
			{"ErrPriorityInvalid", map[string]any{"priority": "URGENT"}, "validation_failed", []string{"priority"}},
			{"ErrStateInvalid", map[string]any{"state": "DONE"}, "validation_failed", []string{"state"}},
			{"ErrDueAtInvalid", map[string]any{"dueAt": "next tuesday"}, "validation_failed", []string{"dueAt"}},
			{"ErrDueAtMissing", map[string]any{"dueAt": nil}, "validation_failed", []string{"dueAt"}},
			{"ErrCategoryIdNotUUID", map[string]any{"categoryId": "not-a-uuid"}, "validation_failed", []string{"categoryId"}},
			{"ErrCategoryIdEmpty", map[string]any{"categoryId": ""}, "validation_failed", []string{"categoryId"}},
			{"ErrCategoryIdOtherWorkspace", map[string]any{"categoryId": other.CategoryID}, "validation_failed", []string{"categoryId"}},
			{"ErrCategoryIdUnknown", map[string]any{"categoryId": w.ProjectID}, "validation_failed", []string{"categoryId"}},
			{"ErrDoerIdRemovedMember", map[string]any{"doerId": gone}, "validation_failed", []string{"doerId"}},
			{"ErrDoerIdOtherWorkspace", map[string]any{"doerId": other.MemberID}, "validation_failed", []string{"doerId"}},
			{"ErrProjectIdOtherWorkspace", map[string]any{"projectId": other.ProjectID}, "validation_failed", []string{"projectId"}},
			{"ErrProjectIdNotUUID", map[string]any{"projectId": "42"}, "validation_failed", []string{"projectId"}},
			{"ErrCaptureIdTooLong", map[string]any{"captureId": strings.Repeat("c", core.MaxTitleLen+1)}, "validation_failed", []string{"captureId"}},
			{"ErrContentTooLong", map[string]any{"content": strings.Repeat("x", core.MaxContentLen+1)}, "validation_failed", []string{"content"}},
			{"ErrContentTypeInvalid", map[string]any{"contentType": "novel"}, "validation_failed", []string{"contentType"}},
			{"ErrEveryBadFieldNamed", map[string]any{"name": "", "categoryId": "x", "doerId": "y"}, "validation_failed", []string{"name", "categoryId", "doerId"}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				r := s.GraphQL(t, w.MemberToken, createProcMutation, obj("in", procInput(w, "Valid name", tc.over)))
				wantError(t, r, tc.code, tc.fields...)
			})
		}
		t.Run("NothingStored", func(t *testing.T) {
			if p := listProcs(t, s, w.AdminToken, nil); p.TotalCount != 0 {
				t.Fatalf("failed creates stored %d procedures", p.TotalCount)
			}
			// Refused creates consume no shortId.
			if p := createProc(t, s, w.MemberToken, procInput(w, "First", nil)); p.ShortID != "ACME-1" {
				t.Fatalf("first stored procedure is %s, want ACME-1", p.ShortID)
			}
		})
	})
}

// fakeGenerator records its request and returns a fixed document, or fails.
type fakeGenerator struct {
	fail bool
	got  core.GenerateRequest
}

func (g *fakeGenerator) Generate(_ context.Context, req core.GenerateRequest) (string, error) {
	g.got = req
	if g.fail {
		return "", errors.New("model unavailable")
	}
	return "# " + req.Name + " (" + req.ContentType + "/" + req.DocStyle + "/" + req.Language + ")\n" + req.Content, nil
}

func TestCreateProcedureGenerate(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		gen := &fakeGenerator{}
		s := apitest.Start(t, db, core.WithGenerator(gen))
		plain := apitest.Start(t, db) // the same database, no generator configured
		w := s.NewWorkspace(t, "Acme", "ACME")

		t.Run("GeneratedContentStored", func(t *testing.T) {
			p := createProc(t, s, w.MemberToken, procInput(w, "Gen", map[string]any{
				"content": "raw notes", "generateProcedure": true, "contentType": "PROCESS", "docStyle": "DETAILED", "language": "PYTHON",
			}))
			want := "# Gen (process/detailed/python)\nraw notes"
			if deref(p.Content) != want {
				t.Errorf("content = %q, want %q", deref(p.Content), want)
			}
		})
		t.Run("DefaultsPassedToGenerator", func(t *testing.T) {
			createProc(t, s, w.MemberToken, procInput(w, "Gen2", map[string]any{"generateProcedure": true}))
			if gen.got.Name != "Gen2" || gen.got.ContentType != "standard" || gen.got.DocStyle != "technical" || gen.got.Language != "other" {
				t.Errorf("generator got %+v", gen.got)
			}
		})
		t.Run("NotRequestedNotGenerated", func(t *testing.T) {
			p := createProc(t, s, w.MemberToken, procInput(w, "Plain", map[string]any{"content": "as is", "generateProcedure": false}))
			if deref(p.Content) != "as is" {
				t.Errorf("content = %q", deref(p.Content))
			}
		})
		t.Run("ErrGenerationFailed", func(t *testing.T) {
			before := listProcs(t, s, w.AdminToken, nil).TotalCount
			gen.fail = true
			defer func() { gen.fail = false }()
			r := s.GraphQL(t, w.MemberToken, createProcMutation, obj("in", procInput(w, "Gen3", map[string]any{"generateProcedure": true})))
			wantError(t, r, "generation_failed")
			if after := listProcs(t, s, w.AdminToken, nil).TotalCount; after != before {
				t.Errorf("a failed generation stored a procedure: %d -> %d", before, after)
			}
		})
		t.Run("ErrGeneratorNotConfigured", func(t *testing.T) {
			before := listProcs(t, s, w.AdminToken, nil).TotalCount
			r := plain.GraphQL(t, w.MemberToken, createProcMutation, obj("in", procInput(w, "Gen4", map[string]any{"generateProcedure": true})))
			wantError(t, r, "generation_failed")
			if after := listProcs(t, s, w.AdminToken, nil).TotalCount; after != before {
				t.Errorf("stored a procedure: %d -> %d", before, after)
			}
		})
	})
}

// renamingGenerator renames the project while createProcedure waits for
// generated content: the window between the core's reference checks and
// its write transaction, which a concurrent rename can hit in production.
type renamingGenerator struct {
	svc       *core.Service
	projectID string
	to        string
}

func (g *renamingGenerator) Generate(ctx context.Context, req core.GenerateRequest) (string, error) {
	if _, err := g.svc.UpdateProject(ctx, g.projectID, core.ProjectInput{Name: core.Some(g.to)}); err != nil {
		return "", err
	}
	return "generated", nil
}

// Procedures keep a copy of their project's name for sorting, updated with a
// rename in the rename's transaction. createProcedure (and updateProcedure)
// read the name before their own transaction, so a rename committed in
// between left the new procedure with the old name for good, and sorting by
// project name put it in the wrong place.
func TestProjectNameCopySeesConcurrentRename(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		gen := &renamingGenerator{}
		s := apitest.Start(t, db, core.WithGenerator(gen))
		w := s.NewWorkspace(t, "Acme", "ACME")
		gen.svc, gen.projectID, gen.to = s.Service, w.ProjectID, "Zulu project"
		p := createProc(t, s, w.MemberToken, procInput(w, "Gen", map[string]any{"generateProcedure": true}))
		if p.Project.Name != "Zulu project" {
			t.Fatalf("project = %+v", p.Project)
		}
		var name string
		q := "SELECT project_name FROM procedures WHERE short_id = 'ACME-1'"
		if err := db.SQL.QueryRow(q).Scan(&name); err != nil {
			t.Fatal(err)
		}
		if name != "Zulu project" {
			t.Errorf("procedures.project_name = %q, the project is named %q", name, "Zulu project")
		}
		// Observable: sorted by project name, the procedure in "Zulu
		// project" comes after one in "Mid project".
		mid := createProject(t, s, w.MemberToken, "Mid project")
		createProc(t, s, w.MemberToken, procInput(w, "Other", map[string]any{"projectId": mid}))
		page := listProcs(t, s, w.MemberToken, obj("orderBy", obj("field", "PROJECT_NAME", "direction", "ASC")))
		if got := strings.Join(names(page), ","); got != "Other,Gen" {
			t.Errorf("sorted by project name: %s, want Other,Gen", got)
		}
	})
}

func names(p procPage) []string {
	var out []string
	for _, n := range p.Nodes {
		out = append(out, n.Name)
	}
	return out
}

// ---------------------------------------------------------------------------
// procedure(id).

func TestProcedureQuery(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		p := createProc(t, s, w.MemberToken, procInput(w, "Lookup", map[string]any{"content": "body"}))
		addComment(t, s, w.MemberToken, p.ID, "first")
		addComment(t, s, w.AdminToken, p.ID, "second")

		for _, tc := range []struct{ name, id string }{
			{"ById", p.ID},
			{"ByShortId", "ACME-1"},
			{"ByLowerCaseShortId", "acme-1"},
			{"ByUpperCaseId", strings.ToUpper(p.ID)},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got := getProc(t, s, w.ViewToken, tc.id)
				if got.ID != p.ID || got.ShortID != "ACME-1" || deref(got.Content) != "body" {
					t.Fatalf("got %+v", got)
				}
				if len(got.Comments) != 2 || got.Comments[0].Text != "first" || got.Comments[1].Text != "second" {
					t.Fatalf("comments = %+v, want first then second", got.Comments)
				}
				if a := got.Comments[1].Author; a == nil || a.ID != w.AdminID {
					t.Fatalf("second comment's author = %+v", a)
				}
			})
		}
		for _, tc := range []struct{ name, id string }{
			{"ErrUnknownShortId", "ACME-999"},
			{"ErrUnknownId", "01900000-0000-7000-8000-000000000006"},
			{"ErrMalformedId", "not-an-id"},
			{"ErrIdOfOtherKind", w.ProjectID},
			{"ErrEmptyId", ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := s.GraphQL(t, w.ViewToken, `query($id: ID!) { procedure(id: $id) { id } }`, obj("id", tc.id))
				wantError(t, r, "not_found")
				if string(r.Data) != `{"procedure":null}` {
					t.Fatalf("data = %s", r.Data)
				}
			})
		}
	})
}

// ---------------------------------------------------------------------------
// updateProcedure.

const updateProcMutation = `mutation($id: ID!, $in: UpdateProcedureInput!) { updateProcedure(id: $id, input: $in) { ` + procFields + ` } }`

// withoutVolatile blanks the fields an update may legitimately change.
func withoutVolatile(p procT) procT {
	p.UpdatedAt = ""
	return p
}

func TestUpdateProcedure(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		other := s.NewWorkspace(t, "Beta", "BETA")
		gone := removedMember(t, s, w, "gone@acme.example")
		cat2 := createCategory(t, s, w.MemberToken, "Second category")
		proj2 := createProject(t, s, w.MemberToken, "Second project")

		fresh := func(t *testing.T) procT {
			return createProc(t, s, w.MemberToken, procInput(w, "Original", map[string]any{
				"content": "original content", "captureId": "cap", "priority": "LOW",
			}))
		}

		type check func(t *testing.T, before, after procT)
		changes := func(mutate func(p *procT)) check {
			return func(t *testing.T, before, after procT) {
				want := before
				mutate(&want)
				if !reflect.DeepEqual(withoutVolatile(after), withoutVolatile(want)) {
					t.Fatalf("after update\n got %s\nwant %s", dump(withoutVolatile(after)), dump(withoutVolatile(want)))
				}
			}
		}
		okCases := []struct {
			name  string
			input map[string]any
			check check
		}{
			{"EmptyInputChangesNothing", obj(), changes(func(p *procT) {})},
			{"OnlyPriorityChanges", obj("priority", "HIGH"), changes(func(p *procT) { p.Priority = "HIGH" })},
			{"OnlyNameChanges", obj("name", "  Renamed  "), changes(func(p *procT) { p.Name = "Renamed" })},
			{"OnlyDueAtChanges", obj("dueAt", "2030-01-02T03:04:05.678+01:00"), changes(func(p *procT) { p.DueAt = "2030-01-02T02:04:05.678Z" })},
			{"ContentChanges", obj("content", "new"), changes(func(p *procT) { p.Content = strp("new") })},
			{"NullClearsContent", obj("content", nil), changes(func(p *procT) { p.Content = nil })},
			{"NullClearsCategoryId", obj("categoryId", nil), changes(func(p *procT) { p.CategoryID, p.Category = nil, nil })},
			{"NullClearsDoerId", obj("doerId", nil), changes(func(p *procT) { p.DoerID, p.Doer = nil, nil })},
			{"NullClearsCaptureId", obj("captureId", nil), changes(func(p *procT) { p.CaptureID = nil })},
			{"CategoryIdChanges", obj("categoryId", cat2), changes(func(p *procT) {
				p.CategoryID, p.Category = strp(cat2), &named{ID: cat2, Name: "Second category"}
			})},
			{"DoerIdChanges", obj("doerId", w.ViewerID), changes(func(p *procT) {
				p.DoerID, p.Doer = strp(w.ViewerID), &named{ID: w.ViewerID, Name: "Vic Viewer"}
			})},
			{"FlagsChange", obj("displayVideo", true, "isFineTunedData", true), changes(func(p *procT) {
				p.DisplayVideo, p.IsFineTunedData = true, true
			})},
			{"ExplicitPosition", obj("position", -7.5), changes(func(p *procT) { p.Position = -7.5 })},
			{"ProjectChangeMovesToNewProject", obj("projectId", proj2), func(t *testing.T, before, after procT) {
				if after.ProjectID != proj2 || after.Project.Name != "Second project" {
					t.Fatalf("project = %s %+v", after.ProjectID, after.Project)
				}
			}},
		}
		for _, tc := range okCases {
			t.Run(tc.name, func(t *testing.T) {
				before := fresh(t)
				var out struct{ UpdateProcedure procT }
				ok(t, s.GraphQL(t, w.MemberToken, updateProcMutation, obj("id", before.ID, "in", tc.input)), &out)
				tc.check(t, before, out.UpdateProcedure)
				tc.check(t, before, getProc(t, s, w.ViewToken, before.ID))
			})
		}

		errCases := []struct {
			name   string
			input  map[string]any
			code   string
			fields []string
		}{
			{"ErrNameNull", obj("name", nil), "validation_failed", []string{"name"}},
			{"ErrNameEmpty", obj("name", " "), "validation_failed", []string{"name"}},
			{"ErrNameTooLong", obj("name", strings.Repeat("x", core.MaxNameLen+1)), "validation_failed", []string{"name"}},
			{"ErrPriorityNull", obj("priority", nil), "validation_failed", []string{"priority"}},
			{"ErrPriorityInvalid", obj("priority", "SOON"), "validation_failed", []string{"priority"}},
			{"ErrStateNull", obj("state", nil), "validation_failed", []string{"state"}},
			{"ErrProjectIdNull", obj("projectId", nil), "validation_failed", []string{"projectId"}},
			{"ErrProjectIdOtherWorkspace", obj("projectId", other.ProjectID), "validation_failed", []string{"projectId"}},
			{"ErrDueAtNull", obj("dueAt", nil), "validation_failed", []string{"dueAt"}},
			{"ErrDueAtInvalid", obj("dueAt", "2026-13-45"), "validation_failed", []string{"dueAt"}},
			{"ErrCategoryIdNotUUID", obj("categoryId", "cat"), "validation_failed", []string{"categoryId"}},
			{"ErrCategoryIdOtherWorkspace", obj("categoryId", other.CategoryID), "validation_failed", []string{"categoryId"}},
			{"ErrDoerIdRemovedMember", obj("doerId", gone), "validation_failed", []string{"doerId"}},
			{"ErrDoerIdOtherWorkspace", obj("doerId", other.AdminID), "validation_failed", []string{"doerId"}},
			{"ErrDisplayVideoNull", obj("displayVideo", nil), "validation_failed", []string{"displayVideo"}},
			{"ErrPositionNull", obj("position", nil), "validation_failed", []string{"position"}},
			{"ErrContentTooLong", obj("content", strings.Repeat("x", core.MaxContentLen+1)), "validation_failed", []string{"content"}},
			{"ErrValidFieldsNotAppliedWithInvalid", obj("priority", "HIGH", "name", nil), "validation_failed", []string{"name"}},
		}
		for _, tc := range errCases {
			t.Run(tc.name, func(t *testing.T) {
				before := fresh(t)
				wantError(t, s.GraphQL(t, w.MemberToken, updateProcMutation, obj("id", before.ID, "in", tc.input)), tc.code, tc.fields...)
				if after := getProc(t, s, w.ViewToken, before.ID); !reflect.DeepEqual(after, before) {
					t.Fatalf("a refused update changed the procedure\nbefore %s\n after %s", dump(before), dump(after))
				}
			})
		}

		t.Run("ByShortId", func(t *testing.T) {
			p := fresh(t)
			var out struct{ UpdateProcedure procT }
			ok(t, s.GraphQL(t, w.MemberToken, updateProcMutation, obj("id", strings.ToLower(p.ShortID), "in", obj("name", "Via shortId"))), &out)
			if out.UpdateProcedure.ID != p.ID || out.UpdateProcedure.Name != "Via shortId" {
				t.Fatalf("got %+v", out.UpdateProcedure)
			}
		})
		t.Run("ErrNotFound", func(t *testing.T) {
			wantError(t, s.GraphQL(t, w.MemberToken, updateProcMutation, obj("id", "ACME-9999", "in", obj("name", "x"))), "not_found")
			wantError(t, s.GraphQL(t, w.MemberToken, updateProcMutation, obj("id", w.ProjectID, "in", obj("name", "x"))), "not_found")
		})

		t.Run("StateChangeMovesToEndOfNewColumn", func(t *testing.T) {
			proj := createProject(t, s, w.MemberToken, "Columns")
			in := func(name, state string) map[string]any {
				return procInput(w, name, map[string]any{"projectId": proj, "state": state})
			}
			a := createProc(t, s, w.MemberToken, in("a", "TODO"))
			b := createProc(t, s, w.MemberToken, in("b", "IN_PROGRESS"))
			c := createProc(t, s, w.MemberToken, in("c", "IN_PROGRESS"))
			// Push c to the front of its column so "end" cannot mean "after the newest".
			ok(t, s.GraphQL(t, w.MemberToken, updateProcMutation, obj("id", c.ID, "in", obj("position", b.Position-1000))), &struct{}{})
			var out struct{ UpdateProcedure procT }
			ok(t, s.GraphQL(t, w.MemberToken, updateProcMutation, obj("id", a.ID, "in", obj("state", "IN_PROGRESS"))), &out)
			if out.UpdateProcedure.State != "IN_PROGRESS" {
				t.Fatalf("state = %s", out.UpdateProcedure.State)
			}
			if got := column(t, s, w, proj, "IN_PROGRESS"); !sameStrings(got, []string{c.ID, b.ID, a.ID}) {
				t.Fatalf("IN_PROGRESS column = %v, want c b a = %v", got, []string{c.ID, b.ID, a.ID})
			}
			// Given with a position, the position wins.
			ok(t, s.GraphQL(t, w.MemberToken, updateProcMutation, obj("id", b.ID, "in", obj("state", "TODO", "position", 5))), &out)
			if out.UpdateProcedure.Position != 5 || out.UpdateProcedure.State != "TODO" {
				t.Fatalf("got state %s position %v, want TODO 5", out.UpdateProcedure.State, out.UpdateProcedure.Position)
			}
			// Into an empty column.
			ok(t, s.GraphQL(t, w.MemberToken, updateProcMutation, obj("id", c.ID, "in", obj("state", "COMPLETED"))), &out)
			if got := column(t, s, w, proj, "COMPLETED"); !sameStrings(got, []string{c.ID}) {
				t.Fatalf("COMPLETED column = %v", got)
			}
			if got := column(t, s, w, proj, "IN_PROGRESS"); !sameStrings(got, []string{a.ID}) {
				t.Fatalf("IN_PROGRESS column = %v", got)
			}
		})
	})
}

// column returns the ids of a (project, state) column, ordered by position,
// failing when two procedures share a position.
func column(t testing.TB, s *apitest.Server, w *apitest.Workspace, project, state string) []string {
	t.Helper()
	page := listProcs(t, s, w.ViewToken, obj("first", 100, "filter", obj("projectId", project, "state", state)))
	ps := page.Nodes
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Position < ps[j].Position })
	for i := 1; i < len(ps); i++ {
		if !(ps[i].Position > ps[i-1].Position) {
			t.Fatalf("column %s/%s: %s and %s share position %v", project, state, ps[i-1].ShortID, ps[i].ShortID, ps[i].Position)
		}
	}
	return ids(ps)
}

// ---------------------------------------------------------------------------
// moveProcedure.

const moveMutation = `mutation($id: ID!, $state: ProcedureState, $after: ID, $before: ID) {
	moveProcedure(id: $id, state: $state, afterId: $after, beforeId: $before) { id state position }
}`

func TestMoveProcedure(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		proj := createProject(t, s, w.MemberToken, "Board")
		mk := func(name, state string) string {
			return createProc(t, s, w.MemberToken, procInput(w, name, map[string]any{"projectId": proj, "state": state})).ID
		}
		A, B, C, D := mk("A", "TODO"), mk("B", "TODO"), mk("C", "TODO"), mk("D", "TODO")
		E := mk("E", "IN_PROGRESS")
		names := map[string]string{A: "A", B: "B", C: "C", D: "D", E: "E"}
		show := func(col []string) string {
			out := make([]string, len(col))
			for i, id := range col {
				out[i] = names[id]
			}
			return strings.Join(out, " ")
		}
		expect := func(t *testing.T, state, want string) {
			t.Helper()
			if got := show(column(t, s, w, proj, state)); got != want {
				t.Fatalf("%s column = %q, want %q", state, got, want)
			}
		}
		expect(t, "TODO", "A B C D")

		steps := []struct {
			name                 string
			id                   string
			vars                 map[string]any
			wantState            string
			wantTodo, wantInProg string
		}{
			{"AfterId", D, obj("after", A), "TODO", "A D B C", "E"},
			{"BeforeId", A, obj("before", C), "TODO", "D B A C", "E"},
			{"AfterAndBeforeId", C, obj("after", D, "before", B), "TODO", "D C B A", "E"},
			{"BeforeFirst", A, obj("before", D), "TODO", "A D C B", "E"},
			{"AfterLast", D, obj("after", B), "TODO", "A C B D", "E"},
			{"NoNeighboursGoesToEnd", A, obj(), "TODO", "C B D A", "E"},
			{"OtherStateToEnd", B, obj("state", "IN_PROGRESS"), "IN_PROGRESS", "C D A", "E B"},
			{"OtherStateAfterId", E, obj("state", "TODO", "after", C), "TODO", "C E D A", "B"},
			{"OtherStateBeforeId", D, obj("state", "IN_PROGRESS", "before", B), "IN_PROGRESS", "C E A", "D B"},
			{"SameStateGiven", A, obj("state", "TODO", "before", C), "TODO", "A C E", "D B"},
		}
		for _, st := range steps {
			t.Run(st.name, func(t *testing.T) {
				vars := obj("id", st.id)
				for k, v := range st.vars {
					vars[k] = v
				}
				var out struct {
					MoveProcedure struct {
						ID, State string
						Position  float64
					}
				}
				ok(t, s.GraphQL(t, w.MemberToken, moveMutation, vars), &out)
				if out.MoveProcedure.ID != st.id || out.MoveProcedure.State != st.wantState {
					t.Fatalf("moved %+v, want %s in %s", out.MoveProcedure, names[st.id], st.wantState)
				}
				expect(t, "TODO", st.wantTodo)
				expect(t, "IN_PROGRESS", st.wantInProg)
			})
		}

		// Now TODO: A C E; IN_PROGRESS: D B.
		errs := []struct {
			name, id string
			vars     map[string]any
			code     string
			fields   []string
		}{
			{"ErrAfterIdInOtherColumn", A, obj("after", D), "validation_failed", []string{"afterId"}},
			{"ErrBeforeIdInOtherColumn", A, obj("before", B), "validation_failed", []string{"beforeId"}},
			{"ErrAfterIdSelf", C, obj("after", C), "validation_failed", []string{"afterId"}},
			{"ErrBeforeIdSelf", C, obj("before", C), "validation_failed", []string{"beforeId"}},
			{"ErrAfterIdMalformed", A, obj("after", "nope"), "validation_failed", []string{"afterId"}},
			{"ErrBeforeIdMalformed", A, obj("before", "nope"), "validation_failed", []string{"beforeId"}},
			{"ErrBeforeNotDirectlyAfter", A, obj("after", C, "before", C), "validation_failed", []string{"beforeId"}},
			{"ErrNeighboursNotAdjacent", D, obj("state", "TODO", "after", A, "before", E), "validation_failed", []string{"beforeId"}},
			{"ErrStateInvalid", A, obj("state", "DONE"), "validation_failed", []string{"state"}},
			{"ErrAfterIdNotAProcedure", A, obj("after", w.ProjectID), "validation_failed", []string{"afterId"}},
			{"ErrNotFound", "ACME-999", obj(), "not_found", nil},
		}
		for _, tc := range errs {
			t.Run(tc.name, func(t *testing.T) {
				vars := obj("id", tc.id)
				for k, v := range tc.vars {
					vars[k] = v
				}
				wantError(t, s.GraphQL(t, w.MemberToken, moveMutation, vars), tc.code, tc.fields...)
				expect(t, "TODO", "A C E")
				expect(t, "IN_PROGRESS", "D B")
			})
		}
		t.Run("ErrAfterIdOfOtherProject", func(t *testing.T) {
			x := createProc(t, s, w.MemberToken, procInput(w, "elsewhere", nil)).ID
			wantError(t, s.GraphQL(t, w.MemberToken, moveMutation, obj("id", A, "after", x)), "validation_failed", "afterId")
			expect(t, "TODO", "A C E")
		})
	})
}

// TestMoveProcedureRenumbers splits the same gap until it is too small and
// checks that the column stays in strict order.
func TestMoveProcedureRenumbers(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		proj := createProject(t, s, w.MemberToken, "Tight")
		var model []string
		for _, n := range []string{"a", "b", "c", "d"} {
			model = append(model, createProc(t, s, w.MemberToken, procInput(w, n, map[string]any{"projectId": proj})).ID)
		}
		place := func(id, after string) {
			var rest []string
			for _, x := range model {
				if x != id {
					rest = append(rest, x)
				}
			}
			model = model[:0]
			for _, x := range rest {
				model = append(model, x)
				if x == after {
					model = append(model, id)
				}
			}
		}
		first := model[0]
		movers := []string{model[2], model[3]}
		for i := 0; i < 64; i++ {
			id := movers[i%2]
			ok(t, s.GraphQL(t, w.MemberToken, moveMutation, obj("id", id, "after", first)), &struct{}{})
			place(id, first)
		}
		if got := column(t, s, w, proj, "TODO"); !sameStrings(got, model) {
			t.Fatalf("column = %v, want %v", got, model)
		}
		// The renumbered column still accepts placements between any two neighbours.
		ok(t, s.GraphQL(t, w.MemberToken, moveMutation, obj("id", model[3], "after", model[0], "before", model[1])), &struct{}{})
		place(model[3], model[0])
		if got := column(t, s, w, proj, "TODO"); !sameStrings(got, model) {
			t.Fatalf("column = %v, want %v", got, model)
		}
	})
}

// ---------------------------------------------------------------------------
// deleteProcedure.

func TestDeleteProcedure(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		keep := createProc(t, s, w.MemberToken, procInput(w, "Keep", nil))
		keepComment := addComment(t, s, w.MemberToken, keep.ID, "stays")
		doomed := createProc(t, s, w.MemberToken, procInput(w, "Doomed", nil))
		c1 := addComment(t, s, w.MemberToken, doomed.ID, "one")
		c2 := addComment(t, s, w.AdminToken, doomed.ID, "two")

		const del = `mutation($id: ID!) { deleteProcedure(id: $id) { success deletedId } }`
		t.Run("Deletes", func(t *testing.T) {
			var out struct {
				DeleteProcedure struct {
					Success   bool
					DeletedID string
				}
			}
			ok(t, s.GraphQL(t, w.MemberToken, del, obj("id", doomed.ID)), &out)
			if !out.DeleteProcedure.Success || out.DeleteProcedure.DeletedID != doomed.ID {
				t.Fatalf("got %+v", out.DeleteProcedure)
			}
			wantError(t, s.GraphQL(t, w.ViewToken, `query($id: ID!) { procedure(id: $id) { id } }`, obj("id", doomed.ID)), "not_found")
			wantError(t, s.GraphQL(t, w.ViewToken, `query($id: ID!) { procedure(id: $id) { id } }`, obj("id", doomed.ShortID)), "not_found")
		})
		t.Run("CommentsGoWithIt", func(t *testing.T) {
			var out struct{ Nodes []*named }
			ok(t, s.GraphQL(t, w.ViewToken, `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, obj("ids", []string{c1, c2, keepComment})), &out)
			if out.Nodes[0] != nil || out.Nodes[1] != nil {
				t.Fatalf("comments of a deleted procedure still resolve: %+v %+v", out.Nodes[0], out.Nodes[1])
			}
			if out.Nodes[2] == nil || out.Nodes[2].ID != keepComment {
				t.Fatalf("another procedure's comment is gone")
			}
			wantError(t, s.GraphQL(t, w.AdminToken, `mutation($id: ID!) { updateComment(id: $id, input: {text: "x"}) { id } }`, obj("id", c1)), "not_found")
			if got := getProc(t, s, w.ViewToken, keep.ID); len(got.Comments) != 1 {
				t.Fatalf("kept procedure has %d comments", len(got.Comments))
			}
		})
		t.Run("ErrAlreadyDeleted", func(t *testing.T) {
			wantError(t, s.GraphQL(t, w.MemberToken, del, obj("id", doomed.ID)), "not_found")
		})
		t.Run("ErrMalformedId", func(t *testing.T) {
			wantError(t, s.GraphQL(t, w.MemberToken, del, obj("id", "zzz")), "not_found")
		})
		t.Run("ByShortId", func(t *testing.T) {
			p := createProc(t, s, w.MemberToken, procInput(w, "By short id", nil))
			ok(t, s.GraphQL(t, w.MemberToken, del, obj("id", p.ShortID)), &struct{}{})
			wantError(t, s.GraphQL(t, w.ViewToken, `query($id: ID!) { procedure(id: $id) { id } }`, obj("id", p.ID)), "not_found")
		})
		t.Run("ShortIdNeverReused", func(t *testing.T) {
			// ACME-1 kept, ACME-2 and ACME-3 deleted: the next is ACME-4.
			if p := createProc(t, s, w.MemberToken, procInput(w, "Next", nil)); p.ShortID != "ACME-4" {
				t.Fatalf("next shortId = %s, want ACME-4", p.ShortID)
			}
			if n := listProcs(t, s, w.ViewToken, nil).TotalCount; n != 2 {
				t.Fatalf("totalCount = %d, want 2", n)
			}
		})
	})
}

// ---------------------------------------------------------------------------
// procedures: pagination, filters, orders.

func TestProceduresPagination(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		const n = 23
		for i := 0; i < n; i++ {
			createProc(t, s, w.MemberToken, procInput(w, fmt.Sprintf("p%02d", i), map[string]any{"dueAt": fmt.Sprintf("2026-01-%02d", i%5+1)}))
		}
		order := obj("field", "NAME", "direction", "ASC")
		all := listProcs(t, s, w.ViewToken, obj("first", 100, "orderBy", order))
		if all.TotalCount != n || len(all.Nodes) != n {
			t.Fatalf("totalCount %d, %d nodes; want %d", all.TotalCount, len(all.Nodes), n)
		}
		want := ids(all.Nodes)

		t.Run("DefaultPageSize", func(t *testing.T) {
			p := listProcs(t, s, w.ViewToken, nil)
			if len(p.Nodes) != core.DefaultProcedurePageSize || p.TotalCount != n || !p.PageInfo.HasNextPage || p.PageInfo.HasPreviousPage {
				t.Fatalf("%d nodes, total %d, pageInfo %+v", len(p.Nodes), p.TotalCount, p.PageInfo)
			}
		})
		t.Run("ForwardWithFirstAfter", func(t *testing.T) {
			var got []string
			vars := obj("first", 5, "orderBy", order)
			for pages := 0; ; pages++ {
				if pages > n {
					t.Fatal("pagination does not end")
				}
				p := listProcs(t, s, w.ViewToken, vars)
				if p.TotalCount != n {
					t.Fatalf("totalCount = %d on page %d", p.TotalCount, pages)
				}
				if p.PageInfo.HasPreviousPage != (pages > 0) {
					t.Fatalf("page %d hasPreviousPage = %v", pages, p.PageInfo.HasPreviousPage)
				}
				if len(p.Nodes) > 0 && (deref(p.PageInfo.StartCursor) != p.Edges[0].Cursor || deref(p.PageInfo.EndCursor) != p.Edges[len(p.Edges)-1].Cursor) {
					t.Fatalf("start/end cursors %+v do not match edges", p.PageInfo)
				}
				got = append(got, ids(p.Nodes)...)
				if !p.PageInfo.HasNextPage {
					break
				}
				vars["after"] = *p.PageInfo.EndCursor
			}
			if !sameStrings(got, want) {
				t.Fatalf("forward pages = %v, want %v", got, want)
			}
		})
		t.Run("BackwardWithLastBefore", func(t *testing.T) {
			var got []string
			vars := obj("last", 4, "orderBy", order)
			for pages := 0; ; pages++ {
				if pages > n {
					t.Fatal("pagination does not end")
				}
				p := listProcs(t, s, w.ViewToken, vars)
				if p.TotalCount != n {
					t.Fatalf("totalCount = %d", p.TotalCount)
				}
				if pages == 0 && (p.PageInfo.HasNextPage || !p.PageInfo.HasPreviousPage) {
					t.Fatalf("last page pageInfo = %+v", p.PageInfo)
				}
				got = append(ids(p.Nodes), got...)
				if !p.PageInfo.HasPreviousPage {
					break
				}
				vars["before"] = *p.PageInfo.StartCursor
			}
			if !sameStrings(got, want) {
				t.Fatalf("backward pages = %v, want %v", got, want)
			}
		})
		t.Run("AfterAndBefore", func(t *testing.T) {
			p := listProcs(t, s, w.ViewToken, obj("first", 100, "orderBy", order))
			after, before := p.Edges[2].Cursor, p.Edges[8].Cursor
			q := listProcs(t, s, w.ViewToken, obj("after", after, "before", before, "orderBy", order))
			if !sameStrings(ids(q.Nodes), want[3:8]) {
				t.Fatalf("between = %v, want %v", ids(q.Nodes), want[3:8])
			}
			q = listProcs(t, s, w.ViewToken, obj("first", 2, "after", after, "before", before, "orderBy", order))
			if !sameStrings(ids(q.Nodes), want[3:5]) || !q.PageInfo.HasNextPage {
				t.Fatalf("first 2 between = %v (%+v), want %v", ids(q.Nodes), q.PageInfo, want[3:5])
			}
			q = listProcs(t, s, w.ViewToken, obj("last", 2, "after", after, "before", before, "orderBy", order))
			if !sameStrings(ids(q.Nodes), want[6:8]) || !q.PageInfo.HasPreviousPage {
				t.Fatalf("last 2 between = %v (%+v), want %v", ids(q.Nodes), q.PageInfo, want[6:8])
			}
		})
		t.Run("FirstZero", func(t *testing.T) {
			p := listProcs(t, s, w.ViewToken, obj("first", 0))
			if len(p.Nodes) != 0 || p.TotalCount != n || p.PageInfo.StartCursor != nil || p.PageInfo.EndCursor != nil {
				t.Fatalf("first 0: %d nodes, total %d, %+v", len(p.Nodes), p.TotalCount, p.PageInfo)
			}
		})
		t.Run("AfterTheEnd", func(t *testing.T) {
			p := listProcs(t, s, w.ViewToken, obj("first", 5, "after", all.Edges[n-1].Cursor, "orderBy", order))
			if len(p.Nodes) != 0 || p.TotalCount != n || p.PageInfo.HasNextPage || !p.PageInfo.HasPreviousPage {
				t.Fatalf("after the end: %d nodes, total %d, %+v", len(p.Nodes), p.TotalCount, p.PageInfo)
			}
		})
		t.Run("MaxPageSize", func(t *testing.T) {
			if p := listProcs(t, s, w.ViewToken, obj("first", core.MaxProcedurePageSize)); len(p.Nodes) != n {
				t.Fatalf("%d nodes", len(p.Nodes))
			}
		})
		for _, tc := range []struct {
			name  string
			vars  map[string]any
			field string
		}{
			{"ErrFirstTooLarge", obj("first", core.MaxProcedurePageSize+1), "first"},
			{"ErrFirstNegative", obj("first", -1), "first"},
			{"ErrLastTooLarge", obj("last", 101), "last"},
			{"ErrFirstAndLast", obj("first", 1, "last", 1), "last"},
			{"ErrAfterNotCursor", obj("after", "bogus!"), "after"},
			{"ErrBeforeNotCursor", obj("before", "!!"), "before"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				wantError(t, s.GraphQL(t, w.ViewToken, proceduresQuery, tc.vars), "validation_failed", tc.field)
			})
		}
	})
}

// seeded is one procedure of the filter and order data set, as created.
type seeded struct {
	procT
	due time.Time
}

func TestProceduresFilter(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		other := s.NewWorkspace(t, "Beta", "BETA")
		// The other workspace has look-alike data that no filter may count.
		createProc(t, s, other.MemberToken, procInput(other, "alpha", map[string]any{"content": "needle"}))

		cat2 := createCategory(t, s, w.MemberToken, "Cat two")
		proj2 := createProject(t, s, w.MemberToken, "Proj two")
		rows := []struct {
			name, content, state, priority, category, doer, project, due string
		}{
			{"alpha", "Find the NeedLe here", "TODO", "LOW", w.CategoryID, w.MemberID, w.ProjectID, "2026-01-01T00:00:00Z"},
			{"bravo", "", "IN_PROGRESS", "HIGH", cat2, w.AdminID, w.ProjectID, "2026-01-02T00:00:00Z"},
			{"charlie", "100% done", "TODO", "MEDIUM", w.CategoryID, w.AdminID, proj2, "2026-01-02T12:00:00Z"},
			{"Delta", "snake_case", "COMPLETED", "HIGH", cat2, w.MemberID, proj2, "2026-01-03T00:00:00Z"},
			{"echo", "100 percent", "WAITING", "LOW", w.CategoryID, w.ViewerID, w.ProjectID, "2026-01-04T00:00:00Z"},
			{"NEEDLEWORK", "", "TODO", "HIGH", cat2, w.MemberID, proj2, "2026-01-05T00:00:00Z"},
			{"golf", "snakecase", "IN_PROGRESS", "MEDIUM", w.CategoryID, w.MemberID, w.ProjectID, "2026-01-06T00:00:00Z"},
		}
		var data []seeded
		for _, r := range rows {
			over := map[string]any{"state": r.state, "priority": r.priority, "categoryId": r.category, "doerId": r.doer, "projectId": r.project, "dueAt": r.due}
			if r.content != "" {
				over["content"] = r.content
			}
			p := createProc(t, s, w.MemberToken, procInput(w, r.name, over))
			due, _ := time.Parse(time.RFC3339, r.due)
			data = append(data, seeded{p, due})
		}
		// ACME-10 exists so that a shortId search must match substrings.
		for i := len(data); i < 10; i++ {
			p := createProc(t, s, w.MemberToken, procInput(w, fmt.Sprintf("filler%d", i), map[string]any{"state": "WAITING", "priority": "MEDIUM", "dueAt": "2027-01-01T00:00:00Z"}))
			data = append(data, seeded{p, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)})
		}
		contains := func(q string) func(p seeded) bool {
			q = strings.ToLower(q)
			return func(p seeded) bool {
				return strings.Contains(strings.ToLower(p.Name), q) || strings.Contains(strings.ToLower(deref(p.Content)), q) ||
					strings.Contains(strings.ToLower(p.ShortID), q)
			}
		}
		d := func(s string) time.Time { t, _ := time.Parse(time.RFC3339, s); return t }
		cases := []struct {
			name   string
			filter map[string]any
			match  func(p seeded) bool
			want   int
		}{
			{"NoFilter", obj(), func(seeded) bool { return true }, 10},
			{"SearchNameCaseInsensitive", obj("search", "ALPHA"), contains("alpha"), 1},
			{"SearchContentCaseInsensitive", obj("search", "needle"), contains("needle"), 2},
			{"SearchShortId", obj("search", "acme-1"), contains("acme-1"), 2},
			{"SearchShortIdExact", obj("search", "ACME-7"), contains("acme-7"), 1},
			{"SearchTrimmed", obj("search", "  delta  "), contains("delta"), 1},
			{"SearchPercentIsLiteral", obj("search", "%"), contains("%"), 1},
			{"SearchUnderscoreIsLiteral", obj("search", "_"), contains("_"), 1},
			{"SearchNoMatch", obj("search", "zzz"), contains("zzz"), 0},
			{"State", obj("state", "TODO"), func(p seeded) bool { return p.State == "TODO" }, 3},
			{"Priority", obj("priority", "HIGH"), func(p seeded) bool { return p.Priority == "HIGH" }, 3},
			{"CategoryId", obj("categoryId", cat2), func(p seeded) bool { return deref(p.CategoryID) == cat2 }, 3},
			{"DoerId", obj("doerId", w.AdminID), func(p seeded) bool { return deref(p.DoerID) == w.AdminID }, 2},
			{"ProjectId", obj("projectId", proj2), func(p seeded) bool { return p.ProjectID == proj2 }, 3},
			{"DueFromInclusive", obj("dueFrom", "2026-01-04T00:00:00Z"), func(p seeded) bool { return !p.due.Before(d("2026-01-04T00:00:00Z")) }, 6},
			{"DueToInclusive", obj("dueTo", "2026-01-02T00:00:00Z"), func(p seeded) bool { return !p.due.After(d("2026-01-02T00:00:00Z")) }, 2},
			{"DueWindow", obj("dueFrom", "2026-01-02", "dueTo", "2026-01-03T00:00:00+00:00"), func(p seeded) bool {
				return !p.due.Before(d("2026-01-02T00:00:00Z")) && !p.due.After(d("2026-01-03T00:00:00Z"))
			}, 3},
			{"DueOffsetHonoured", obj("dueTo", "2026-01-02T13:00:00+01:00"), func(p seeded) bool { return !p.due.After(d("2026-01-02T12:00:00Z")) }, 3},
			{"Combined", obj("state", "TODO", "priority", "HIGH", "search", "needle"), func(p seeded) bool {
				return p.State == "TODO" && p.Priority == "HIGH" && contains("needle")(p)
			}, 1},
			{"CombinedEmpty", obj("projectId", proj2, "state", "WAITING"), func(p seeded) bool { return false }, 0},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				var want []string
				for _, p := range data {
					if tc.match(p) {
						want = append(want, p.ID)
					}
				}
				if len(want) != tc.want {
					t.Fatalf("test data: %d procedures match, the case expects %d", len(want), tc.want)
				}
				p := listProcs(t, s, w.ViewToken, obj("first", 100, "filter", tc.filter, "orderBy", obj("field", "NAME", "direction", "ASC")))
				got := ids(p.Nodes)
				sort.Strings(got)
				sort.Strings(want)
				if p.TotalCount != len(want) || !sameStrings(got, want) {
					t.Fatalf("totalCount %d, ids %v; want %d, %v", p.TotalCount, got, len(want), want)
				}
				// totalCount counts the whole match, not the page.
				p = listProcs(t, s, w.ViewToken, obj("first", 1, "filter", tc.filter))
				if p.TotalCount != len(want) || len(p.Nodes) != min(1, len(want)) || p.PageInfo.HasNextPage != (len(want) > 1) {
					t.Fatalf("first 1: totalCount %d, %d nodes, %+v; want total %d", p.TotalCount, len(p.Nodes), p.PageInfo, len(want))
				}
				p = listProcs(t, s, w.ViewToken, obj("last", 1, "filter", tc.filter))
				if p.TotalCount != len(want) || len(p.Nodes) != min(1, len(want)) || p.PageInfo.HasPreviousPage != (len(want) > 1) {
					t.Fatalf("last 1: totalCount %d, %d nodes, %+v; want total %d", p.TotalCount, len(p.Nodes), p.PageInfo, len(want))
				}
			})
		}
		for _, tc := range []struct {
			name   string
			filter map[string]any
			field  string
		}{
			{"ErrCategoryIdNotUUID", obj("categoryId", "c1"), "categoryId"},
			{"ErrDoerIdNotUUID", obj("doerId", "me"), "doerId"},
			{"ErrProjectIdNotUUID", obj("projectId", "p"), "projectId"},
			{"ErrStateInvalid", obj("state", "DONE"), "state"},
			{"ErrPriorityInvalid", obj("priority", "URGENT"), "priority"},
			{"ErrDueFromInvalid", obj("dueFrom", "yesterday"), "dueFrom"},
			{"ErrSearchTooLong", obj("search", strings.Repeat("s", core.MaxTitleLen+1)), "search"},
			{"ErrDueToBeforeDueFrom", obj("dueFrom", "2026-02-01", "dueTo", "2026-01-01"), ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := s.GraphQL(t, w.ViewToken, proceduresQuery, obj("filter", tc.filter))
				if tc.field == "" {
					wantError(t, r, "validation_failed")
				} else {
					wantError(t, r, "validation_failed", tc.field)
				}
			})
		}
	})
}

func TestProceduresOrder(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		projects := map[string]string{}
		for _, n := range []string{"mango", "apple", "kiwi"} {
			projects[n] = createProject(t, s, w.MemberToken, n)
		}
		// Names, dues, projects and creation times all repeat so that ties
		// must be broken by id.
		rows := []struct{ name, due, project, created string }{
			{"delta", "2026-03-01", "mango", "2025-01-01T00:00:00Z"},
			{"alpha", "2026-01-01", "apple", "2025-01-02T00:00:00Z"},
			{"charlie", "2026-03-01", "kiwi", "2025-01-01T00:00:00Z"},
			{"alpha", "2026-02-01", "mango", "2025-01-03T00:00:00Z"},
			{"bravo", "2026-01-01", "apple", "2025-01-01T00:00:00Z"},
			{"delta", "2026-03-01", "kiwi", "2025-01-02T00:00:00Z"},
			{"alpha", "2026-01-01", "apple", "2025-01-02T00:00:00Z"},
			{"echo", "2026-02-01", "mango", "2025-01-03T00:00:00Z"},
			{"bravo", "2026-03-01", "kiwi", "2025-01-01T00:00:00Z"},
		}
		type item struct {
			id, name, project string
			due, created      time.Time
		}
		var items []item
		for _, r := range rows {
			p := createProc(t, s, w.MemberToken, procInput(w, r.name, map[string]any{"dueAt": r.due, "projectId": projects[r.project]}))
			created, _ := time.Parse(time.RFC3339, r.created)
			execSQL(t, db, "UPDATE procedures SET created_at = ? WHERE id = ?", created, p.ID)
			due, _ := time.Parse("2006-01-02", r.due)
			items = append(items, item{p.ID, r.name, r.project, due, created})
		}
		cmp := map[string]func(a, b item) int{
			"CREATED_AT":   func(a, b item) int { return a.created.Compare(b.created) },
			"DUE_AT":       func(a, b item) int { return a.due.Compare(b.due) },
			"NAME":         func(a, b item) int { return strings.Compare(a.name, b.name) },
			"PROJECT_NAME": func(a, b item) int { return strings.Compare(a.project, b.project) },
		}
		expected := func(field string, desc bool) []string {
			sorted := append([]item(nil), items...)
			sort.SliceStable(sorted, func(i, j int) bool {
				c := cmp[field](sorted[i], sorted[j])
				if c == 0 {
					c = strings.Compare(sorted[i].id, sorted[j].id)
				}
				if desc {
					return c > 0
				}
				return c < 0
			})
			out := make([]string, len(sorted))
			for i, it := range sorted {
				out[i] = it.id
			}
			return out
		}
		walk := func(t *testing.T, orderBy map[string]any, size int) []string {
			var got []string
			seen := map[string]bool{}
			vars := obj("first", size)
			if orderBy != nil {
				vars["orderBy"] = orderBy
			}
			for pages := 0; pages <= len(items); pages++ {
				p := listProcs(t, s, w.ViewToken, vars)
				for _, id := range ids(p.Nodes) {
					if seen[id] {
						t.Fatalf("%s appears on two pages", id)
					}
					seen[id] = true
				}
				got = append(got, ids(p.Nodes)...)
				if !p.PageInfo.HasNextPage {
					return got
				}
				vars["after"] = *p.PageInfo.EndCursor
			}
			t.Fatal("pagination does not end")
			return nil
		}
		for _, field := range []string{"CREATED_AT", "DUE_AT", "NAME", "PROJECT_NAME"} {
			for _, dir := range []string{"ASC", "DESC"} {
				t.Run(field+"_"+dir, func(t *testing.T) {
					want := expected(field, dir == "DESC")
					for _, size := range []int{2, 4, 100} {
						if got := walk(t, obj("field", field, "direction", dir), size); !sameStrings(got, want) {
							t.Fatalf("pages of %d = %v\nwant %v", size, got, want)
						}
					}
				})
			}
		}
		t.Run("DefaultIsCreatedAtDesc", func(t *testing.T) {
			if got, want := walk(t, nil, 3), expected("CREATED_AT", true); !sameStrings(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
		})
		t.Run("DirectionDefaultsToDesc", func(t *testing.T) {
			if got, want := walk(t, obj("field", "NAME"), 3), expected("NAME", true); !sameStrings(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
		})
		t.Run("ErrFieldInvalid", func(t *testing.T) {
			wantError(t, s.GraphQL(t, w.ViewToken, proceduresQuery, obj("orderBy", obj("field", "POSITION"))), "validation_failed", "field")
		})
		t.Run("PositionIsFinite", func(t *testing.T) {
			for _, p := range listProcs(t, s, w.ViewToken, obj("first", 100)).Nodes {
				if math.IsNaN(p.Position) || math.IsInf(p.Position, 0) {
					t.Fatalf("position %v", p.Position)
				}
			}
		})
	})
}
