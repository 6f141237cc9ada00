package graph_test

// Adversarial review: each test proves one bug found by reading the code
// (and stays as its regression test).

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// NUL characters are valid JSON ("\u0000") but PostgreSQL cannot store or
// compare them in text: every free-text input that reached the database
// with one answered `internal` on PostgreSQL (and was stored on SQLite).
// Each must be refused as validation_failed naming the field, on both
// databases, with nothing written.
func TestReviewNULInTextInputs(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		p := createProc(t, s, w.MemberToken, procInput(w, "P1", map[string]any{"content": "keep"}))
		before := snapshot(t, s, w.AdminToken)
		cases := []struct {
			name, token, query string
			vars               map[string]any
			field              string
		}{
			{"CreateContent", w.MemberToken, createProcMutation, obj("in", procInput(w, "x", map[string]any{"content": "a\x00b"})), "content"},
			{"CreateCaptureID", w.MemberToken, createProcMutation, obj("in", procInput(w, "x", map[string]any{"captureId": "a\x00b"})), "captureId"},
			{"UpdateContent", w.MemberToken, `mutation($id: ID!, $c: String) { updateProcedure(id: $id, input: {content: $c}) { id } }`, obj("id", p.ID, "c", "a\x00b"), "content"},
			{"UpdateCaptureID", w.MemberToken, `mutation($id: ID!, $c: String) { updateProcedure(id: $id, input: {captureId: $c}) { id } }`, obj("id", p.ID, "c", "\x00"), "captureId"},
			{"ProcedureSearch", w.ViewToken, `query($q: String) { procedures(filter: {search: $q}) { totalCount } }`, obj("q", "a\x00"), "search"},
			{"ProjectSearch", w.ViewToken, `query($q: String) { projects(search: $q) { totalCount } }`, obj("q", "\x00"), "search"},
			{"CategorySearch", w.ViewToken, `query($q: String) { categories(search: $q) { totalCount } }`, obj("q", "\x00"), "search"},
			{"MemberSearch", w.ViewToken, `query($q: String) { members(search: $q) { totalCount } }`, obj("q", "\x00"), "search"},
			{"TokenName", w.AdminToken, `mutation($n: String) { createToken(input: {name: $n}) { secret } }`, obj("n", "ci\x00"), "name"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := s.GraphQL(t, c.token, c.query, c.vars)
				if c.field == "" {
					wantError(t, r, "validation_failed")
				} else {
					wantError(t, r, "validation_failed", c.field)
				}
			})
		}
		if after := snapshot(t, s, w.AdminToken); after != before {
			t.Errorf("refused inputs changed the workspace:\nbefore %s\nafter  %s", before, after)
		}
	})
}

// The per-request dataloaders cache edges for the whole request. A mutation
// operation runs its root fields one after the other, so a later root
// field's procedure was rendered with the category and comments loaded
// before an earlier root field changed them: a stale response.
func TestReviewMutationRootFieldsSeeEarlierWrites(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		p := createProc(t, s, w.MemberToken, procInput(w, "P1", nil))
		var out struct {
			M1, M4 struct {
				Category struct{ Name string }
				Comments []struct{ Text string }
				Doer     *struct{ Name string }
			}
		}
		ok(t, s.GraphQL(t, w.AdminToken, `mutation($id: ID!, $cat: ID!, $m: ID!) {
			m1: updateProcedure(id: $id, input: {priority: LOW}) { category { name } comments { text } doer { name } }
			m2: updateCategory(id: $cat, input: {name: "Renamed"}) { name }
			m3: addComment(input: {procedureId: $id, text: "hello"}) { id }
			m5: updateMember(id: $m, input: {name: "New Name"}) { id }
			m4: updateProcedure(id: $id, input: {priority: HIGH}) { category { name } comments { text } doer { name } }
		}`, obj("id", p.ID, "cat", w.CategoryID, "m", w.MemberID)), &out)
		if out.M1.Category.Name != "Acme category" || len(out.M1.Comments) != 0 {
			t.Fatalf("m1 = %+v", out.M1)
		}
		if out.M4.Category.Name != "Renamed" {
			t.Errorf("m4 category = %q after m2 renamed it to Renamed", out.M4.Category.Name)
		}
		if len(out.M4.Comments) != 1 || out.M4.Comments[0].Text != "hello" {
			t.Errorf("m4 comments = %+v after m3 added one", out.M4.Comments)
		}
		if out.M4.Doer == nil || out.M4.Doer.Name != "New Name" {
			t.Errorf("m4 doer = %+v after m5 renamed the member", out.M4.Doer)
		}
		// And the response read afterwards agrees.
		got := getProc(t, s, w.AdminToken, p.ID)
		if got.Category == nil || got.Category.Name != "Renamed" || len(got.Comments) != 1 {
			t.Errorf("procedure = %s", dump(got))
		}
	})
}

// checkGraphQLGet cannot see a persisted query's operation, so a mutation
// registered by POST and then sent by GET with its hash reached gqlgen's GET
// transport, which answers 406 with no extensions.code. It must be
// method_not_allowed (405, Allow: POST) like a GET mutation sent as text.
// A query string gqlgen cannot parse (a bad %-escape, a ';') was answered
// 400 the same way, without a code.
func TestReviewGraphQLGetTransportErrors(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		auth := bearer(w.MemberToken)

		const m = `mutation { createCategory(input: {name: "via GET"}) { id } }`
		sum := sha256.Sum256([]byte(m))
		ext := `{"persistedQuery": {"version": 1, "sha256Hash": "` + hex.EncodeToString(sum[:]) + `"}}`
		r := rawGraphQL(t, s, "POST", "/graphql", auth, "application/json", []byte(`{"query": `+quote(m)+`, "extensions": `+ext+`}`))
		if len(r.Errors) > 0 {
			t.Fatalf("register: %+v", r.Errors)
		}
		before := snapshot(t, s, w.AdminToken)
		r = rawGraphQL(t, s, "GET", "/graphql?extensions="+url.QueryEscape(ext), auth, "", nil)
		wantError(t, r, "method_not_allowed")
		if r.Status != http.StatusMethodNotAllowed || r.Header.Get("Allow") != "POST" {
			t.Errorf("status %d, Allow %q; want 405 and POST", r.Status, r.Header.Get("Allow"))
		}
		if after := snapshot(t, s, w.AdminToken); after != before {
			t.Errorf("a refused GET mutation changed the workspace")
		}

		for _, q := range []string{
			"/graphql?query=" + url.QueryEscape("{ viewer { id } }") + "&x=%zz",
			"/graphql?query=" + url.QueryEscape("{ viewer { id } }") + ";x=1",
		} {
			r = rawGraphQL(t, s, "GET", q, auth, "", nil)
			wantError(t, r, "bad_request")
			if r.Status != http.StatusBadRequest {
				t.Errorf("%s: status %d, want 400", q, r.Status)
			}
		}
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
func TestReviewProjectNameCopyRace(t *testing.T) {
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

// The automatic-persisted-query cache (hash → query text) was one for the
// whole server: a hash registered by one workspace ran for every other, so
// any token could confirm a guessed query text another tenant had sent,
// literals and all (a search term, a procedure's name in a mutation).
func TestReviewPersistedQueriesPerWorkspace(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		a := s.NewWorkspace(t, "Acme", "ACME")
		b := s.NewWorkspace(t, "Beta", "BETA")
		const q = `{ procedures(filter: {search: "acquisition of Initech"}) { totalCount } }`
		sum := sha256.Sum256([]byte(q))
		ext := `{"persistedQuery": {"version": 1, "sha256Hash": "` + hex.EncodeToString(sum[:]) + `"}}`
		r := rawGraphQL(t, s, "POST", "/graphql", bearer(a.MemberToken), "application/json", []byte(`{"query": `+quote(q)+`, "extensions": `+ext+`}`))
		if len(r.Errors) > 0 {
			t.Fatalf("register: %+v", r.Errors)
		}
		// The same workspace may use the hash (another member too).
		r = rawGraphQL(t, s, "POST", "/graphql", bearer(a.ViewToken), "application/json", []byte(`{"extensions": `+ext+`}`))
		if len(r.Errors) > 0 {
			t.Fatalf("same workspace by hash: %+v", r.Errors)
		}
		// Another workspace does not learn that the query exists.
		for _, method := range []string{"POST", "GET"} {
			if method == "POST" {
				r = rawGraphQL(t, s, "POST", "/graphql", bearer(b.MemberToken), "application/json", []byte(`{"extensions": `+ext+`}`))
			} else {
				r = rawGraphQL(t, s, "GET", "/graphql?extensions="+url.QueryEscape(ext), bearer(b.MemberToken), "", nil)
			}
			wantError(t, r, "PERSISTED_QUERY_NOT_FOUND")
		}
	})
}

// Names are documented as 1–500 (procedures) or 1–200 (others) characters,
// and so must the storage layer: ent's MaxLen counted bytes, so a name of
// 500 "é" passed the core and was then refused as "name: invalid value". The
// schema now validates in characters (ent/schema maxChars).
func TestReviewMultibyteNamesAtTheLimit(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		createProc(t, s, w.MemberToken, procInput(w, strings.Repeat("é", core.MaxNameLen), nil))
		createCategory(t, s, w.MemberToken, strings.Repeat("é", core.MaxTitleLen))
		createProject(t, s, w.MemberToken, strings.Repeat("é", core.MaxTitleLen))
	})
}
