package graph_test

// Nested connections (docs/api.md, "Nested connections"): Project.procedures,
// Category.procedures and Member.assignedProcedures page each parent's
// procedures as the top-level list filtered to that parent does, with its
// exact total, whether the parent came from a list, an object field, a
// node lookup or a procedure's edge; a cursor belongs to one parent; no
// parent's list shows another workspace's procedures.

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// parentKind is a type whose objects have a nested procedure list.
type parentKind struct {
	typ, list, single, field string
	// filter is the top-level filter of one parent's procedures, column
	// the procedures' column holding it.
	filter, column string
}

var parentKinds = []parentKind{
	{"Project", "projects", "project", "procedures", "projectId", "project_id"},
	{"Category", "categories", "category", "procedures", "categoryId", "category_id"},
	{"Member", "members", "member", "assignedProcedures", "doerId", "doer_id"},
}

// nestFixture is a workspace with a parent of each kind holding 0, 2 and
// 12 procedures (the workspace's own project, category and members hold
// none), beside another workspace with look-alike data.
type nestFixture struct {
	s      *apitest.Server
	db     *database.DB
	w      *apitest.Workspace
	other  *apitest.Workspace
	procs  []procT
	parent map[string]map[int]string // kind's type → children → id
	// doerToken acts as the member who does 12 procedures.
	doerToken string
}

func newNestFixture(t *testing.T, s *apitest.Server, db *database.DB) *nestFixture {
	t.Helper()
	w := s.NewWorkspace(t, "Nest", "NEST")
	f := &nestFixture{s: s, db: db, w: w, other: s.NewWorkspace(t, "Other", "OTH"), parent: map[string]map[int]string{}}
	f.parent["Project"] = map[int]string{}
	f.parent["Category"] = map[int]string{}
	f.parent["Member"] = map[int]string{}
	for _, n := range []int{0, 2, 12} {
		f.parent["Project"][n] = createProject(t, s, w.MemberToken, fmt.Sprintf("Project of %d", n))
		f.parent["Category"][n] = createCategory(t, s, w.MemberToken, fmt.Sprintf("Category of %d", n))
		if n == 12 {
			f.parent["Member"][n], f.doerToken = memberWithToken(t, s, w, "Doer of 12", "d12@nest.example", "MEMBER")
		} else {
			f.parent["Member"][n] = addMember(t, s, w, fmt.Sprintf("Doer of %d", n), fmt.Sprintf("d%d@nest.example", n), "MEMBER")
		}
	}
	states := []string{"TODO", "IN_PROGRESS", "COMPLETED", "WAITING"}
	priorities := []string{"LOW", "MEDIUM", "HIGH"}
	for i := 0; i < 14; i++ {
		project, category, doer := 12, 12, 12
		if i >= 12 {
			project = 2
		}
		if i == 0 || i == 13 {
			category = 2
		}
		if i == 5 || i == 12 {
			doer = 2
		}
		// Names and dues repeat, so that the nested orders break ties.
		f.procs = append(f.procs, createProc(t, s, w.MemberToken, procInput(w, fmt.Sprintf("task %d", i%5), obj(
			"state", states[i%4], "priority", priorities[i%3], "dueAt", fmt.Sprintf("2026-05-%02dT10:00:00Z", 1+i%3),
			"projectId", f.parent["Project"][project], "categoryId", f.parent["Category"][category], "doerId", f.parent["Member"][doer]))))
	}
	// The other workspace: procedures in its own parents, named alike.
	for i := 0; i < 3; i++ {
		createProc(t, s, f.other.MemberToken, procInput(f.other, fmt.Sprintf("task %d", i), nil))
	}
	return f
}

// count is the number of the workspace's procedures whose column is id,
// counted in the database.
func (f *nestFixture) count(t *testing.T, k parentKind, id string) int {
	t.Helper()
	return countSQL(t, f.db, "SELECT COUNT(*) FROM procedures WHERE workspace_id = ? AND "+k.column+" = ?", f.w.ID, id)
}

// nestedConn is a nested connection as the tests select it.
type nestedConn struct {
	TotalCount int
	PageInfo   pageInfoT
	Edges      []struct {
		Cursor string
		Node   struct{ ID string }
	}
	Nodes []struct{ ID string }
}

func (c nestedConn) ids() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.ID
	}
	return out
}

const nestedArgs = `$first: Int, $after: String, $last: Int, $before: String, $filter: ProcedureFilter, $orderBy: ProcedureOrder`
const nestedCall = `(first: $first, after: $after, last: $last, before: $before, filter: $filter, orderBy: $orderBy) {
	totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor } edges { cursor node { id } } nodes { id } }`

// listNested reads k's list (every parent) with each parent's nested list
// as vars ask, by parent id.
func (f *nestFixture) listNested(t *testing.T, token string, k parentKind, vars map[string]any) map[string]nestedConn {
	t.Helper()
	// Every kind has at most 6 parents; a larger page would pass the
	// complexity limit with nested pages of 100.
	q := fmt.Sprintf(`query(%s) { %s(first: 6) { totalCount nodes { id %s%s } } }`, nestedArgs, k.list, k.field, nestedCall)
	var out map[string]struct {
		TotalCount int
		Nodes      []map[string]json.RawMessage
	}
	ok(t, f.s.GraphQL(t, token, q, vars), &out)
	if l := out[k.list]; l.TotalCount != len(l.Nodes) {
		t.Fatalf("%s: %d of %d parents shown", k.list, len(l.Nodes), l.TotalCount)
	}
	conns := map[string]nestedConn{}
	for _, n := range out[k.list].Nodes {
		var c nestedConn
		var id string
		if err := json.Unmarshal(n[k.field], &c); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(n["id"], &id); err != nil {
			t.Fatal(err)
		}
		conns[id] = c
	}
	return conns
}

// oneNested reads one parent's nested list through the kind's single-object
// field.
func (f *nestFixture) oneNested(t *testing.T, token string, k parentKind, id string, vars map[string]any) *apitest.GQLResponse {
	t.Helper()
	q := fmt.Sprintf(`query($id: ID!, %s) { %s(id: $id) { id %s%s } }`, nestedArgs, k.single, k.field, nestedCall)
	v := obj("id", id)
	for key, x := range vars {
		v[key] = x
	}
	return f.s.GraphQL(t, token, q, v)
}

func (f *nestFixture) oneNestedOK(t *testing.T, k parentKind, id string, vars map[string]any) nestedConn {
	t.Helper()
	var out map[string]map[string]json.RawMessage
	ok(t, f.oneNested(t, f.w.ViewToken, k, id, vars), &out)
	var c nestedConn
	if err := json.Unmarshal(out[k.single][k.field], &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// topLevel is the top-level list filtered to one parent (and to filter),
// paged as vars say.
func (f *nestFixture) topLevel(t *testing.T, k parentKind, id string, vars map[string]any) procPage {
	t.Helper()
	v := obj()
	filter := obj()
	for key, x := range vars {
		if key == "filter" {
			for fk, fx := range x.(map[string]any) {
				filter[fk] = fx
			}
			continue
		}
		v[key] = x
	}
	filter[k.filter] = id
	v["filter"] = filter
	return listProcs(t, f.s, f.w.ViewToken, v)
}

// sameAsTopLevel fails unless c is the page the top-level list filtered to
// the parent gives for vars: the same procedures, total and page info.
func sameAsTopLevel(t *testing.T, what string, c nestedConn, top procPage) {
	t.Helper()
	if !sameStrings(c.ids(), ids(top.Nodes)) || c.TotalCount != top.TotalCount ||
		c.PageInfo.HasNextPage != top.PageInfo.HasNextPage || c.PageInfo.HasPreviousPage != top.PageInfo.HasPreviousPage {
		t.Fatalf("%s: nested %v (total %d, %+v)\ntop-level %v (total %d, %+v)",
			what, c.ids(), c.TotalCount, c.PageInfo, ids(top.Nodes), top.TotalCount, top.PageInfo)
	}
	if len(c.Edges) != len(c.Nodes) {
		t.Fatalf("%s: %d edges, %d nodes", what, len(c.Edges), len(c.Nodes))
	}
	if n := len(c.Edges); n > 0 && (deref(c.PageInfo.StartCursor) != c.Edges[0].Cursor || deref(c.PageInfo.EndCursor) != c.Edges[n-1].Cursor) {
		t.Fatalf("%s: pageInfo %+v does not match its edges", what, c.PageInfo)
	}
}

func TestNestedConnections(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		f := newNestFixture(t, s, db)
		nameAsc := obj("field", "NAME", "direction", "ASC")
		windows := []struct {
			name string
			vars map[string]any
		}{
			{"Default", obj()},
			{"First5", obj("first", 5)},
			{"First12", obj("first", 12)},
			{"First100", obj("first", 100)},
			{"Last5", obj("last", 5)},
			{"First0", obj("first", 0)},
			{"Last0", obj("last", 0)},
			{"First5ByName", obj("first", 5, "orderBy", nameAsc)},
			{"Last3ByDueDesc", obj("last", 3, "orderBy", obj("field", "DUE_AT", "direction", "DESC"))},
		}

		// Every parent of a list gets its own page and total, as the
		// top-level list filtered to it gives them; its total is the
		// database's count.
		for _, k := range parentKinds {
			for _, win := range windows {
				t.Run(k.typ+"_"+win.name, func(t *testing.T) {
					conns := f.listNested(t, f.w.ViewToken, k, win.vars)
					for n, id := range f.parent[k.typ] {
						c, found := conns[id]
						if !found {
							t.Fatalf("parent of %d is not in the list", n)
						}
						if c.TotalCount != n || f.count(t, k, id) != n {
							t.Fatalf("parent of %d: totalCount %d, database %d", n, c.TotalCount, f.count(t, k, id))
						}
					}
					for id, c := range conns {
						sameAsTopLevel(t, id, c, f.topLevel(t, k, id, win.vars))
						if want := f.count(t, k, id); c.TotalCount != want {
							t.Fatalf("%s: totalCount %d, database %d", id, c.TotalCount, want)
						}
					}
				})
			}
		}

		// Paging inside one parent, forward and back, through the object's
		// field: every procedure once, in the top-level list's order.
		for _, k := range parentKinds {
			t.Run(k.typ+"_AfterInsideOneParent", func(t *testing.T) {
				id := f.parent[k.typ][12]
				for _, order := range []map[string]any{nil, nameAsc, obj("field", "PROJECT_NAME", "direction", "DESC")} {
					want := ids(f.topLevel(t, k, id, obj("first", 100, "orderBy", order)).Nodes)
					var got []string
					vars := obj("first", 5, "orderBy", order)
					for pages := 0; ; pages++ {
						c := f.oneNestedOK(t, k, id, vars)
						if c.TotalCount != 12 || c.PageInfo.HasPreviousPage != (pages > 0) || pages > 3 {
							t.Fatalf("page %d: total %d, %+v", pages, c.TotalCount, c.PageInfo)
						}
						got = append(got, c.ids()...)
						if !c.PageInfo.HasNextPage {
							break
						}
						vars["after"] = *c.PageInfo.EndCursor
					}
					if !sameStrings(got, want) {
						t.Fatalf("order %v: forward %v\nwant %v", order, got, want)
					}
					got = nil
					vars = obj("last", 5, "orderBy", order)
					for pages := 0; ; pages++ {
						c := f.oneNestedOK(t, k, id, vars)
						if c.TotalCount != 12 || c.PageInfo.HasNextPage != (pages > 0) || pages > 3 {
							t.Fatalf("page %d back: total %d, %+v", pages, c.TotalCount, c.PageInfo)
						}
						got = append(c.ids(), got...)
						if !c.PageInfo.HasPreviousPage {
							break
						}
						vars["before"] = *c.PageInfo.StartCursor
					}
					if !sameStrings(got, want) {
						t.Fatalf("order %v: backward %v\nwant %v", order, got, want)
					}
				}
			})
		}

		// filter and orderBy on the nested field narrow and sort each
		// parent's list as the top-level list's do.
		for _, k := range parentKinds {
			for _, tc := range []struct {
				name string
				vars map[string]any
			}{
				{"States", obj("first", 100, "filter", obj("states", []string{"TODO", "IN_PROGRESS"}), "orderBy", nameAsc)},
				{"PrioritiesFirst2", obj("first", 2, "filter", obj("priorities", []string{"HIGH", "LOW"}), "orderBy", obj("field", "DUE_AT", "direction", "ASC"))},
				{"SearchLast2", obj("last", 2, "filter", obj("search", "TASK 3"))},
				{"DueWindow", obj("filter", obj("dueFrom", "2026-05-02T00:00:00Z", "dueTo", "2026-05-03T00:00:00Z"), "orderBy", obj("field", "CREATED_AT", "direction", "ASC"))},
				{"NoMatch", obj("filter", obj("state", "WAITING", "priority", "MEDIUM", "search", "zzz"))},
			} {
				t.Run(k.typ+"_Filter"+tc.name, func(t *testing.T) {
					for id, c := range f.listNested(t, f.w.ViewToken, k, tc.vars) {
						sameAsTopLevel(t, id, c, f.topLevel(t, k, id, tc.vars))
					}
				})
			}
		}

		// A parent's list within a list of procedures: every procedure's
		// project, category and doer shows its own total.
		t.Run("ThroughProcedureEdges", func(t *testing.T) {
			var out struct {
				Procedures struct {
					Nodes []struct {
						ID      string
						Project struct {
							ID         string
							Procedures nestedConn
						}
						Category struct {
							ID         string
							Procedures nestedConn
						}
						Doer struct {
							ID                 string
							AssignedProcedures nestedConn
						}
					}
				}
			}
			ok(t, s.GraphQL(t, f.w.ViewToken, `{ procedures(first: 20) { nodes { id
				project { id procedures(first: 2) { totalCount nodes { id } } }
				category { id procedures(first: 1) { totalCount nodes { id } } }
				doer { id assignedProcedures(first: 3, orderBy: {field: NAME, direction: ASC}) { totalCount nodes { id } } } } } }`, nil), &out)
			if len(out.Procedures.Nodes) != 14 {
				t.Fatalf("%d procedures", len(out.Procedures.Nodes))
			}
			for _, n := range out.Procedures.Nodes {
				for _, c := range []struct {
					k    parentKind
					id   string
					conn nestedConn
					vars map[string]any
				}{
					{parentKinds[0], n.Project.ID, n.Project.Procedures, obj("first", 2)},
					{parentKinds[1], n.Category.ID, n.Category.Procedures, obj("first", 1)},
					{parentKinds[2], n.Doer.ID, n.Doer.AssignedProcedures, obj("first", 3, "orderBy", nameAsc)},
				} {
					top := f.topLevel(t, c.k, c.id, c.vars)
					if !sameStrings(c.conn.ids(), ids(top.Nodes)) || c.conn.TotalCount != top.TotalCount {
						t.Fatalf("%s's %s %s: %v (%d), want %v (%d)", n.ID, c.k.single, c.id, c.conn.ids(), c.conn.TotalCount, ids(top.Nodes), top.TotalCount)
					}
				}
			}
		})

		// The viewer and node(id:) are parents too.
		t.Run("ViewerAndNode", func(t *testing.T) {
			var out struct {
				Viewer struct{ AssignedProcedures nestedConn }
				Node   struct{ Procedures nestedConn }
			}
			ok(t, s.GraphQL(t, f.doerToken, `query($id: ID!) { viewer { assignedProcedures(first: 3) { totalCount nodes { id } } }
				node(id: $id) { ... on Project { procedures(last: 1) { totalCount nodes { id } } } } }`, obj("id", f.parent["Project"][2])), &out)
			if out.Viewer.AssignedProcedures.TotalCount != 12 || len(out.Viewer.AssignedProcedures.Nodes) != 3 {
				t.Fatalf("viewer's: %+v", out.Viewer.AssignedProcedures)
			}
			top := f.topLevel(t, parentKinds[0], f.parent["Project"][2], obj("last", 1))
			if out.Node.Procedures.TotalCount != 2 || !sameStrings(out.Node.Procedures.ids(), ids(top.Nodes)) {
				t.Fatalf("node's: %+v, want %v", out.Node.Procedures, ids(top.Nodes))
			}
		})

		// Two views of the nested list under aliases, each with its own
		// arguments, and parents nobody announced (nodes(ids:) and
		// aliased single objects): each answers as the top-level list.
		t.Run("AliasesAndUnannouncedParents", func(t *testing.T) {
			k := parentKinds[0]
			var out struct {
				Projects struct {
					Nodes []struct {
						ID           string
						Newest       nestedConn
						OldestByName nestedConn
					}
				}
				Nodes []struct {
					ID         string
					Procedures nestedConn
				}
				A, B struct {
					ID         string
					Procedures nestedConn
				}
			}
			const conn = `totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor } edges { cursor node { id } } nodes { id }`
			ok(t, s.GraphQL(t, f.w.ViewToken, `query($ids: [ID!]!, $a: ID!, $b: ID!) {
				projects(first: 6) { nodes { id newest: procedures(first: 2) { `+conn+` }
					oldestByName: procedures(last: 3, orderBy: {field: NAME, direction: DESC}, filter: {states: [TODO, COMPLETED]}) { `+conn+` } } }
				nodes(ids: $ids) { id ... on Project { procedures(first: 4, orderBy: {field: DUE_AT, direction: ASC}) { `+conn+` } } }
				a: project(id: $a) { id procedures(last: 2) { `+conn+` } }
				b: project(id: $b) { id procedures(last: 2) { `+conn+` } } }`,
				obj("ids", []string{f.parent["Project"][0], f.parent["Project"][2], f.parent["Project"][12]},
					"a", f.parent["Project"][2], "b", f.parent["Project"][12])), &out)
			for _, n := range out.Projects.Nodes {
				sameAsTopLevel(t, n.ID+" newest", n.Newest, f.topLevel(t, k, n.ID, obj("first", 2)))
				sameAsTopLevel(t, n.ID+" oldest by name", n.OldestByName, f.topLevel(t, k, n.ID,
					obj("last", 3, "orderBy", obj("field", "NAME", "direction", "DESC"), "filter", obj("states", []string{"TODO", "COMPLETED"}))))
			}
			if len(out.Nodes) != 3 {
				t.Fatalf("%d nodes", len(out.Nodes))
			}
			for _, n := range out.Nodes {
				sameAsTopLevel(t, n.ID+" by node", n.Procedures, f.topLevel(t, k, n.ID, obj("first", 4, "orderBy", obj("field", "DUE_AT", "direction", "ASC"))))
			}
			for _, n := range []struct {
				ID         string
				Procedures nestedConn
			}{out.A, out.B} {
				sameAsTopLevel(t, n.ID+" by alias", n.Procedures, f.topLevel(t, k, n.ID, obj("last", 2)))
			}
		})

		// A cursor is one parent's: on another parent's field (or the
		// top-level list, or another kind's field) it is validation_failed
		// on that field alone.
		t.Run("ErrCursorOfAnotherParent", func(t *testing.T) {
			for _, k := range parentKinds {
				a, b := f.parent[k.typ][12], f.parent[k.typ][2]
				c := deref(f.oneNestedOK(t, k, a, obj("first", 2)).PageInfo.EndCursor)
				wantError(t, f.oneNested(t, f.w.ViewToken, k, b, obj("first", 2, "after", c)), "validation_failed", "after")
				wantError(t, f.oneNested(t, f.w.ViewToken, k, b, obj("last", 2, "before", c)), "validation_failed", "before")
				wantError(t, s.GraphQL(t, f.w.ViewToken, proceduresQuery, obj("first", 2, "after", c, "filter", obj(k.filter, a))), "validation_failed", "after")
				top := *f.topLevel(t, k, a, obj("first", 2)).PageInfo.EndCursor
				wantError(t, f.oneNested(t, f.w.ViewToken, k, a, obj("first", 2, "after", top)), "validation_failed", "after")
				for _, other := range parentKinds {
					if other.typ != k.typ {
						wantError(t, f.oneNested(t, f.w.ViewToken, other, f.parent[other.typ][12], obj("first", 2, "after", c)), "validation_failed", "after")
					}
				}
				// In a list of parents, only the cursor's parent pages.
				q := fmt.Sprintf(`query($after: String) { %s(first: 6) { nodes { id %s(first: 2, after: $after) { totalCount } } } }`, k.list, k.field)
				order := listNamed(t, s, f.w.ViewToken, k.list, obj("first", 6))
				r := s.GraphQL(t, f.w.ViewToken, q, obj("after", c))
				wantError(t, r, "validation_failed", "after")
				failed := map[string]bool{}
				for _, e := range r.Errors {
					if e.Extensions.Code != "validation_failed" || len(e.Path) != 4 {
						t.Fatalf("error %+v", e)
					}
					i, _ := e.Path[2].(float64)
					failed[order.Nodes[int(i)].ID] = true
				}
				for _, n := range order.Nodes {
					if failed[n.ID] == (n.ID == a) {
						t.Fatalf("%s %s (%s): failed %v; the cursor is %s's", k.typ, n.ID, n.Name, failed[n.ID], a)
					}
				}
			}
		})

		// Totals and pages follow writes: a procedure added, one deleted,
		// one moved to the empty parent.
		t.Run("FollowWrites", func(t *testing.T) {
			w := f.w
			created := createProc(t, s, w.MemberToken, procInput(w, "late", obj("projectId", f.parent["Project"][2],
				"categoryId", f.parent["Category"][2], "doerId", f.parent["Member"][2])))
			ok(t, s.GraphQL(t, w.MemberToken, `mutation($id: ID!) { deleteProcedure(id: $id) { success } }`, obj("id", f.procs[1].ID)), &struct{}{})
			ok(t, s.GraphQL(t, w.MemberToken, `mutation($id: ID!, $in: UpdateProcedureInput!) { updateProcedure(id: $id, input: $in) { id } }`,
				obj("id", f.procs[2].ID, "in", obj("projectId", f.parent["Project"][0], "categoryId", f.parent["Category"][0], "doerId", f.parent["Member"][0]))), &struct{}{})
			for _, k := range parentKinds {
				want := map[int]int{0: 1, 2: 3, 12: 10}
				conns := f.listNested(t, f.w.ViewToken, k, obj("first", 100))
				for n, id := range f.parent[k.typ] {
					c := conns[id]
					if c.TotalCount != want[n] || len(c.Nodes) != want[n] || f.count(t, k, id) != want[n] {
						t.Fatalf("%s of %d: total %d, %d nodes, database %d; want %d", k.typ, n, c.TotalCount, len(c.Nodes), f.count(t, k, id), want[n])
					}
					sameAsTopLevel(t, id, c, f.topLevel(t, k, id, obj("first", 100)))
				}
				if c := conns[f.parent[k.typ][2]]; !slices.Contains(c.ids(), created.ID) {
					t.Fatalf("%s: the new procedure is not in its parent's list %v", k.typ, c.ids())
				}
			}
		})
	})
}

// TestNestedTenancy: another workspace's parents are invisible, and a
// parent's list and total hold only its own workspace's procedures, even
// when a row of another workspace points at the parent.
func TestNestedTenancy(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		f := newNestFixture(t, s, db)
		o := f.other
		t.Run("ForeignParentsAreNull", func(t *testing.T) {
			for _, k := range parentKinds {
				var id string
				switch k.typ {
				case "Project":
					id = o.ProjectID
				case "Category":
					id = o.CategoryID
				default:
					id = o.MemberID
				}
				// As a missing one (docs/design.md §4).
				r := f.oneNested(t, f.w.ViewToken, k, id, obj("first", 5))
				wantError(t, r, "not_found")
				if string(r.Data) != `{"`+k.single+`":null}` {
					t.Fatalf("%s(id: foreign) = %s", k.single, r.Data)
				}
				var out map[string]any
				ok(t, s.GraphQL(t, f.w.ViewToken, fmt.Sprintf(`query($id: ID!) { node(id: $id) { id ... on %s { %s(first: 5) { totalCount } } } }`, k.typ, k.field), obj("id", id)), &out)
				if out["node"] != nil {
					t.Fatalf("node(id: foreign %s) = %v", k.typ, out["node"])
				}
				p := listProcs(t, s, f.w.ViewToken, obj("filter", obj(k.filter+"s", []string{id})))
				if p.TotalCount != 0 || len(p.Nodes) != 0 {
					t.Fatalf("procedures of a foreign %s: %d", k.single, p.TotalCount)
				}
			}
		})
		t.Run("ForeignRowsPointingHere", func(t *testing.T) {
			// A row of the other workspace made to point at this
			// workspace's parents of 2 (as no API write can): no list or
			// total of this workspace may count it.
			var foreign struct{ Procedures procPage }
			ok(t, s.GraphQL(t, o.ViewToken, proceduresQuery, obj("first", 1)), &foreign)
			leak := foreign.Procedures.Nodes[0].ID
			execSQL(t, db, "UPDATE procedures SET project_id = ?, category_id = ?, doer_id = ? WHERE id = ?",
				f.parent["Project"][2], f.parent["Category"][2], f.parent["Member"][2], leak)
			// Past every cache of this workspace's reads.
			execSQL(t, db, "UPDATE workspaces SET version = version + 1 WHERE id = ?", f.w.ID)
			for _, k := range parentKinds {
				id := f.parent[k.typ][2]
				if n := countSQL(t, db, "SELECT COUNT(*) FROM procedures WHERE "+k.column+" = ?", id); n != 3 {
					t.Fatalf("test data: %d rows point at the %s", n, k.single)
				}
				// The foreign row is the newest: first 1 would show it, or
				// take its place in the page.
				for _, vars := range []map[string]any{obj("first", 100), obj("first", 1), obj("last", 1), obj("first", 100, "filter", obj("search", "task"))} {
					c := f.listNested(t, f.w.ViewToken, k, vars)[id]
					one := f.oneNestedOK(t, k, id, vars)
					for _, got := range []nestedConn{c, one} {
						if slices.Contains(got.ids(), leak) || got.TotalCount != 2 {
							t.Fatalf("%s of 2 with %v: %v, total %d; the other workspace's %s leaks", k.typ, vars, got.ids(), got.TotalCount, leak)
						}
						sameAsTopLevel(t, fmt.Sprintf("%s of 2 with %v", k.typ, vars), got, f.topLevel(t, k, id, vars))
					}
				}
				if top := f.topLevel(t, k, id, obj("first", 100)); top.TotalCount != 2 || slices.Contains(ids(top.Nodes), leak) {
					t.Fatalf("top-level list of the %s: %v, total %d", k.single, ids(top.Nodes), top.TotalCount)
				}
			}
		})
	})
}
