package graph_test

// Procedures over GraphQL: create (with generated content), read and update.

import (
	"context"
	"errors"
	"fmt"
	"reflect"
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
