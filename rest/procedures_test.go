package rest_test

// Procedures over REST: every endpoint's success path and shape, create
// variants, GET /procedures parameters (filters, sorts, pages, aliases and
// their validation), PUT semantics, the GET-modify-PUT round trip and the
// bound on a procedure's comments.

import (
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

func TestProcedureEndpoints(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		var created, bare map[string]any

		t.Run("POST creates with every field", func(t *testing.T) {
			created = e.createProcedure(t, map[string]any{"content": "1. Open the vault"})
			want := map[string]any{
				"shortId": "RST-1", "name": "Rotate the keys", "priority": "MEDIUM", "state": "TODO",
				"content": "1. Open the vault", "categoryId": e.ws.CategoryID, "doerId": e.ws.MemberID,
				"creatorId": e.ws.MemberID, "dueAt": "2030-01-02T03:04:05.678Z", "projectId": e.ws.ProjectID,
				"workspaceId": e.ws.ID, "captureId": nil, "displayVideo": false, "isFineTunedData": false,
			}
			for k, v := range want {
				if created[k] != v {
					t.Errorf("%s = %#v, want %#v", k, created[k], v)
				}
			}
			if cat := created["category"].(map[string]any); cat["name"] != "Rest category" {
				t.Errorf("category = %v", cat)
			}
			if doer := created["doer"].(map[string]any); doer["name"] != "Max Member" || doer["email"] != "member@rst.example" {
				t.Errorf("doer = %v", doer)
			}
			if proj := created["project"].(map[string]any); proj["name"] != "Rest project" {
				t.Errorf("project = %v", proj)
			}
			if c, ok := created["comments"].([]any); !ok || len(c) != 0 {
				t.Errorf("comments = %#v, want []", created["comments"])
			}
		})

		t.Run("POST without optional fields answers them as null", func(t *testing.T) {
			bare = e.createProcedure(t, map[string]any{"name": "Bare"})
			for _, k := range []string{"content", "captureId"} {
				if bare[k] != nil {
					t.Errorf("%s = %#v, want null", k, bare[k])
				}
			}
			if bare["shortId"] != "RST-2" {
				t.Errorf("shortId = %v, want RST-2", bare["shortId"])
			}
		})

		t.Run("GET by id", func(t *testing.T) {
			got := wantOK(t, e.do(t, "GET", "/procedures/"+created["id"].(string), e.ws.ViewToken, nil))
			checkProcedure(t, got)
			if !reflect.DeepEqual(got, created) {
				t.Fatalf("GET differs from POST:\n got %v\nwant %v", got, created)
			}
		})

		for _, sid := range []string{"RST-1", "rst-1"} {
			t.Run("GET by shortId "+sid, func(t *testing.T) {
				got := wantOK(t, e.do(t, "GET", "/procedures/"+sid, e.ws.ViewToken, nil))
				checkProcedure(t, got)
				if got["id"] != created["id"] {
					t.Fatalf("GET %s = %v, want %v", sid, got["id"], created["id"])
				}
			})
		}

		t.Run("POST comment", func(t *testing.T) {
			c := wantOK(t, e.do(t, "POST", "/procedures/"+created["id"].(string)+"/comments", e.ws.MemberToken,
				map[string]any{"text": "Vault opened"}))
			checkComment(t, c)
			if c["procedureId"] != created["id"] || c["authorId"] != e.ws.MemberID || c["text"] != "Vault opened" {
				t.Fatalf("comment = %v", c)
			}
			got := wantOK(t, e.do(t, "GET", "/procedures/"+created["id"].(string), e.ws.ViewToken, nil))
			checkProcedure(t, got)
			list := got["comments"].([]any)
			if len(list) != 1 {
				t.Fatalf("comments = %v, want the new one", list)
			}
			emb := list[0].(map[string]any)
			if emb["id"] != c["id"] || emb["text"] != c["text"] || emb["createdAt"] != c["createdAt"] {
				t.Fatalf("embedded comment %v != created %v", emb, c)
			}
		})

		t.Run("POST comment by shortId", func(t *testing.T) {
			c := wantOK(t, e.do(t, "POST", "/procedures/RST-2/comments", e.ws.MemberToken, map[string]any{"text": "Second"}))
			checkComment(t, c)
			if c["procedureId"] != bare["id"] {
				t.Fatalf("comment on %v, want %v", c["procedureId"], bare["id"])
			}
		})

		t.Run("GET list", func(t *testing.T) {
			items, total := wantList(t, e.do(t, "GET", "/procedures", e.ws.ViewToken, nil), checkProcedure)
			if total != 2 || !reflect.DeepEqual(ids(items), []string{bare["id"].(string), created["id"].(string)}) {
				t.Fatalf("list = %v (total %d), want newest first", ids(items), total)
			}
		})

		t.Run("PUT", func(t *testing.T) {
			got := wantOK(t, e.do(t, "PUT", "/procedures/"+created["id"].(string), e.ws.MemberToken,
				map[string]any{"name": "Rotate every key"}))
			checkProcedure(t, got)
			if got["name"] != "Rotate every key" || got["id"] != created["id"] {
				t.Fatalf("PUT answered %v", got)
			}
		})

		t.Run("PUT by shortId", func(t *testing.T) {
			got := wantOK(t, e.do(t, "PUT", "/procedures/RST-2", e.ws.MemberToken, map[string]any{"priority": "HIGH"}))
			checkProcedure(t, got)
			if got["id"] != bare["id"] || got["priority"] != "HIGH" {
				t.Fatalf("PUT answered %v", got)
			}
		})

		t.Run("DELETE", func(t *testing.T) {
			id := created["id"].(string)
			checkDeleted(t, e.do(t, "DELETE", "/procedures/"+id, e.ws.MemberToken, nil))
			wantError(t, e.do(t, "GET", "/procedures/"+id, e.ws.ViewToken, nil), http.StatusNotFound, "not_found", "")
			wantError(t, e.do(t, "DELETE", "/procedures/"+id, e.ws.MemberToken, nil), http.StatusNotFound, "not_found", "")
			items, total := wantList(t, e.do(t, "GET", "/procedures", e.ws.ViewToken, nil), checkProcedure)
			if total != 1 || len(items) != 1 || items[0]["id"] != bare["id"] {
				t.Fatalf("after DELETE the list is %v (total %d)", ids(items), total)
			}
		})

		t.Run("DELETE by shortId", func(t *testing.T) {
			checkDeleted(t, e.do(t, "DELETE", "/procedures/RST-2", e.ws.MemberToken, nil))
			_, total := wantList(t, e.do(t, "GET", "/procedures", e.ws.ViewToken, nil), checkProcedure)
			if total != 0 {
				t.Fatalf("total = %d after deleting everything", total)
			}
		})

		t.Run("shortIds are never reused", func(t *testing.T) {
			if p := e.createProcedure(t, nil); p["shortId"] != "RST-3" {
				t.Fatalf("shortId = %v, want RST-3", p["shortId"])
			}
		})
	})
}

func TestProcedureCreateVariants(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		cases := []struct {
			name string
			over map[string]any
			want map[string]any
		}{
			{"content string", map[string]any{"content": "plain text"}, map[string]any{"content": "plain text"}},
			{"content object stored as compact JSON", map[string]any{"content": map[string]any{"steps": []any{1, "two"}}},
				map[string]any{"content": `{"steps":[1,"two"]}`}},
			{"content number", map[string]any{"content": 5}, map[string]any{"content": "5"}},
			{"content null", map[string]any{"content": nil}, map[string]any{"content": nil}},
			{"dueAt with an offset is converted to UTC", map[string]any{"dueAt": "2030-01-02T05:04:05+02:00"},
				map[string]any{"dueAt": "2030-01-02T03:04:05.000Z"}},
			{"dueAt as a date is midnight UTC", map[string]any{"dueAt": "2030-01-02"}, map[string]any{"dueAt": "2030-01-02T00:00:00.000Z"}},
			{"dueAt with microseconds renders milliseconds", map[string]any{"dueAt": "2030-01-02T03:04:05.123456Z"},
				map[string]any{"dueAt": "2030-01-02T03:04:05.123Z"}},
			{"priority LOW state IN_PROGRESS", map[string]any{"priority": "LOW", "state": "IN_PROGRESS"},
				map[string]any{"priority": "LOW", "state": "IN_PROGRESS"}},
			{"priority HIGH state COMPLETED", map[string]any{"priority": "HIGH", "state": "COMPLETED"},
				map[string]any{"priority": "HIGH", "state": "COMPLETED"}},
			{"state WAITING", map[string]any{"state": "WAITING"}, map[string]any{"state": "WAITING"}},
			{"generation options without generation", map[string]any{"generateProcedure": false, "contentType": "api",
				"docStyle": "detailed", "language": "python", "content": "GET /x"}, map[string]any{"content": "GET /x"}},
			{"captureId and flags", map[string]any{"captureId": "cap-7", "displayVideo": true, "isFineTunedData": true},
				map[string]any{"captureId": "cap-7", "displayVideo": true, "isFineTunedData": true}},
			{"read-only position and workspaceId are ignored", map[string]any{"position": 99999, "workspaceId": e.ws.ProjectID},
				map[string]any{"workspaceId": e.ws.ID}},
			{"admin may choose another doer", map[string]any{"doerId": e.ws.AdminID}, map[string]any{"doerId": e.ws.AdminID}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				p := e.createProcedure(t, tc.over)
				for k, v := range tc.want {
					if !reflect.DeepEqual(p[k], v) {
						t.Errorf("%s = %#v, want %#v", k, p[k], v)
					}
				}
				if p["position"] == 99999.0 {
					t.Errorf("position was taken from the body")
				}
			})
		}
		t.Run("Content-Type with parameters", func(t *testing.T) {
			raw := fmt.Sprintf(`{"name":"charset","priority":"LOW","state":"TODO","dueAt":"2030-01-01","categoryId":%q,"doerId":%q,"projectId":%q}`,
				e.ws.CategoryID, e.ws.MemberID, e.ws.ProjectID)
			r := e.send(t, call{method: "POST", path: "/procedures", token: e.ws.MemberToken, body: []byte(raw),
				contentType: "application/json; charset=utf-8"})
			checkProcedure(t, wantOK(t, r))
		})
		t.Run("new procedures go to the end of their column", func(t *testing.T) {
			a := e.createProcedure(t, map[string]any{"state": "WAITING", "name": "first waiting"})
			b := e.createProcedure(t, map[string]any{"state": "WAITING", "name": "second waiting"})
			if !(b["position"].(float64) > a["position"].(float64)) {
				t.Fatalf("positions %v then %v", a["position"], b["position"])
			}
		})
	})
}

// listFixture is the data set of the list tests: 22 procedures across two
// projects, two categories and two doers, with ties on dueAt and name.
type listFixture struct {
	e        *env
	projectB string // "Another project", sorts before "Rest project"
	category string // the second category
	all      []map[string]any
}

func newListFixture(t *testing.T, e *env) *listFixture {
	t.Helper()
	f := &listFixture{e: e}
	f.projectB = e.createProject(t, map[string]any{"name": "Another project"})["id"].(string)
	f.category = e.createCategory(t, "Second category")["id"].(string)
	type row struct {
		name, content, state, priority, due, cat, doer, proj string
	}
	C1, C2, M, A, P1, P2 := e.ws.CategoryID, f.category, e.ws.MemberID, e.ws.AdminID, e.ws.ProjectID, f.projectB
	rows := []row{
		{"Alpha", "first step", "TODO", "LOW", "2030-01-01T00:00:00Z", C1, M, P1},
		{"Bravo", "has a NeEdLe inside", "IN_PROGRESS", "MEDIUM", "2030-01-05T00:00:00Z", C2, A, P2},
		{"Charlie", "", "COMPLETED", "HIGH", "2030-01-10T00:00:00Z", C1, A, P1},
		{"Delta needle", "", "WAITING", "LOW", "2030-01-10T00:00:00Z", C2, M, P2},
		{"Echo", "", "TODO", "HIGH", "2030-01-20T00:00:00Z", C1, M, P1},
	}
	for i := 0; i < 17; i++ {
		rows = append(rows, row{"Same", "", "TODO", "MEDIUM", "2030-02-01T00:00:00Z", C1, M, P1})
	}
	for _, r := range rows {
		over := map[string]any{"name": r.name, "state": r.state, "priority": r.priority, "dueAt": r.due,
			"categoryId": r.cat, "doerId": r.doer, "projectId": r.proj}
		if r.content != "" {
			over["content"] = r.content
		}
		f.all = append(f.all, e.createProcedure(t, over))
	}
	return f
}

// idsOf returns the ids of the fixture's procedures at indexes.
func (f *listFixture) idsOf(indexes ...int) []string {
	out := make([]string, len(indexes))
	for i, n := range indexes {
		out[i] = f.all[n]["id"].(string)
	}
	return out
}

// sorted returns the fixture's ids ordered by key then id, descending when desc.
func (f *listFixture) sorted(key func(p map[string]any) string, desc bool) []string {
	ps := append([]map[string]any(nil), f.all...)
	sort.Slice(ps, func(i, j int) bool {
		ki, kj := key(ps[i]), key(ps[j])
		if ki == kj {
			ki, kj = ps[i]["id"].(string), ps[j]["id"].(string)
		}
		if desc {
			return ki > kj
		}
		return ki < kj
	})
	return ids(ps)
}

func (f *listFixture) list(t testing.TB, query string) ([]string, int) {
	t.Helper()
	items, total := wantList(t, f.e.do(t, "GET", "/procedures"+query, f.e.ws.ViewToken, nil), checkProcedure)
	return ids(items), total
}

func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

func TestProcedureListParameters(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		f := newListFixture(t, e)
		n := len(f.all)
		creation := ids(f.all)
		newest := reversed(creation)
		byName := f.sorted(func(p map[string]any) string { return p["name"].(string) }, false)
		byDue := f.sorted(func(p map[string]any) string { return p["dueAt"].(string) }, false)
		byProject := f.sorted(func(p map[string]any) string { return p["project"].(map[string]any)["name"].(string) }, false)
		q := url.QueryEscape

		cases := []struct {
			name  string
			query string
			want  []string // exact page, in order
			total int
		}{
			{"default is createdAt desc, 20 a page", "", newest[:20], n},
			{"page 2 of the default size", "?page=2", newest[20:], n},
			{"page past the end is empty", "?page=9", []string{}, n},
			{"limit", "?limit=5", newest[:5], n},
			{"alias pageSize", "?pageSize=5", newest[:5], n},
			{"alias perPage", "?perPage=5&page=2", newest[5:10], n},
			{"limit 100 is the maximum", "?limit=100", newest, n},
			{"sortOrder asc", "?sortOrder=asc&limit=100", creation, n},
			{"alias order", "?order=asc&limit=100", creation, n},
			{"sortBy createdAt desc explicitly", "?sortBy=createdAt&sortOrder=desc&limit=100", newest, n},
			{"sortBy name asc, ties on id", "?sortBy=name&order=asc&limit=100", byName, n},
			{"sortBy name desc reverses ties too", "?sortBy=name&order=desc&limit=100", reversed(byName), n},
			{"sortBy dueAt asc", "?sortBy=dueAt&order=asc&limit=100", byDue, n},
			{"sortBy dueAt desc", "?sortBy=dueAt&limit=100", reversed(byDue), n},
			{"sortBy project.name asc", "?sortBy=project.name&order=asc&limit=100", byProject, n},
			{"sortBy project.name desc", "?sortBy=project.name&order=desc&limit=100", reversed(byProject), n},
			{"search name, case-insensitive", "?search=NEEDLE&order=asc", f.idsOf(1, 3), 2},
			{"alias q", "?q=needle&order=asc", f.idsOf(1, 3), 2},
			{"search content", "?search=" + q("FIRST STEP"), f.idsOf(0), 1},
			{"search shortId", "?search=rst-3", f.idsOf(2), 1},
			{"search with no match", "?search=zebra", []string{}, 0},
			{"categoryId", "?order=asc&categoryId=" + f.category, f.idsOf(1, 3), 2},
			{"doerId", "?order=asc&doerId=" + e.ws.AdminID, f.idsOf(1, 2), 2},
			{"projectId", "?order=asc&projectId=" + f.projectB, f.idsOf(1, 3), 2},
			{"state", "?state=WAITING", f.idsOf(3), 1},
			{"priority", "?order=asc&priority=HIGH", f.idsOf(2, 4), 2},
			{"startedAt and dueAt bound dueAt inclusively", "?order=asc&startedAt=2030-01-05T00:00:00Z&dueAt=" + q("2030-01-10T00:00:00.000Z"), f.idsOf(1, 2, 3), 3},
			{"dueAt alone", "?order=asc&dueAt=2030-01-05", f.idsOf(0, 1), 2},
			{"startedAt alone", "?order=asc&limit=3&startedAt=2030-01-20", f.idsOf(4, 5, 6), 18},
			{"window with an offset", "?order=asc&startedAt=" + q("2030-01-05T02:00:00+02:00") + "&dueAt=" + q("2030-01-05T00:00:00Z"), f.idsOf(1), 1},
			{"filters combine", "?categoryId=" + e.ws.CategoryID + "&state=TODO&priority=HIGH", f.idsOf(4), 1},
			{"total counts every match, not the page", "?state=TODO&limit=2&order=asc", f.idsOf(0, 4), 19},
			{"unknown category matches nothing", "?categoryId=" + f.category[:35] + "0", []string{}, 0},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				got, total := f.list(t, tc.query)
				if total != tc.total {
					t.Errorf("meta.total = %d, want %d", total, tc.total)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("ids = %v\n want %v", got, tc.want)
				}
			})
		}

		pages := []struct {
			name  string
			query string
			limit int
			want  []string
		}{
			{"createdAt desc", "", 7, newest},
			{"dueAt asc with ties", "&sortBy=dueAt&order=asc", 3, byDue},
			{"name desc with ties", "&sortBy=name&sortOrder=desc", 4, reversed(byName)},
			{"project.name asc with ties", "&sortBy=project.name&order=asc", 5, byProject},
		}
		for _, pc := range pages {
			t.Run("consecutive pages never overlap: "+pc.name, func(t *testing.T) {
				var got []string
				seen := map[string]bool{}
				for page := 1; ; page++ {
					ids, total := f.list(t, fmt.Sprintf("?limit=%d&page=%d%s", pc.limit, page, pc.query))
					if total != n {
						t.Fatalf("page %d: total %d, want %d", page, total, n)
					}
					if len(ids) > pc.limit {
						t.Fatalf("page %d has %d items, limit %d", page, len(ids), pc.limit)
					}
					if len(ids) == 0 {
						break
					}
					for _, id := range ids {
						if seen[id] {
							t.Fatalf("page %d repeats %s", page, id)
						}
						seen[id] = true
					}
					got = append(got, ids...)
				}
				if !reflect.DeepEqual(got, pc.want) {
					t.Fatalf("pages concatenated = %v\n want %v", got, pc.want)
				}
			})
		}
	})
}

func TestProcedureListInvalidParameters(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		e.createProcedure(t, nil)
		cases := []struct{ name, query, field string }{
			{"limit=0", "limit=0", "limit"},
			{"limit=101", "limit=101", "limit"},
			{"limit=-1", "limit=-1", "limit"},
			{"limit=1.5", "limit=1.5", "limit"},
			{"limit with a sign", "limit=%2B5", "limit"},
			{"limit with spaces", "limit=%205", "limit"},
			{"page with a sign", "page=%2B2", "page"},
			{"limit empty", "limit=", "limit"},
			{"pageSize=0 names pageSize", "pageSize=0", "pageSize"},
			{"perPage=abc names perPage", "perPage=abc", "perPage"},
			{"page=0", "page=0", "page"},
			{"page=abc", "page=abc", "page"},
			{"page=-2", "page=-2", "page"},
			{"sortBy=bogus", "sortBy=bogus", "sortBy"},
			{"sortBy is case-sensitive", "sortBy=createdat", "sortBy"},
			{"sortOrder=DESC", "sortOrder=DESC", "sortOrder"},
			{"order=up names order", "order=up", "order"},
			{"state=DONE", "state=DONE", "state"},
			{"priority=URGENT", "priority=URGENT", "priority"},
			{"startedAt=yesterday", "startedAt=yesterday", "startedAt"},
			{"dueAt=2030-13-01", "dueAt=2030-13-01", "dueAt"},
			{"dueAt before startedAt", "startedAt=2030-02-01&dueAt=2030-01-01", "dueAt"},
			{"categoryId=not-a-uuid", "categoryId=not-a-uuid", "categoryId"},
			{"doerId=123", "doerId=123", "doerId"},
			{"projectId=x", "projectId=x", "projectId"},
			{"search over 200 characters", "search=" + strings.Repeat("a", 201), "search"},
			{"unknown parameter", "colour=red", "colour"},
			{"another list's parameter", "include=comments", "include"},
			{"same parameter twice", "limit=5&limit=6", "limit"},
			{"sortBy twice", "sortBy=name&sortBy=dueAt", "sortBy"},
			{"search twice", "search=a&search=b", "search"},
			{"a parameter and its alias", "sortOrder=asc&order=desc", "order"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				wantError(t, e.do(t, "GET", "/procedures?"+tc.query, e.ws.ViewToken, nil), http.StatusBadRequest, "validation_failed", tc.field)
			})
		}
	})
}

func TestProcedureUpdate(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		other := e.createCategory(t, "Other category")["id"].(string)
		otherProject := e.createProject(t, map[string]any{"name": "Other project"})["id"].(string)

		// Each case updates a fresh procedure; keys not in want must be
		// unchanged (updatedAt excepted).
		cases := []struct {
			name   string
			create map[string]any
			body   map[string]any
			want   map[string]any
			// occupant, when set, is created in the column the procedure
			// moves to: the moved procedure must land after it.
			occupant map[string]any
		}{
			{name: "name only", body: map[string]any{"name": "Renamed"}, want: map[string]any{"name": "Renamed"}},
			{name: "name is trimmed", body: map[string]any{"name": "  Padded  "}, want: map[string]any{"name": "Padded"}},
			{name: "priority", body: map[string]any{"priority": "HIGH"}, want: map[string]any{"priority": "HIGH"}},
			{name: "content", body: map[string]any{"content": "new text"}, want: map[string]any{"content": "new text"}},
			{name: "null clears content", create: map[string]any{"content": "old"}, body: map[string]any{"content": nil},
				want: map[string]any{"content": nil}},
			{name: "null clears categoryId", body: map[string]any{"categoryId": nil}, want: map[string]any{"categoryId": nil, "category": nil}},
			{name: "null clears doerId", body: map[string]any{"doerId": nil}, want: map[string]any{"doerId": nil, "doer": nil}},
			{name: "categoryId", body: map[string]any{"categoryId": other},
				want: map[string]any{"categoryId": other, "category": map[string]any{"id": other, "name": "Other category"}}},
			{name: "doerId", body: map[string]any{"doerId": e.ws.AdminID},
				want: map[string]any{"doerId": e.ws.AdminID, "doer": map[string]any{"id": e.ws.AdminID, "name": "Ada Admin", "email": "admin@rst.example"}}},
			{name: "projectId moves to the end of the new column", body: map[string]any{"projectId": otherProject},
				want:     map[string]any{"projectId": otherProject, "project": map[string]any{"id": otherProject, "name": "Other project"}},
				occupant: map[string]any{"projectId": otherProject, "name": "occupant"}},
			{name: "dueAt", body: map[string]any{"dueAt": "2031-05-06T07:08:09.010+01:00"}, want: map[string]any{"dueAt": "2031-05-06T06:08:09.010Z"}},
			{name: "state is accepted and moves to the end of the new column", body: map[string]any{"state": "COMPLETED"},
				want: map[string]any{"state": "COMPLETED"}, occupant: map[string]any{"state": "COMPLETED", "name": "occupant"}},
			{name: "position", body: map[string]any{"position": 12.5}, want: map[string]any{"position": 12.5}},
			{name: "state with position", body: map[string]any{"state": "WAITING", "position": 7},
				want: map[string]any{"state": "WAITING", "position": 7.0}},
			{name: "captureId and flags", body: map[string]any{"captureId": "cap-1", "displayVideo": true, "isFineTunedData": true},
				want: map[string]any{"captureId": "cap-1", "displayVideo": true, "isFineTunedData": true}},
			{name: "null clears captureId", create: map[string]any{"captureId": "cap-2"}, body: map[string]any{"captureId": nil},
				want: map[string]any{"captureId": nil}},
			{name: "empty object changes nothing", body: map[string]any{}, want: map[string]any{}},
			{name: "read-only fields are ignored", body: map[string]any{
				"name": "Only this", "id": e.ws.ProjectID, "shortId": "XYZ-9", "creatorId": e.ws.AdminID,
				"createdAt": "2000-01-01T00:00:00.000Z", "updatedAt": "2000-01-01T00:00:00.000Z", "workspaceId": e.ws.CategoryID,
				"category": map[string]any{"id": other, "name": "x"}, "doer": nil, "project": "nonsense",
				"comments": []any{map[string]any{"id": "c", "text": "t"}}, "commentCount": 7,
			}, want: map[string]any{"name": "Only this"}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				before := e.createProcedure(t, tc.create)
				var occupant map[string]any
				if tc.occupant != nil {
					occupant = e.createProcedure(t, tc.occupant)
				}
				id := before["id"].(string)
				got := wantOK(t, e.do(t, "PUT", "/procedures/"+id, e.ws.MemberToken, tc.body))
				checkProcedure(t, got)
				for k, v := range tc.want {
					if !reflect.DeepEqual(got[k], v) {
						t.Errorf("%s = %#v, want %#v", k, got[k], v)
					}
				}
				for _, k := range procedureKeys {
					if _, changed := tc.want[k]; changed || k == "updatedAt" || (k == "position" && occupant != nil) {
						continue
					}
					if !reflect.DeepEqual(got[k], before[k]) {
						t.Errorf("%s changed from %#v to %#v", k, before[k], got[k])
					}
				}
				if occupant != nil && !(got["position"].(float64) > occupant["position"].(float64)) {
					t.Errorf("position %v is not after the new column's last procedure (%v)", got["position"], occupant["position"])
				}
				if got["updatedAt"].(string) < before["updatedAt"].(string) {
					t.Errorf("updatedAt went back from %v to %v", before["updatedAt"], got["updatedAt"])
				}
				again := wantOK(t, e.do(t, "GET", "/procedures/"+id, e.ws.ViewToken, nil))
				if !reflect.DeepEqual(again, got) {
					t.Errorf("GET after PUT differs:\n got %v\nwant %v", again, got)
				}
			})
		}

		t.Run("state change lands after the column's last procedure", func(t *testing.T) {
			last := e.createProcedure(t, map[string]any{"state": "IN_PROGRESS", "name": "in progress"})
			p := e.createProcedure(t, map[string]any{"name": "mover"})
			got := wantOK(t, e.do(t, "PUT", "/procedures/"+p["id"].(string), e.ws.MemberToken, map[string]any{"state": "IN_PROGRESS"}))
			if !(got["position"].(float64) > last["position"].(float64)) {
				t.Fatalf("position %v is not after %v", got["position"], last["position"])
			}
		})

		invalid := []struct {
			name  string
			body  map[string]any
			field string
		}{
			{"unknown field", map[string]any{"name": "x", "colour": "red"}, "colour"},
			{"create-only field", map[string]any{"generateProcedure": true}, "generateProcedure"},
			{"null name", map[string]any{"name": nil}, "name"},
			{"empty name", map[string]any{"name": "   "}, "name"},
			{"null priority", map[string]any{"priority": nil}, "priority"},
			{"null state", map[string]any{"state": nil}, "state"},
			{"null projectId", map[string]any{"projectId": nil}, "projectId"},
			{"null dueAt", map[string]any{"dueAt": nil}, "dueAt"},
			{"null position", map[string]any{"position": nil}, "position"},
			{"state DONE", map[string]any{"state": "DONE"}, "state"},
			{"priority URGENT", map[string]any{"priority": "URGENT"}, "priority"},
			{"content must be a string", map[string]any{"content": map[string]any{"a": 1}}, "content"},
			{"position must be a number", map[string]any{"position": "1"}, "position"},
			{"dueAt not a timestamp", map[string]any{"dueAt": "next week"}, "dueAt"},
			{"categoryId not an id", map[string]any{"categoryId": "nope"}, "categoryId"},
			{"unknown doer", map[string]any{"doerId": e.ws.CategoryID}, "doerId"},
		}
		target := e.createProcedure(t, map[string]any{"name": "target"})
		for _, tc := range invalid {
			t.Run("invalid: "+tc.name, func(t *testing.T) {
				before := e.snapshot(t)
				wantError(t, e.do(t, "PUT", "/procedures/"+target["id"].(string), e.ws.MemberToken, tc.body),
					http.StatusBadRequest, "validation_failed", tc.field)
				e.unchanged(t, before)
			})
		}
	})
}

func TestProcedureRoundTrip(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		p := e.createProcedure(t, map[string]any{"content": "steps", "captureId": "cap"})
		wantOK(t, e.do(t, "POST", "/procedures/"+p["id"].(string)+"/comments", e.ws.MemberToken, map[string]any{"text": "hi"}))
		e.createProcedure(t, map[string]any{"name": "Without optional fields", "categoryId": e.ws.CategoryID})

		sources := []struct{ name, path string }{
			{"from GET one", "/procedures/" + p["id"].(string)},
			{"from a list item", "/procedures?order=desc"},
		}
		for i, src := range sources {
			t.Run(src.name, func(t *testing.T) {
				r := e.do(t, "GET", src.path, e.ws.MemberToken, nil)
				var before map[string]any
				if strings.Contains(src.path, "?") {
					items, _ := wantList(t, r, checkProcedure)
					before = items[0]
				} else {
					before = wantOK(t, r)
				}
				id := before["id"].(string)
				body := map[string]any{}
				for k, v := range before {
					body[k] = v
				}
				body["name"] = fmt.Sprintf("Round trip %d", i)
				got := wantOK(t, e.do(t, "PUT", "/procedures/"+id, e.ws.MemberToken, body))
				checkProcedure(t, got)
				for _, k := range procedureKeys {
					switch k {
					case "name":
						if got[k] != body["name"] {
							t.Errorf("name = %v, want %v", got[k], body["name"])
						}
					case "updatedAt":
						if got[k].(string) < before[k].(string) {
							t.Errorf("updatedAt went back: %v -> %v", before[k], got[k])
						}
					default:
						if !reflect.DeepEqual(got[k], before[k]) {
							t.Errorf("%s changed from %#v to %#v", k, before[k], got[k])
						}
					}
				}
			})
		}
	})
}
