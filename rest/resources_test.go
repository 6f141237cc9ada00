package rest_test

// Projects, categories and members over REST: every endpoint's success path
// and shape, PUT semantics and round trips, delete rules, and the list
// parameters shared by these lists (search, page, limit: default 100, max 500).

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

func TestProjectEndpoints(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		var launch, bare map[string]any

		t.Run("POST with dates", func(t *testing.T) {
			launch = e.createProject(t, map[string]any{"name": "Launch", "startedAt": "2030-01-01", "dueAt": "2030-02-01T10:00:00+01:00"})
			want := map[string]any{"name": "Launch", "workspaceId": e.ws.ID, "startedAt": "2030-01-01T00:00:00.000Z", "dueAt": "2030-02-01T09:00:00.000Z"}
			for k, v := range want {
				if launch[k] != v {
					t.Errorf("%s = %#v, want %#v", k, launch[k], v)
				}
			}
		})
		t.Run("POST with name only answers null dates", func(t *testing.T) {
			bare = e.createProject(t, map[string]any{"name": "Bare", "startedAt": nil})
			if bare["startedAt"] != nil || bare["dueAt"] != nil {
				t.Fatalf("dates = %v, %v; want null", bare["startedAt"], bare["dueAt"])
			}
		})
		t.Run("GET one", func(t *testing.T) {
			got := wantOK(t, e.do(t, "GET", "/projects/"+launch["id"].(string), e.ws.ViewToken, nil))
			checkProject(t, got)
			if !reflect.DeepEqual(got, launch) {
				t.Fatalf("GET = %v, want %v", got, launch)
			}
		})
		t.Run("GET list sorted by name", func(t *testing.T) {
			items, total := wantList(t, e.do(t, "GET", "/projects", e.ws.ViewToken, nil), checkProject)
			want := []string{bare["id"].(string), launch["id"].(string), e.ws.ProjectID} // Bare, Launch, Rest project
			if total != 3 || !reflect.DeepEqual(ids(items), want) {
				t.Fatalf("list = %v (total %d), want %v", ids(items), total, want)
			}
		})

		updates := []struct {
			name string
			body map[string]any
			want map[string]any
		}{
			{"name only", map[string]any{"name": "Launch v2"}, map[string]any{"name": "Launch v2"}},
			{"dueAt only", map[string]any{"dueAt": "2030-03-01"}, map[string]any{"dueAt": "2030-03-01T00:00:00.000Z"}},
			{"null clears startedAt", map[string]any{"startedAt": nil}, map[string]any{"startedAt": nil}},
			{"startedAt again", map[string]any{"startedAt": "2030-01-15T00:00:00Z"}, map[string]any{"startedAt": "2030-01-15T00:00:00.000Z"}},
			{"dueAt equal to startedAt", map[string]any{"dueAt": "2030-01-15"}, map[string]any{"dueAt": "2030-01-15T00:00:00.000Z"}},
			{"read-only fields are ignored", map[string]any{"name": "Launch v3", "id": e.ws.CategoryID, "workspaceId": e.ws.ProjectID,
				"createdAt": "2000-01-01T00:00:00.000Z", "updatedAt": "2000-01-01T00:00:00.000Z"}, map[string]any{"name": "Launch v3"}},
			{"empty object", map[string]any{}, map[string]any{}},
		}
		for _, tc := range updates {
			t.Run("PUT "+tc.name, func(t *testing.T) {
				id := launch["id"].(string)
				before := wantOK(t, e.do(t, "GET", "/projects/"+id, e.ws.ViewToken, nil))
				got := wantOK(t, e.do(t, "PUT", "/projects/"+id, e.ws.MemberToken, tc.body))
				checkProject(t, got)
				for k := range before {
					want, changed := tc.want[k]
					switch {
					case changed:
						if got[k] != want {
							t.Errorf("%s = %#v, want %#v", k, got[k], want)
						}
					case k == "updatedAt":
						if got[k].(string) < before[k].(string) {
							t.Errorf("updatedAt went back")
						}
					case got[k] != before[k]:
						t.Errorf("%s changed from %#v to %#v", k, before[k], got[k])
					}
				}
			})
		}

		t.Run("PUT round trip", func(t *testing.T) {
			id := launch["id"].(string)
			before := wantOK(t, e.do(t, "GET", "/projects/"+id, e.ws.ViewToken, nil))
			body := map[string]any{}
			for k, v := range before {
				body[k] = v
			}
			body["name"] = "Round trip"
			got := wantOK(t, e.do(t, "PUT", "/projects/"+id, e.ws.MemberToken, body))
			checkProject(t, got)
			for k := range before {
				if k != "name" && k != "updatedAt" && got[k] != before[k] {
					t.Errorf("%s changed from %#v to %#v", k, before[k], got[k])
				}
			}
			if got["name"] != "Round trip" {
				t.Errorf("name = %v", got["name"])
			}
		})

		invalid := []struct {
			name, method string
			body         map[string]any
			field        string
		}{
			{"POST dueAt before startedAt", "POST", map[string]any{"name": "x", "startedAt": "2030-02-01", "dueAt": "2030-01-01"}, "dueAt"},
			{"POST without name", "POST", map[string]any{"startedAt": "2030-02-01"}, "name"},
			{"POST blank name", "POST", map[string]any{"name": " "}, "name"},
			{"POST name over 200 characters", "POST", map[string]any{"name": strings.Repeat("n", 201)}, "name"},
			{"POST unknown field", "POST", map[string]any{"name": "x", "owner": "me"}, "owner"},
			{"POST read-only id", "POST", map[string]any{"name": "x", "id": e.ws.ProjectID}, "id"},
			{"PUT dueAt before the stored startedAt", "PUT", map[string]any{"dueAt": "2030-01-14"}, "dueAt"},
			{"PUT startedAt after the stored dueAt", "PUT", map[string]any{"startedAt": "2030-01-16"}, "dueAt"},
			{"PUT both out of order", "PUT", map[string]any{"startedAt": "2031-01-01", "dueAt": "2030-01-01"}, "dueAt"},
			{"PUT null name", "PUT", map[string]any{"name": nil}, "name"},
			{"PUT unknown field", "PUT", map[string]any{"colour": "red"}, "colour"},
			{"PUT bad timestamp", "PUT", map[string]any{"startedAt": "2030-02-30"}, "startedAt"},
		}
		for _, tc := range invalid {
			t.Run("invalid: "+tc.name, func(t *testing.T) {
				path := "/projects"
				if tc.method == "PUT" {
					path += "/" + launch["id"].(string)
				}
				before := e.snapshot(t)
				wantError(t, e.do(t, tc.method, path, e.ws.MemberToken, tc.body), http.StatusBadRequest, "validation_failed", tc.field)
				e.unchanged(t, before)
			})
		}

		t.Run("DELETE an empty project", func(t *testing.T) {
			id := bare["id"].(string)
			checkDeleted(t, e.do(t, "DELETE", "/projects/"+id, e.ws.MemberToken, nil))
			wantError(t, e.do(t, "GET", "/projects/"+id, e.ws.ViewToken, nil), http.StatusNotFound, "not_found", "")
			_, total := wantList(t, e.do(t, "GET", "/projects", e.ws.ViewToken, nil), checkProject)
			if total != 2 {
				t.Fatalf("total = %d after delete, want 2", total)
			}
		})
		t.Run("DELETE a project with procedures is a conflict", func(t *testing.T) {
			p := e.createProcedure(t, map[string]any{"projectId": launch["id"]})
			before := e.snapshot(t)
			wantError(t, e.do(t, "DELETE", "/projects/"+launch["id"].(string), e.ws.MemberToken, nil), http.StatusConflict, "conflict", "")
			e.unchanged(t, before)
			checkDeleted(t, e.do(t, "DELETE", "/procedures/"+p["id"].(string), e.ws.MemberToken, nil))
			checkDeleted(t, e.do(t, "DELETE", "/projects/"+launch["id"].(string), e.ws.MemberToken, nil))
		})
	})
}

func TestCategoryEndpoints(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		var ops map[string]any

		t.Run("POST", func(t *testing.T) {
			ops = e.createCategory(t, "  Operations ")
			if ops["name"] != "Operations" || ops["workspaceId"] != e.ws.ID {
				t.Fatalf("category = %v", ops)
			}
		})
		t.Run("GET one", func(t *testing.T) {
			got := wantOK(t, e.do(t, "GET", "/categories/"+ops["id"].(string), e.ws.ViewToken, nil))
			checkCategory(t, got)
			if !reflect.DeepEqual(got, ops) {
				t.Fatalf("GET = %v, want %v", got, ops)
			}
		})
		t.Run("GET list sorted by name", func(t *testing.T) {
			items, total := wantList(t, e.do(t, "GET", "/categories", e.ws.ViewToken, nil), checkCategory)
			want := []string{ops["id"].(string), e.ws.CategoryID}
			if total != 2 || !reflect.DeepEqual(ids(items), want) {
				t.Fatalf("list = %v (total %d), want %v", ids(items), total, want)
			}
		})
		t.Run("PUT name", func(t *testing.T) {
			got := wantOK(t, e.do(t, "PUT", "/categories/"+ops["id"].(string), e.ws.MemberToken, map[string]any{"name": "Ops"}))
			checkCategory(t, got)
			if got["name"] != "Ops" || got["id"] != ops["id"] || got["createdAt"] != ops["createdAt"] {
				t.Fatalf("PUT answered %v", got)
			}
		})
		t.Run("PUT empty object changes nothing", func(t *testing.T) {
			got := wantOK(t, e.do(t, "PUT", "/categories/"+ops["id"].(string), e.ws.MemberToken, map[string]any{}))
			if got["name"] != "Ops" {
				t.Fatalf("name = %v", got["name"])
			}
		})
		t.Run("PUT round trip", func(t *testing.T) {
			before := wantOK(t, e.do(t, "GET", "/categories/"+ops["id"].(string), e.ws.ViewToken, nil))
			body := map[string]any{}
			for k, v := range before {
				body[k] = v
			}
			body["name"] = "Operations again"
			got := wantOK(t, e.do(t, "PUT", "/categories/"+ops["id"].(string), e.ws.MemberToken, body))
			checkCategory(t, got)
			for k := range before {
				if k != "name" && k != "updatedAt" && got[k] != before[k] {
					t.Errorf("%s changed from %#v to %#v", k, before[k], got[k])
				}
			}
			if got["name"] != "Operations again" {
				t.Errorf("name = %v", got["name"])
			}
		})
		invalid := []struct {
			name, method string
			body         map[string]any
			field        string
		}{
			{"POST without name", "POST", map[string]any{}, "name"},
			{"POST null name", "POST", map[string]any{"name": nil}, "name"},
			{"POST unknown field", "POST", map[string]any{"name": "x", "colour": "red"}, "colour"},
			{"PUT blank name", "PUT", map[string]any{"name": ""}, "name"},
			{"PUT null name", "PUT", map[string]any{"name": nil}, "name"},
			{"PUT unknown field", "PUT", map[string]any{"parent": "x"}, "parent"},
		}
		for _, tc := range invalid {
			t.Run("invalid: "+tc.name, func(t *testing.T) {
				path := "/categories"
				if tc.method == "PUT" {
					path += "/" + ops["id"].(string)
				}
				before := e.snapshot(t)
				wantError(t, e.do(t, tc.method, path, e.ws.MemberToken, tc.body), http.StatusBadRequest, "validation_failed", tc.field)
				e.unchanged(t, before)
			})
		}
		t.Run("DELETE leaves its procedures uncategorised", func(t *testing.T) {
			p := e.createProcedure(t, map[string]any{"categoryId": ops["id"]})
			checkDeleted(t, e.do(t, "DELETE", "/categories/"+ops["id"].(string), e.ws.MemberToken, nil))
			wantError(t, e.do(t, "GET", "/categories/"+ops["id"].(string), e.ws.ViewToken, nil), http.StatusNotFound, "not_found", "")
			got := wantOK(t, e.do(t, "GET", "/procedures/"+p["id"].(string), e.ws.ViewToken, nil))
			checkProcedure(t, got)
			if got["categoryId"] != nil || got["category"] != nil {
				t.Fatalf("categoryId = %v, category = %v; want null", got["categoryId"], got["category"])
			}
			_, total := wantList(t, e.do(t, "GET", "/categories", e.ws.ViewToken, nil), checkCategory)
			if total != 1 {
				t.Fatalf("total = %d after delete, want 1", total)
			}
		})
	})
}

func TestMemberEndpoints(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		t.Run("GET list", func(t *testing.T) {
			items, total := wantList(t, e.do(t, "GET", "/members", e.ws.ViewToken, nil), checkMember)
			want := []string{e.ws.AdminID, e.ws.MemberID, e.ws.ViewerID} // Ada, Max, Vic
			if total != 3 || !reflect.DeepEqual(ids(items), want) {
				t.Fatalf("list = %v (total %d), want %v", ids(items), total, want)
			}
			roles := []string{items[0]["role"].(string), items[1]["role"].(string), items[2]["role"].(string)}
			if !reflect.DeepEqual(roles, []string{"ADMIN", "MEMBER", "VIEWER"}) {
				t.Fatalf("roles = %v", roles)
			}
			for _, m := range items {
				if m["workspaceId"] != e.ws.ID {
					t.Fatalf("workspaceId = %v", m["workspaceId"])
				}
			}
		})
		t.Run("GET one", func(t *testing.T) {
			m := wantOK(t, e.do(t, "GET", "/members/"+e.ws.ViewerID, e.ws.ViewToken, nil))
			checkMember(t, m)
			if m["name"] != "Vic Viewer" || m["email"] != "viewer@rst.example" || m["role"] != "VIEWER" {
				t.Fatalf("member = %v", m)
			}
		})
		for _, tc := range []struct{ query, want string }{{"search=VIC", e.ws.ViewerID}, {"q=member@rst", e.ws.MemberID}} {
			t.Run("search "+tc.query, func(t *testing.T) {
				items, total := wantList(t, e.do(t, "GET", "/members?"+tc.query, e.ws.ViewToken, nil), checkMember)
				if total != 1 || len(items) != 1 || items[0]["id"] != tc.want {
					t.Fatalf("list = %v (total %d), want [%s]", ids(items), total, tc.want)
				}
			})
		}
		t.Run("unknown id", func(t *testing.T) {
			wantError(t, e.do(t, "GET", "/members/"+e.ws.ProjectID, e.ws.ViewToken, nil), http.StatusNotFound, "not_found", "")
			wantError(t, e.do(t, "GET", "/members/nobody", e.ws.ViewToken, nil), http.StatusNotFound, "not_found", "")
		})
	})
}

// TestOtherListParameters covers GET /projects, /categories and /members:
// search (alias q), page, limit (aliases; default 100, max 500), and strict
// validation.
func TestOtherListParameters(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		ctx, err := e.srv.Service.ActAsAdmin(context.Background(), e.ws.ID)
		if err != nil {
			t.Fatal(err)
		}
		// 101 more of each, so that the default page (100) is observable.
		for i := 0; i < 101; i++ {
			if _, err := e.srv.Service.CreateProject(ctx, core.ProjectInput{Name: core.Some(fmt.Sprintf("Item %03d", i))}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.srv.Service.CreateCategory(ctx, fmt.Sprintf("Item %03d", i)); err != nil {
				t.Fatal(err)
			}
			if _, err := e.srv.Service.AddMember(ctx, core.MemberInput{Name: core.Some(fmt.Sprintf("Item %03d", i)),
				Email: core.Some(fmt.Sprintf("item%03d@rst.example", i)), Role: core.Some("VIEWER")}); err != nil {
				t.Fatal(err)
			}
		}
		lists := []struct {
			path  string
			check func(testing.TB, map[string]any)
			total int
		}{
			{"/projects", checkProject, 102},
			{"/categories", checkCategory, 102},
			{"/members", checkMember, 104},
		}
		for _, l := range lists {
			var all []string
			t.Run(l.path+" limit 500 is the maximum", func(t *testing.T) {
				items, total := wantList(t, e.do(t, "GET", l.path+"?limit=500", e.ws.ViewToken, nil), l.check)
				if total != l.total || len(items) != l.total {
					t.Fatalf("%d items, total %d; want %d", len(items), total, l.total)
				}
				names := make([]string, len(items))
				for i, it := range items {
					names[i] = it["name"].(string)
				}
				if !sort.StringsAreSorted(names) {
					t.Fatalf("not sorted by name: %v", names)
				}
				all = ids(items)
			})
			pages := []struct {
				name, query string
				from, to    int // want all[from:to]
			}{
				{"default page is 100", "", 0, 100},
				{"page 2 of the default size", "?page=2", 100, l.total},
				{"limit and page", "?limit=10&page=3", 20, 30},
				{"alias pageSize", "?pageSize=10&page=3", 20, 30},
				{"alias perPage", "?perPage=10", 0, 10},
				{"page past the end", "?page=4", 0, 0},
			}
			for _, tc := range pages {
				t.Run(l.path+" "+tc.name, func(t *testing.T) {
					if len(all) != l.total {
						t.Fatalf("the full list could not be read")
					}
					items, total := wantList(t, e.do(t, "GET", l.path+tc.query, e.ws.ViewToken, nil), l.check)
					if total != l.total {
						t.Errorf("total = %d, want %d", total, l.total)
					}
					if want := all[tc.from:tc.to]; !reflect.DeepEqual(ids(items), want) {
						t.Errorf("ids = %v\nwant %v", ids(items), want)
					}
				})
			}
			searches := []struct {
				name, query string
				want        []string // names
			}{
				{"search, case-insensitive", "?search=item%2005&limit=3", []string{"Item 050", "Item 051", "Item 052"}},
				{"alias q", "?q=ITEM%20100", []string{"Item 100"}},
				{"search with no match", "?search=zebra", []string{}},
			}
			totals := []int{10, 1, 0}
			for i, tc := range searches {
				t.Run(l.path+" "+tc.name, func(t *testing.T) {
					items, total := wantList(t, e.do(t, "GET", l.path+tc.query, e.ws.ViewToken, nil), l.check)
					names := []string{}
					for _, it := range items {
						names = append(names, it["name"].(string))
					}
					if total != totals[i] || !reflect.DeepEqual(names, tc.want) {
						t.Errorf("names = %v (total %d), want %v (total %d)", names, total, tc.want, totals[i])
					}
				})
			}
			invalid := []struct{ name, query, field string }{
				{"limit=0", "limit=0", "limit"},
				{"limit=501", "limit=501", "limit"},
				{"pageSize=501", "pageSize=501", "pageSize"},
				{"page=0", "page=0", "page"},
				{"page=x", "page=x", "page"},
				{"limit with a sign", "limit=%2B10", "limit"},
				{"search over 200 characters", "search=" + strings.Repeat("s", 201), "search"},
				{"a procedure-only parameter", "sortBy=name", "sortBy"},
				{"unknown parameter", "bogus=1", "bogus"},
				{"the same parameter twice", "page=1&page=2", "page"},
			}
			for _, tc := range invalid {
				t.Run(l.path+" invalid "+tc.name, func(t *testing.T) {
					wantError(t, e.do(t, "GET", l.path+"?"+tc.query, e.ws.ViewToken, nil), http.StatusBadRequest, "validation_failed", tc.field)
				})
			}
		}
	})
}
