package graph_test

// API tests of projects, categories, comments, members, tokens, viewer,
// workspace and node/nodes.

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/graph"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

type projectT struct {
	ID          string
	WorkspaceID string
	Name        string
	StartedAt   *string
	DueAt       *string
	CreatedAt   string
	UpdatedAt   string
}

const projectFields = `id workspaceId name startedAt dueAt createdAt updatedAt`

type categoryT struct {
	ID          string
	WorkspaceID string
	Name        string
	CreatedAt   string
	UpdatedAt   string
}

const categoryFields = `id workspaceId name createdAt updatedAt`

type memberT struct {
	ID          string
	WorkspaceID string
	Name        string
	Email       string
	Role        string
	CreatedAt   string
	RemovedAt   *string
}

const memberFields = `id workspaceId name email role createdAt removedAt`

type tokenT struct {
	ID         string
	Name       string
	Member     *named
	CreatedAt  string
	LastUsedAt *string
	ExpiresAt  *string
	RevokedAt  *string
}

const tokenFields = `id name member { id name } createdAt lastUsedAt expiresAt revokedAt`

type namedConn struct {
	TotalCount int
	PageInfo   pageInfoT
	Edges      []struct {
		Cursor string
		Node   named
	}
	Nodes []named
}

// listNamed runs one of the name-sorted lists (projects, categories,
// members) with vars.
func listNamed(t testing.TB, s *apitest.Server, token, field string, vars map[string]any) namedConn {
	t.Helper()
	q := fmt.Sprintf(`query($first: Int, $after: String, $last: Int, $before: String, $search: String) {
		%s(first: $first, after: $after, last: $last, before: $before, search: $search) {
			totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
			edges { cursor node { id name } } nodes { id name }
		}
	}`, field)
	var out map[string]namedConn
	ok(t, s.GraphQL(t, token, q, vars), &out)
	c := out[field]
	if len(c.Edges) != len(c.Nodes) {
		t.Fatalf("%d edges, %d nodes", len(c.Edges), len(c.Nodes))
	}
	return c
}

func namedIDs(ns []named) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.ID
	}
	return out
}

// testNamedList checks a name-sorted list: order by name then id, search
// (case-insensitive on what match says), totalCount and Relay pagination.
func testNamedList(t *testing.T, s *apitest.Server, token, field string, match func(n named, q string) bool, searches ...string) {
	all := listNamed(t, s, token, field, obj("first", graph.MaxPageSize))
	if all.TotalCount != len(all.Nodes) || all.TotalCount < 4 {
		t.Fatalf("%s: totalCount %d, %d nodes; the test needs at least 4", field, all.TotalCount, len(all.Nodes))
	}
	want := append([]named(nil), all.Nodes...)
	sort.SliceStable(want, func(i, j int) bool {
		if want[i].Name != want[j].Name {
			return want[i].Name < want[j].Name
		}
		return want[i].ID < want[j].ID
	})
	t.Run("OrderedByNameThenId", func(t *testing.T) {
		if got := namedIDs(all.Nodes); !sameStrings(got, namedIDs(want)) {
			t.Fatalf("order %v, want %v", all.Nodes, want)
		}
	})
	t.Run("DefaultPageHoldsAll", func(t *testing.T) {
		if c := listNamed(t, s, token, field, nil); len(c.Nodes) != all.TotalCount || c.PageInfo.HasNextPage {
			t.Fatalf("default page: %d nodes, %+v", len(c.Nodes), c.PageInfo)
		}
	})
	t.Run("ForwardPages", func(t *testing.T) {
		var got []string
		vars := obj("first", 2)
		for i := 0; i <= all.TotalCount; i++ {
			c := listNamed(t, s, token, field, vars)
			if c.TotalCount != all.TotalCount || c.PageInfo.HasPreviousPage != (i > 0) {
				t.Fatalf("page %d: totalCount %d, %+v", i, c.TotalCount, c.PageInfo)
			}
			got = append(got, namedIDs(c.Nodes)...)
			if !c.PageInfo.HasNextPage {
				break
			}
			vars["after"] = *c.PageInfo.EndCursor
		}
		if !sameStrings(got, namedIDs(want)) {
			t.Fatalf("pages %v, want %v", got, namedIDs(want))
		}
	})
	t.Run("BackwardPages", func(t *testing.T) {
		var got []string
		vars := obj("last", 3)
		for i := 0; i <= all.TotalCount; i++ {
			c := listNamed(t, s, token, field, vars)
			if c.TotalCount != all.TotalCount || c.PageInfo.HasNextPage != (i > 0) {
				t.Fatalf("page %d: totalCount %d, %+v", i, c.TotalCount, c.PageInfo)
			}
			got = append(namedIDs(c.Nodes), got...)
			if !c.PageInfo.HasPreviousPage {
				break
			}
			vars["before"] = *c.PageInfo.StartCursor
		}
		if !sameStrings(got, namedIDs(want)) {
			t.Fatalf("pages %v, want %v", got, namedIDs(want))
		}
	})
	for _, q := range searches {
		t.Run("Search_"+q, func(t *testing.T) {
			var wantIDs []string
			for _, n := range want {
				if match(n, strings.ToLower(strings.TrimSpace(q))) {
					wantIDs = append(wantIDs, n.ID)
				}
			}
			if len(wantIDs) == 0 || len(wantIDs) == len(want) {
				t.Fatalf("search %q matches %d of %d: not a useful case", q, len(wantIDs), len(want))
			}
			c := listNamed(t, s, token, field, obj("search", q))
			if c.TotalCount != len(wantIDs) || !sameStrings(namedIDs(c.Nodes), wantIDs) {
				t.Fatalf("search %q: total %d %v, want %v", q, c.TotalCount, c.Nodes, wantIDs)
			}
			c = listNamed(t, s, token, field, obj("search", q, "first", 1))
			if c.TotalCount != len(wantIDs) || len(c.Nodes) != 1 {
				t.Fatalf("search %q first 1: total %d, %d nodes", q, c.TotalCount, len(c.Nodes))
			}
		})
	}
	t.Run("SearchNoMatch", func(t *testing.T) {
		if c := listNamed(t, s, token, field, obj("search", "zzzqqq")); c.TotalCount != 0 || len(c.Nodes) != 0 {
			t.Fatalf("total %d", c.TotalCount)
		}
	})
	for _, tc := range []struct {
		name  string
		vars  map[string]any
		field string
	}{
		{"ErrFirstTooLarge", obj("first", graph.MaxPageSize+1), "first"},
		{"ErrLastNegative", obj("last", -2), "last"},
		{"ErrAfterNotCursor", obj("after", "nope"), "after"},
		{"ErrSearchTooLong", obj("search", strings.Repeat("q", core.MaxTitleLen+1)), "search"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := fmt.Sprintf(`query($first: Int, $last: Int, $after: String, $search: String) { %s(first: $first, last: $last, after: $after, search: $search) { totalCount } }`, field)
			wantError(t, s.GraphQL(t, token, q, tc.vars), "validation_failed", tc.field)
		})
	}
}

func nameContains(n named, q string) bool { return strings.Contains(strings.ToLower(n.Name), q) }

// ---------------------------------------------------------------------------
// Projects.

func TestProjects(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		const create = `mutation($in: CreateProjectInput!) { createProject(input: $in) { ` + projectFields + ` } }`
		const update = `mutation($id: ID!, $in: UpdateProjectInput!) { updateProject(id: $id, input: $in) { ` + projectFields + ` } }`
		const get = `query($id: ID!) { project(id: $id) { ` + projectFields + ` } }`
		const del = `mutation($id: ID!) { deleteProject(id: $id) { success deletedId } }`
		getProject := func(t *testing.T, id string) projectT {
			t.Helper()
			var out struct{ Project *projectT }
			ok(t, s.GraphQL(t, w.ViewToken, get, obj("id", id)), &out)
			if out.Project == nil {
				t.Fatalf("project %s is null", id)
			}
			return *out.Project
		}
		var created projectT
		t.Run("Create", func(t *testing.T) {
			var out struct{ CreateProject projectT }
			ok(t, s.GraphQL(t, w.MemberToken, create, obj("in", obj("name", "  Launch  ", "startedAt", "2026-01-01", "dueAt", "2026-02-01T10:00:00+01:00"))), &out)
			created = out.CreateProject
			if created.Name != "Launch" || deref(created.StartedAt) != "2026-01-01T00:00:00.000Z" || deref(created.DueAt) != "2026-02-01T09:00:00.000Z" || created.WorkspaceID != w.ID {
				t.Fatalf("got %s", dump(created))
			}
			if got := getProject(t, created.ID); !same(got, created) {
				t.Fatalf("read back %s, want %s", dump(got), dump(created))
			}
		})
		t.Run("CreateWithoutDates", func(t *testing.T) {
			var out struct{ CreateProject projectT }
			ok(t, s.GraphQL(t, w.MemberToken, create, obj("in", obj("name", "Undated"))), &out)
			if out.CreateProject.StartedAt != nil || out.CreateProject.DueAt != nil {
				t.Fatalf("got %s", dump(out.CreateProject))
			}
		})
		for _, tc := range []struct {
			name   string
			in     map[string]any
			fields []string
		}{
			{"ErrNameRequired", obj("name", " "), []string{"name"}},
			{"ErrNameMissing", obj("startedAt", "2026-01-01"), []string{"name"}},
			{"ErrNameTooLong", obj("name", strings.Repeat("p", core.MaxTitleLen+1)), []string{"name"}},
			{"ErrDueAtBeforeStartedAt", obj("name", "x", "startedAt", "2026-02-01", "dueAt", "2026-01-31"), []string{"dueAt"}},
			{"ErrStartedAtInvalid", obj("name", "x", "startedAt", "soon"), []string{"startedAt"}},
		} {
			t.Run("Create"+tc.name, func(t *testing.T) {
				before := listNamed(t, s, w.ViewToken, "projects", nil).TotalCount
				wantError(t, s.GraphQL(t, w.MemberToken, create, obj("in", tc.in)), "validation_failed", tc.fields...)
				if after := listNamed(t, s, w.ViewToken, "projects", nil).TotalCount; after != before {
					t.Fatalf("a refused create stored a project")
				}
			})
		}
		t.Run("UpdateOnlyGivenFields", func(t *testing.T) {
			var out struct{ UpdateProject projectT }
			ok(t, s.GraphQL(t, w.MemberToken, update, obj("id", created.ID, "in", obj("name", "Launch v2"))), &out)
			want := created
			want.Name, want.UpdatedAt = "Launch v2", out.UpdateProject.UpdatedAt
			if !same(out.UpdateProject, want) {
				t.Fatalf("got %s, want %s", dump(out.UpdateProject), dump(want))
			}
			created = out.UpdateProject
		})
		t.Run("UpdateNullClearsDates", func(t *testing.T) {
			var out struct{ UpdateProject projectT }
			ok(t, s.GraphQL(t, w.MemberToken, update, obj("id", created.ID, "in", obj("startedAt", nil))), &out)
			if out.UpdateProject.StartedAt != nil || deref(out.UpdateProject.DueAt) != deref(created.DueAt) || out.UpdateProject.Name != created.Name {
				t.Fatalf("got %s", dump(out.UpdateProject))
			}
			ok(t, s.GraphQL(t, w.MemberToken, update, obj("id", created.ID, "in", obj("dueAt", nil))), &out)
			if got := getProject(t, created.ID); got.StartedAt != nil || got.DueAt != nil {
				t.Fatalf("got %s", dump(got))
			}
			ok(t, s.GraphQL(t, w.MemberToken, update, obj("id", created.ID, "in", obj("startedAt", "2026-05-01", "dueAt", "2026-06-01"))), &out)
			created = out.UpdateProject
		})
		for _, tc := range []struct {
			name   string
			in     map[string]any
			fields []string
		}{
			{"ErrNameNull", obj("name", nil), []string{"name"}},
			{"ErrNameEmpty", obj("name", ""), []string{"name"}},
			{"ErrDueAtBeforeStoredStartedAt", obj("dueAt", "2026-04-01"), []string{"dueAt"}},
			{"ErrStartedAtAfterStoredDueAt", obj("startedAt", "2026-07-01"), []string{"dueAt"}},
			{"ErrDueAtInvalid", obj("dueAt", "2026-02-30"), []string{"dueAt"}},
		} {
			t.Run("Update"+tc.name, func(t *testing.T) {
				wantError(t, s.GraphQL(t, w.MemberToken, update, obj("id", created.ID, "in", tc.in)), "validation_failed", tc.fields...)
				if got := getProject(t, created.ID); !same(got, created) {
					t.Fatalf("a refused update changed the project: %s", dump(got))
				}
			})
		}
		t.Run("UpdateErrNotFound", func(t *testing.T) {
			wantError(t, s.GraphQL(t, w.MemberToken, update, obj("id", w.CategoryID, "in", obj("name", "x"))), "not_found")
		})
		for _, tc := range []struct{ name, id string }{
			{"ErrUnknownId", "01900000-0000-7000-8000-000000000004"},
			{"ErrIdOfOtherKind", w.CategoryID},
			{"ErrMalformedId", "p-1"},
		} {
			t.Run("Get"+tc.name, func(t *testing.T) {
				r := s.GraphQL(t, w.ViewToken, get, obj("id", tc.id))
				wantError(t, r, "not_found")
				if string(r.Data) != `{"project":null}` {
					t.Fatalf("data %s", r.Data)
				}
			})
		}

		t.Run("DeleteWithProceduresConflicts", func(t *testing.T) {
			p := createProc(t, s, w.MemberToken, procInput(w, "Blocks delete", map[string]any{"projectId": created.ID}))
			addComment(t, s, w.MemberToken, p.ID, "still here")
			wantError(t, s.GraphQL(t, w.MemberToken, del, obj("id", created.ID)), "conflict")
			if got := getProject(t, created.ID); !same(got, created) {
				t.Fatalf("project changed: %s", dump(got))
			}
			if got := getProc(t, s, w.ViewToken, p.ID); got.ProjectID != created.ID || len(got.Comments) != 1 {
				t.Fatalf("procedure changed: %s", dump(got))
			}
			// Once empty, it deletes.
			ok(t, s.GraphQL(t, w.MemberToken, `mutation($id: ID!) { deleteProcedure(id: $id) { success } }`, obj("id", p.ID)), &struct{}{})
			var out struct {
				DeleteProject struct {
					Success   bool
					DeletedID string
				}
			}
			ok(t, s.GraphQL(t, w.MemberToken, del, obj("id", created.ID)), &out)
			if !out.DeleteProject.Success || out.DeleteProject.DeletedID != created.ID {
				t.Fatalf("got %+v", out.DeleteProject)
			}
			wantError(t, s.GraphQL(t, w.ViewToken, get, obj("id", created.ID)), "not_found")
		})
		t.Run("DeleteEmpty", func(t *testing.T) {
			id := createProject(t, s, w.MemberToken, "Empty")
			ok(t, s.GraphQL(t, w.MemberToken, del, obj("id", id)), &struct{}{})
			wantError(t, s.GraphQL(t, w.ViewToken, get, obj("id", id)), "not_found")
			wantError(t, s.GraphQL(t, w.MemberToken, del, obj("id", id)), "not_found")
		})
		t.Run("DeleteErrMalformedId", func(t *testing.T) {
			wantError(t, s.GraphQL(t, w.MemberToken, del, obj("id", "nope")), "not_found")
		})

		for _, n := range []string{"Bravo", "Charlie", "Delta", "Delta", "Echo"} {
			createProject(t, s, w.MemberToken, n)
		}
		testNamedList(t, s, w.ViewToken, "projects", nameContains, "DELTA", "ch", " acme ")
	})
}

// ---------------------------------------------------------------------------
// Categories.

func TestCategories(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		const create = `mutation($in: CreateCategoryInput!) { createCategory(input: $in) { ` + categoryFields + ` } }`
		const update = `mutation($id: ID!, $in: UpdateCategoryInput!) { updateCategory(id: $id, input: $in) { ` + categoryFields + ` } }`
		const get = `query($id: ID!) { category(id: $id) { ` + categoryFields + ` } }`
		const del = `mutation($id: ID!) { deleteCategory(id: $id) { success deletedId } }`
		getCategory := func(t *testing.T, id string) categoryT {
			t.Helper()
			var out struct{ Category *categoryT }
			ok(t, s.GraphQL(t, w.ViewToken, get, obj("id", id)), &out)
			if out.Category == nil {
				t.Fatalf("category %s is null", id)
			}
			return *out.Category
		}
		var c categoryT
		t.Run("Create", func(t *testing.T) {
			var out struct{ CreateCategory categoryT }
			ok(t, s.GraphQL(t, w.MemberToken, create, obj("in", obj("name", " Ops "))), &out)
			c = out.CreateCategory
			if c.Name != "Ops" || c.WorkspaceID != w.ID {
				t.Fatalf("got %s", dump(c))
			}
			if got := getCategory(t, c.ID); !same(got, c) {
				t.Fatalf("read back %s", dump(got))
			}
		})
		for _, tc := range []struct {
			name string
			in   map[string]any
		}{
			{"ErrNameRequired", obj("name", "")},
			{"ErrNameMissing", obj()},
			{"ErrNameTooLong", obj("name", strings.Repeat("c", core.MaxTitleLen+1))},
		} {
			t.Run("Create"+tc.name, func(t *testing.T) {
				wantError(t, s.GraphQL(t, w.MemberToken, create, obj("in", tc.in)), "validation_failed", "name")
			})
		}
		t.Run("Update", func(t *testing.T) {
			var out struct{ UpdateCategory categoryT }
			ok(t, s.GraphQL(t, w.MemberToken, update, obj("id", c.ID, "in", obj("name", "Operations"))), &out)
			if out.UpdateCategory.Name != "Operations" || out.UpdateCategory.ID != c.ID || out.UpdateCategory.CreatedAt != c.CreatedAt {
				t.Fatalf("got %s", dump(out.UpdateCategory))
			}
			c = out.UpdateCategory
			ok(t, s.GraphQL(t, w.MemberToken, update, obj("id", c.ID, "in", obj())), &out)
			if !same(out.UpdateCategory, c) {
				t.Fatalf("an empty update changed %s to %s", dump(c), dump(out.UpdateCategory))
			}
		})
		for _, tc := range []struct {
			name string
			in   map[string]any
		}{
			{"ErrNameNull", obj("name", nil)},
			{"ErrNameEmpty", obj("name", "  ")},
			{"ErrNameTooLong", obj("name", strings.Repeat("c", core.MaxTitleLen+1))},
		} {
			t.Run("Update"+tc.name, func(t *testing.T) {
				wantError(t, s.GraphQL(t, w.MemberToken, update, obj("id", c.ID, "in", tc.in)), "validation_failed", "name")
				if got := getCategory(t, c.ID); !same(got, c) {
					t.Fatalf("changed: %s", dump(got))
				}
			})
		}
		t.Run("UpdateErrNotFound", func(t *testing.T) {
			wantError(t, s.GraphQL(t, w.MemberToken, update, obj("id", w.ProjectID, "in", obj("name", "x"))), "not_found")
		})
		t.Run("GetErrNotFound", func(t *testing.T) {
			r := s.GraphQL(t, w.ViewToken, get, obj("id", "01900000-0000-7000-8000-000000000005"))
			wantError(t, r, "not_found")
			if string(r.Data) != `{"category":null}` {
				t.Fatalf("data %s", r.Data)
			}
		})
		t.Run("DeleteUncategorisesProcedures", func(t *testing.T) {
			p1 := createProc(t, s, w.MemberToken, procInput(w, "In Ops 1", map[string]any{"categoryId": c.ID}))
			p2 := createProc(t, s, w.MemberToken, procInput(w, "In Ops 2", map[string]any{"categoryId": c.ID}))
			other := createProc(t, s, w.MemberToken, procInput(w, "Elsewhere", nil))
			var out struct {
				DeleteCategory struct {
					Success   bool
					DeletedID string
				}
			}
			ok(t, s.GraphQL(t, w.MemberToken, del, obj("id", c.ID)), &out)
			if !out.DeleteCategory.Success || out.DeleteCategory.DeletedID != c.ID {
				t.Fatalf("got %+v", out.DeleteCategory)
			}
			for _, p := range []procT{p1, p2} {
				got := getProc(t, s, w.ViewToken, p.ID)
				if got.CategoryID != nil || got.Category != nil {
					t.Fatalf("%s still has category %s", got.ShortID, deref(got.CategoryID))
				}
				if got.Name != p.Name || got.ProjectID != p.ProjectID {
					t.Fatalf("%s changed beyond its category: %s", got.ShortID, dump(got))
				}
			}
			if got := getProc(t, s, w.ViewToken, other.ID); deref(got.CategoryID) != w.CategoryID {
				t.Fatalf("a procedure of another category lost it")
			}
			wantError(t, s.GraphQL(t, w.ViewToken, get, obj("id", c.ID)), "not_found")
			wantError(t, s.GraphQL(t, w.MemberToken, del, obj("id", c.ID)), "not_found")
			// An uncategorised procedure can be categorised again.
			var upd struct{ UpdateProcedure procT }
			ok(t, s.GraphQL(t, w.MemberToken, updateProcMutation, obj("id", p1.ID, "in", obj("categoryId", w.CategoryID))), &upd)
			if deref(upd.UpdateProcedure.CategoryID) != w.CategoryID {
				t.Fatalf("got %s", dump(upd.UpdateProcedure))
			}
		})

		for _, n := range []string{"Bravo", "Charlie", "Delta", "Delta", "Echo"} {
			createCategory(t, s, w.MemberToken, n)
		}
		testNamedList(t, s, w.ViewToken, "categories", nameContains, "delta", "CH", "category")
	})
}

// ---------------------------------------------------------------------------
// Comments.

// memberWithToken adds a member of role and a token for it.
func memberWithToken(t testing.TB, s *apitest.Server, w *apitest.Workspace, name, email, role string) (id, secret string) {
	t.Helper()
	id = addMember(t, s, w, name, email, role)
	var out struct {
		CreateToken struct{ Secret string }
	}
	ok(t, s.GraphQL(t, w.AdminToken, `mutation($in: CreateTokenInput!) { createToken(input: $in) { secret } }`,
		obj("in", obj("memberId", id, "name", name))), &out)
	return id, out.CreateToken.Secret
}

func TestComments(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		_, otherMemberToken := memberWithToken(t, s, w, "Other Member", "other@acme.example", "MEMBER")
		p := createProc(t, s, w.MemberToken, procInput(w, "Discussed", nil))
		const add = `mutation($in: AddCommentInput!) { addComment(input: $in) { id procedureId text author { id name } createdAt updatedAt } }`
		const update = `mutation($id: ID!, $text: String!) { updateComment(id: $id, input: {text: $text}) { id text author { id } } }`
		const del = `mutation($id: ID!) { deleteComment(id: $id) { success deletedId } }`
		const node = `query($id: ID!) { node(id: $id) { __typename ... on Comment { id procedureId text author { id } } } }`
		readComment := func(t *testing.T, id string) *commentT {
			t.Helper()
			var out struct{ Node *commentT }
			ok(t, s.GraphQL(t, w.ViewToken, node, obj("id", id)), &out)
			return out.Node
		}

		var first commentT
		t.Run("Add", func(t *testing.T) {
			var out struct{ AddComment commentT }
			ok(t, s.GraphQL(t, w.MemberToken, add, obj("in", obj("procedureId", p.ID, "text", "  looks good  "))), &out)
			first = out.AddComment
			if first.Text != "looks good" || first.ProcedureID != p.ID || first.Author == nil || first.Author.ID != w.MemberID {
				t.Fatalf("got %s", dump(first))
			}
			if got := readComment(t, first.ID); got == nil || got.Text != "looks good" || got.ProcedureID != p.ID {
				t.Fatalf("node read back %s", dump(got))
			}
		})
		t.Run("AddByShortIdOldestFirst", func(t *testing.T) {
			var out struct{ AddComment commentT }
			ok(t, s.GraphQL(t, w.AdminToken, add, obj("in", obj("procedureId", p.ShortID, "text", "second"))), &out)
			if out.AddComment.ProcedureID != p.ID || out.AddComment.Author.ID != w.AdminID {
				t.Fatalf("got %s", dump(out.AddComment))
			}
			got := getProc(t, s, w.ViewToken, p.ID).Comments
			if len(got) != 2 || got[0].ID != first.ID || got[1].ID != out.AddComment.ID {
				t.Fatalf("comments %s, want first then second", dump(got))
			}
		})
		for _, tc := range []struct {
			name, procedureID, text, code string
			fields                        []string
		}{
			{"ErrTextRequired", p.ID, "   ", "validation_failed", []string{"text"}},
			{"ErrTextTooLong", p.ID, strings.Repeat("t", core.MaxCommentLen+1), "validation_failed", []string{"text"}},
			{"ErrProcedureNotFound", "ACME-404", "hello", "not_found", nil},
			{"ErrProcedureIdMalformed", "nope", "hello", "not_found", nil},
			{"ErrProcedureIdOfOtherKind", w.ProjectID, "hello", "not_found", nil},
		} {
			t.Run("Add"+tc.name, func(t *testing.T) {
				wantError(t, s.GraphQL(t, w.MemberToken, add, obj("in", obj("procedureId", tc.procedureID, "text", tc.text))), tc.code, tc.fields...)
				if n := len(getProc(t, s, w.ViewToken, p.ID).Comments); n != 2 {
					t.Fatalf("%d comments", n)
				}
			})
		}
		t.Run("UpdateByAuthor", func(t *testing.T) {
			var out struct{ UpdateComment commentT }
			ok(t, s.GraphQL(t, w.MemberToken, update, obj("id", first.ID, "text", "looks great")), &out)
			if out.UpdateComment.Text != "looks great" || out.UpdateComment.Author.ID != w.MemberID {
				t.Fatalf("got %s", dump(out.UpdateComment))
			}
			first.Text = "looks great"
		})
		t.Run("UpdateByAdmin", func(t *testing.T) {
			var out struct{ UpdateComment commentT }
			ok(t, s.GraphQL(t, w.AdminToken, update, obj("id", first.ID, "text", "moderated")), &out)
			if out.UpdateComment.Text != "moderated" || out.UpdateComment.Author.ID != w.MemberID {
				t.Fatalf("an admin's edit must keep the author: %s", dump(out.UpdateComment))
			}
			first.Text = "moderated"
		})
		for _, tc := range []struct {
			name, token, id, text, code string
			fields                      []string
		}{
			{"ErrOtherMemberForbidden", otherMemberToken, first.ID, "hijack", "forbidden", nil},
			{"ErrViewerForbidden", w.ViewToken, first.ID, "hijack", "forbidden", nil},
			{"ErrTextEmpty", w.MemberToken, first.ID, "", "validation_failed", []string{"text"}},
			{"ErrTextTooLong", w.MemberToken, first.ID, strings.Repeat("t", core.MaxCommentLen+1), "validation_failed", []string{"text"}},
			{"ErrNotFound", w.MemberToken, "01900000-0000-7000-8000-000000000007", "x", "not_found", nil},
			{"ErrMalformedId", w.MemberToken, "c", "x", "not_found", nil},
		} {
			t.Run("Update"+tc.name, func(t *testing.T) {
				id := tc.id
				if id == "" {
					id = first.ID
				}
				wantError(t, s.GraphQL(t, tc.token, update, obj("id", id, "text", tc.text)), tc.code, tc.fields...)
				if got := readComment(t, first.ID); got == nil || got.Text != first.Text {
					t.Fatalf("comment changed: %s", dump(got))
				}
			})
		}
		t.Run("DeleteErrOtherMemberForbidden", func(t *testing.T) {
			wantError(t, s.GraphQL(t, otherMemberToken, del, obj("id", first.ID)), "forbidden")
			if readComment(t, first.ID) == nil {
				t.Fatal("deleted")
			}
		})
		t.Run("DeleteByAuthor", func(t *testing.T) {
			var out struct {
				DeleteComment struct {
					Success   bool
					DeletedID string
				}
			}
			ok(t, s.GraphQL(t, w.MemberToken, del, obj("id", first.ID)), &out)
			if !out.DeleteComment.Success || out.DeleteComment.DeletedID != first.ID {
				t.Fatalf("got %+v", out.DeleteComment)
			}
			if readComment(t, first.ID) != nil {
				t.Fatal("comment still resolves")
			}
			wantError(t, s.GraphQL(t, w.MemberToken, del, obj("id", first.ID)), "not_found")
			if got := getProc(t, s, w.ViewToken, p.ID).Comments; len(got) != 1 || got[0].Text != "second" {
				t.Fatalf("comments %s", dump(got))
			}
		})
		t.Run("DeleteByAdmin", func(t *testing.T) {
			id := addComment(t, s, otherMemberToken, p.ID, "mine")
			ok(t, s.GraphQL(t, w.AdminToken, del, obj("id", id)), &struct{}{})
			if readComment(t, id) != nil {
				t.Fatal("comment still resolves")
			}
		})
	})
}

// ---------------------------------------------------------------------------
// Members, viewer, workspace.

func TestViewerAndWorkspace(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		for _, tc := range []struct{ name, token, id, role, email string }{
			{"Admin", w.AdminToken, w.AdminID, "ADMIN", "admin@ACME.example"},
			{"Member", w.MemberToken, w.MemberID, "MEMBER", "member@ACME.example"},
			{"Viewer", w.ViewToken, w.ViewerID, "VIEWER", "viewer@ACME.example"},
		} {
			t.Run("Viewer"+tc.name, func(t *testing.T) {
				var out struct{ Viewer memberT }
				ok(t, s.GraphQL(t, tc.token, `{ viewer { `+memberFields+` } }`, nil), &out)
				v := out.Viewer
				if v.ID != tc.id || v.Role != tc.role || v.WorkspaceID != w.ID || v.Email != strings.ToLower(tc.email) || v.RemovedAt != nil {
					t.Fatalf("got %s", dump(v))
				}
			})
		}
		t.Run("Workspace", func(t *testing.T) {
			var out struct {
				Workspace struct{ ID, Name, Key, CreatedAt string }
			}
			ok(t, s.GraphQL(t, w.ViewToken, `{ workspace { id name key createdAt } }`, nil), &out)
			if out.Workspace.ID != w.ID || out.Workspace.Name != "Acme" || out.Workspace.Key != "ACME" || out.Workspace.CreatedAt == "" {
				t.Fatalf("got %+v", out.Workspace)
			}
		})
	})
}

func TestMembers(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		const add = `mutation($in: AddMemberInput!) { addMember(input: $in) { ` + memberFields + ` } }`
		const update = `mutation($id: ID!, $in: UpdateMemberInput!) { updateMember(id: $id, input: $in) { ` + memberFields + ` } }`
		const remove = `mutation($id: ID!) { removeMember(id: $id) { ` + memberFields + ` } }`
		const get = `query($id: ID!) { member(id: $id) { ` + memberFields + ` } }`
		getMember := func(t *testing.T, id string) memberT {
			t.Helper()
			var out struct{ Member *memberT }
			ok(t, s.GraphQL(t, w.ViewToken, get, obj("id", id)), &out)
			if out.Member == nil {
				t.Fatalf("member %s is null", id)
			}
			return *out.Member
		}

		var nora memberT
		t.Run("AddDefaultsToMember", func(t *testing.T) {
			var out struct{ AddMember memberT }
			ok(t, s.GraphQL(t, w.AdminToken, add, obj("in", obj("name", " Nora New ", "email", " Nora@Example.COM "))), &out)
			nora = out.AddMember
			if nora.Name != "Nora New" || nora.Email != "nora@example.com" || nora.Role != "MEMBER" || nora.WorkspaceID != w.ID || nora.RemovedAt != nil {
				t.Fatalf("got %s", dump(nora))
			}
			if got := getMember(t, nora.ID); !same(got, nora) {
				t.Fatalf("read back %s", dump(got))
			}
		})
		t.Run("AddWithRole", func(t *testing.T) {
			var out struct{ AddMember memberT }
			ok(t, s.GraphQL(t, w.AdminToken, add, obj("in", obj("name", "Vera Viewer", "email", "vera@example.com", "role", "VIEWER"))), &out)
			if out.AddMember.Role != "VIEWER" {
				t.Fatalf("got %s", dump(out.AddMember))
			}
		})
		for _, tc := range []struct {
			name, code string
			in         map[string]any
			fields     []string
		}{
			{"ErrDuplicateEmail", "conflict", obj("name", "Dup", "email", "member@acme.example"), nil},
			{"ErrDuplicateEmailOtherCase", "conflict", obj("name", "Dup", "email", " MEMBER@Acme.Example"), nil},
			{"ErrEmailInvalid", "validation_failed", obj("name", "Bad", "email", "not-an-email"), []string{"email"}},
			{"ErrEmailWithName", "validation_failed", obj("name", "Bad", "email", "Bad <bad@example.com>"), []string{"email"}},
			{"ErrEmailEmpty", "validation_failed", obj("name", "Bad", "email", ""), []string{"email"}},
			{"ErrNameRequired", "validation_failed", obj("name", "", "email", "x@example.com"), []string{"name"}},
			{"ErrNameTooLong", "validation_failed", obj("name", strings.Repeat("m", core.MaxTitleLen+1), "email", "x@example.com"), []string{"name"}},
			{"ErrRoleInvalid", "validation_failed", obj("name", "Bad", "email", "x@example.com", "role", "OWNER"), []string{"role"}},
			{"ErrEmailMissing", "validation_failed", obj("name", "Bad"), []string{"email"}},
		} {
			t.Run("Add"+tc.name, func(t *testing.T) {
				before := listNamed(t, s, w.ViewToken, "members", nil).TotalCount
				wantError(t, s.GraphQL(t, w.AdminToken, add, obj("in", tc.in)), tc.code, tc.fields...)
				if after := listNamed(t, s, w.ViewToken, "members", nil).TotalCount; after != before {
					t.Fatalf("members %d -> %d", before, after)
				}
			})
		}
		t.Run("UpdateName", func(t *testing.T) {
			var out struct{ UpdateMember memberT }
			ok(t, s.GraphQL(t, w.AdminToken, update, obj("id", nora.ID, "in", obj("name", "Nora Renamed"))), &out)
			want := nora
			want.Name = "Nora Renamed"
			if !same(out.UpdateMember, want) {
				t.Fatalf("got %s, want %s", dump(out.UpdateMember), dump(want))
			}
			nora = out.UpdateMember
		})
		t.Run("UpdateRole", func(t *testing.T) {
			var out struct{ UpdateMember memberT }
			ok(t, s.GraphQL(t, w.AdminToken, update, obj("id", nora.ID, "in", obj("role", "VIEWER"))), &out)
			if out.UpdateMember.Role != "VIEWER" || out.UpdateMember.Name != nora.Name {
				t.Fatalf("got %s", dump(out.UpdateMember))
			}
			nora = out.UpdateMember
		})
		for _, tc := range []struct {
			name, id, code string
			in             map[string]any
			fields         []string
		}{
			{"ErrNameNull", "", "validation_failed", obj("name", nil), []string{"name"}},
			{"ErrNameEmpty", "", "validation_failed", obj("name", " "), []string{"name"}},
			{"ErrRoleNull", "", "validation_failed", obj("role", nil), []string{"role"}},
			{"ErrRoleInvalid", "", "validation_failed", obj("role", "ROOT"), []string{"role"}},
			{"ErrNotFound", "01900000-0000-7000-8000-000000000002", "not_found", obj("name", "x"), nil},
			{"ErrIdOfOtherKind", w.ProjectID, "not_found", obj("name", "x"), nil},
		} {
			t.Run("Update"+tc.name, func(t *testing.T) {
				id := tc.id
				if id == "" {
					id = nora.ID
				}
				wantError(t, s.GraphQL(t, w.AdminToken, update, obj("id", id, "in", tc.in)), tc.code, tc.fields...)
				if got := getMember(t, nora.ID); !same(got, nora) {
					t.Fatalf("changed: %s", dump(got))
				}
			})
		}
		t.Run("Remove", func(t *testing.T) {
			id, secret := memberWithToken(t, s, w, "Rex Removed", "rex@example.com", "MEMBER")
			p := createProc(t, s, secret, procInput(w, "Rex's", map[string]any{"doerId": id}))
			c := addComment(t, s, secret, p.ID, "by rex")
			var out struct{ RemoveMember memberT }
			ok(t, s.GraphQL(t, w.AdminToken, remove, obj("id", id)), &out)
			if out.RemoveMember.ID != id || out.RemoveMember.RemovedAt == nil {
				t.Fatalf("got %s", dump(out.RemoveMember))
			}
			// Still readable by id, with removedAt; gone from the list.
			if got := getMember(t, id); got.RemovedAt == nil {
				t.Fatalf("member(id) of a removed member: %s", dump(got))
			}
			for _, m := range listNamed(t, s, w.ViewToken, "members", obj("first", graph.MaxPageSize)).Nodes {
				if m.ID == id {
					t.Fatal("a removed member is still listed")
				}
			}
			// Their token stops working.
			r := s.GraphQL(t, secret, `{ viewer { id } }`, nil)
			wantError(t, r, "disconnected")
			// Their procedures and comments still name them.
			got := getProc(t, s, w.ViewToken, p.ID)
			if deref(got.DoerID) != id || got.Doer == nil || got.CreatorID != id || len(got.Comments) != 1 || got.Comments[0].ID != c || got.Comments[0].Author == nil || got.Comments[0].Author.ID != id {
				t.Fatalf("procedure after removal: %s", dump(got))
			}
			// Removed members cannot be removed or updated again.
			wantError(t, s.GraphQL(t, w.AdminToken, remove, obj("id", id)), "not_found")
			wantError(t, s.GraphQL(t, w.AdminToken, update, obj("id", id, "in", obj("name", "Back"))), "not_found")
		})
		t.Run("RemoveErrNotFound", func(t *testing.T) {
			wantError(t, s.GraphQL(t, w.AdminToken, remove, obj("id", "01900000-0000-7000-8000-000000000002")), "not_found")
			wantError(t, s.GraphQL(t, w.AdminToken, remove, obj("id", "m")), "not_found")
		})
		t.Run("GetErrNotFound", func(t *testing.T) {
			r := s.GraphQL(t, w.ViewToken, get, obj("id", w.CategoryID))
			wantError(t, r, "not_found")
			if string(r.Data) != `{"member":null}` {
				t.Fatalf("data %s", r.Data)
			}
		})

		addMember(t, s, w, "Bob Builder", "bob@builder.example", "MEMBER")
		addMember(t, s, w, "Bob Builder", "bob2@builder.example", "MEMBER")
		var all struct{ Members struct{ Nodes []memberT } }
		ok(t, s.GraphQL(t, w.ViewToken, `{ members(first: 100) { nodes { `+memberFields+` } } }`, nil), &all)
		emails := map[string]string{}
		for _, m := range all.Members.Nodes {
			emails[m.ID] = m.Email
		}
		memberMatch := func(n named, q string) bool {
			return strings.Contains(strings.ToLower(n.Name), q) || strings.Contains(emails[n.ID], q)
		}
		testNamedList(t, s, w.ViewToken, "members", memberMatch, "BOB", "acme.example", "viewer")
	})
}

// TestLastAdmin checks that a workspace always keeps an active admin.
func TestLastAdmin(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		const update = `mutation($id: ID!, $role: Role) { updateMember(id: $id, input: {role: $role}) { id role } }`
		const remove = `mutation($id: ID!) { removeMember(id: $id) { id removedAt } }`
		role := func(t *testing.T, id string) string {
			var out struct{ Member memberT }
			ok(t, s.GraphQL(t, w.ViewToken, `query($id: ID!) { member(id: $id) { `+memberFields+` } }`, obj("id", id)), &out)
			if out.Member.RemovedAt != nil {
				return "REMOVED"
			}
			return out.Member.Role
		}
		t.Run("ErrDemoteLastAdmin", func(t *testing.T) {
			for _, r := range []string{"MEMBER", "VIEWER"} {
				wantError(t, s.GraphQL(t, w.AdminToken, update, obj("id", w.AdminID, "role", r)), "conflict")
			}
			if got := role(t, w.AdminID); got != "ADMIN" {
				t.Fatalf("role = %s", got)
			}
		})
		t.Run("ErrRemoveLastAdmin", func(t *testing.T) {
			wantError(t, s.GraphQL(t, w.AdminToken, remove, obj("id", w.AdminID)), "conflict")
			if got := role(t, w.AdminID); got != "ADMIN" {
				t.Fatalf("role = %s", got)
			}
			if r := s.GraphQL(t, w.AdminToken, `{ viewer { id } }`, nil); len(r.Errors) > 0 {
				t.Fatalf("the admin's token stopped working: %+v", r.Errors)
			}
		})
		t.Run("SettingSameRoleIsNoConflict", func(t *testing.T) {
			ok(t, s.GraphQL(t, w.AdminToken, update, obj("id", w.AdminID, "role", "ADMIN")), &struct{}{})
		})
		t.Run("RemovedAdminDoesNotCount", func(t *testing.T) {
			second, _ := memberWithToken(t, s, w, "Second Admin", "second@acme.example", "ADMIN")
			ok(t, s.GraphQL(t, w.AdminToken, remove, obj("id", second)), &struct{}{})
			wantError(t, s.GraphQL(t, w.AdminToken, update, obj("id", w.AdminID, "role", "MEMBER")), "conflict")
		})
		t.Run("DemoteWithAnotherAdmin", func(t *testing.T) {
			third, thirdToken := memberWithToken(t, s, w, "Third Admin", "third@acme.example", "ADMIN")
			ok(t, s.GraphQL(t, w.AdminToken, update, obj("id", w.AdminID, "role", "MEMBER")), &struct{}{})
			if got := role(t, w.AdminID); got != "MEMBER" {
				t.Fatalf("role = %s", got)
			}
			// The demoted admin lost admin rights at once.
			wantError(t, s.GraphQL(t, w.AdminToken, `{ tokens { id } }`, nil), "forbidden")
			// Now the third admin is the last one.
			wantError(t, s.GraphQL(t, thirdToken, remove, obj("id", third)), "conflict")
			wantError(t, s.GraphQL(t, thirdToken, update, obj("id", third, "role", "VIEWER")), "conflict")
			// Promoting again makes removal possible.
			ok(t, s.GraphQL(t, thirdToken, update, obj("id", w.AdminID, "role", "ADMIN")), &struct{}{})
			ok(t, s.GraphQL(t, w.AdminToken, remove, obj("id", third)), &struct{}{})
			if got := role(t, third); got != "REMOVED" {
				t.Fatalf("third = %s", got)
			}
		})
	})
}

// ---------------------------------------------------------------------------
// Tokens.

func TestTokens(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		other := s.NewWorkspace(t, "Beta", "BETA")
		gone, _ := memberWithToken(t, s, w, "Gone Member", "gone@acme.example", "MEMBER")
		ok(t, s.GraphQL(t, w.AdminToken, `mutation($id: ID!) { removeMember(id: $id) { id } }`, obj("id", gone)), &struct{}{})
		const create = `mutation($in: CreateTokenInput!) { createToken(input: $in) { secret token { ` + tokenFields + ` } } }`
		const revoke = `mutation($id: ID!) { revokeToken(id: $id) { ` + tokenFields + ` } }`
		const list = `{ tokens { ` + tokenFields + ` } }`
		tokens := func(t *testing.T) []tokenT {
			var out struct{ Tokens []tokenT }
			ok(t, s.GraphQL(t, w.AdminToken, list, nil), &out)
			return out.Tokens
		}
		type created struct {
			Secret string
			Token  tokenT
		}
		var mine created
		t.Run("CreateForViewer", func(t *testing.T) {
			var out struct{ CreateToken created }
			ok(t, s.GraphQL(t, w.AdminToken, create, obj("in", obj("name", "ci", "expiresAt", "2999-01-01"))), &out)
			mine = out.CreateToken
			if !strings.HasPrefix(mine.Secret, "pms_") || len(mine.Secret) < 20 {
				t.Fatalf("secret %q", mine.Secret)
			}
			if mine.Token.Name != "ci" || mine.Token.Member == nil || mine.Token.Member.ID != w.AdminID ||
				deref(mine.Token.ExpiresAt) != "2999-01-01T00:00:00.000Z" || mine.Token.RevokedAt != nil || mine.Token.LastUsedAt != nil {
				t.Fatalf("got %s", dump(mine.Token))
			}
			var v struct{ Viewer memberT }
			ok(t, s.GraphQL(t, mine.Secret, `{ viewer { `+memberFields+` } }`, nil), &v)
			if v.Viewer.ID != w.AdminID || v.Viewer.Role != "ADMIN" {
				t.Fatalf("the new token acts as %s", dump(v.Viewer))
			}
		})
		t.Run("CreateForMember", func(t *testing.T) {
			var out struct{ CreateToken created }
			ok(t, s.GraphQL(t, w.AdminToken, create, obj("in", obj("memberId", w.ViewerID))), &out)
			if out.CreateToken.Token.Member.ID != w.ViewerID || out.CreateToken.Token.ExpiresAt != nil {
				t.Fatalf("got %s", dump(out.CreateToken.Token))
			}
			var v struct{ Viewer memberT }
			ok(t, s.GraphQL(t, out.CreateToken.Secret, `{ viewer { `+memberFields+` } }`, nil), &v)
			if v.Viewer.ID != w.ViewerID || v.Viewer.Role != "VIEWER" {
				t.Fatalf("acts as %s", dump(v.Viewer))
			}
			// The token has its member's role, not its creator's.
			wantError(t, s.GraphQL(t, out.CreateToken.Secret, `mutation { createCategory(input: {name: "x"}) { id } }`, nil), "forbidden")
		})
		for _, tc := range []struct {
			name  string
			in    map[string]any
			field string
		}{
			{"ErrExpiresAtPast", obj("expiresAt", "2000-01-01T00:00:00Z"), "expiresAt"},
			{"ErrExpiresAtInvalid", obj("expiresAt", "never"), "expiresAt"},
			{"ErrMemberIdMalformed", obj("memberId", "bob"), "memberId"},
			{"ErrMemberIdRemoved", obj("memberId", gone), "memberId"},
			{"ErrMemberIdOtherWorkspace", obj("memberId", other.AdminID), "memberId"},
			{"ErrMemberIdUnknown", obj("memberId", "01900000-0000-7000-8000-000000000002"), "memberId"},
			{"ErrNameTooLong", obj("name", strings.Repeat("n", core.MaxTitleLen+1)), "name"},
		} {
			t.Run("Create"+tc.name, func(t *testing.T) {
				before := len(tokens(t))
				wantError(t, s.GraphQL(t, w.AdminToken, create, obj("in", tc.in)), "validation_failed", tc.field)
				if after := len(tokens(t)); after != before {
					t.Fatalf("tokens %d -> %d", before, after)
				}
			})
		}
		t.Run("List", func(t *testing.T) {
			raw := s.GraphQL(t, w.AdminToken, list, nil)
			if strings.Contains(string(raw.Data), mine.Secret) || strings.Contains(string(raw.Data), strings.TrimPrefix(mine.Secret, "pms_")) {
				t.Fatal("the token list shows a secret")
			}
			ts := tokens(t)
			// bootstrap admin, member, viewer, removed member's, ci, viewer's second.
			if len(ts) != 6 {
				t.Fatalf("%d tokens: %s", len(ts), dump(ts))
			}
			byID := map[string]tokenT{}
			for _, tk := range ts {
				byID[tk.ID] = tk
				if tk.Member == nil {
					t.Fatalf("token %s has no member", tk.ID)
				}
			}
			got, found := byID[mine.Token.ID]
			if !found || got.Name != "ci" || got.Member.ID != w.AdminID {
				t.Fatalf("created token listed as %s", dump(got))
			}
			if got.LastUsedAt == nil {
				t.Fatal("a used token has no lastUsedAt")
			}
			revoked := 0
			for _, tk := range ts {
				if tk.RevokedAt != nil {
					revoked++
					if tk.Member.ID != gone {
						t.Fatalf("token of %s revoked", tk.Member.Name)
					}
				}
			}
			if revoked != 1 {
				t.Fatalf("%d revoked tokens, want the removed member's only", revoked)
			}
		})
		t.Run("Revoke", func(t *testing.T) {
			var out struct{ RevokeToken tokenT }
			ok(t, s.GraphQL(t, w.AdminToken, revoke, obj("id", mine.Token.ID)), &out)
			if out.RevokeToken.ID != mine.Token.ID || out.RevokeToken.RevokedAt == nil {
				t.Fatalf("got %s", dump(out.RevokeToken))
			}
			wantError(t, s.GraphQL(t, mine.Secret, `{ viewer { id } }`, nil), "disconnected")
			// Revoking again is a no-op that keeps the first revocation time.
			var again struct{ RevokeToken tokenT }
			ok(t, s.GraphQL(t, w.AdminToken, revoke, obj("id", mine.Token.ID)), &again)
			if deref(again.RevokeToken.RevokedAt) != deref(out.RevokeToken.RevokedAt) {
				t.Fatalf("revokedAt moved from %s to %s", deref(out.RevokeToken.RevokedAt), deref(again.RevokeToken.RevokedAt))
			}
			// Other tokens keep working.
			if r := s.GraphQL(t, w.AdminToken, `{ viewer { id } }`, nil); len(r.Errors) > 0 {
				t.Fatalf("%+v", r.Errors)
			}
		})
		for _, tc := range []struct{ name, id string }{
			{"ErrUnknown", "01900000-0000-7000-8000-000000000003"},
			{"ErrMalformed", "tok"},
			{"ErrIdOfOtherKind", w.AdminID},
		} {
			t.Run("Revoke"+tc.name, func(t *testing.T) {
				wantError(t, s.GraphQL(t, w.AdminToken, revoke, obj("id", tc.id)), "not_found")
			})
		}
	})
}

// ---------------------------------------------------------------------------
// node and nodes.

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
			idList := []string{w.CategoryID, "nope", p.ID, "01900000-0000-7000-8000-000000000006", w.CategoryID, w.ID}
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
			idList := make([]string, 100)
			for i := range idList {
				idList[i] = w.ProjectID
			}
			var out struct{ Nodes []*named }
			ok(t, s.GraphQL(t, w.ViewToken, `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, obj("ids", idList)), &out)
			if len(out.Nodes) != 100 || out.Nodes[99] == nil {
				t.Fatalf("%d nodes", len(out.Nodes))
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
