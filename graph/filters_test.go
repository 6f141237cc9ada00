package graph_test

// Multi-value and null filters (docs/api.md, "Filters"): lists of states,
// priorities, projects, categories and doers, a null element for "no
// category" or "unassigned"; every answer's procedures and total against
// the database's own COUNT, before and after writes that move procedures
// between the values (the totals come from tallies and caches, the COUNT
// from neither).

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// idsSQL runs a raw SELECT of ids written with ? placeholders on either
// dialect, sorted.
func idsSQL(t *testing.T, db *database.DB, query string, args ...any) []string {
	t.Helper()
	rows, err := db.SQL.QueryContext(context.Background(), dialectSQL(db, query), args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.ToLower(id))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// in is the SQL of "column IN (values)" and its arguments.
func in(column string, values ...string) (string, []any) {
	args := make([]any, len(values))
	for i, v := range values {
		args[i] = v
	}
	return column + " IN (" + strings.TrimSuffix(strings.Repeat("?,", len(values)), ",") + ")", args
}

// where joins conditions (each with its arguments) with AND.
type where struct {
	sql  []string
	args []any
}

func (w where) and(cond string, args ...any) where {
	return where{sql: append(append([]string(nil), w.sql...), "("+cond+")"), args: append(append([]any(nil), w.args...), args...)}
}

func (w where) andIn(column string, values ...string) where {
	cond, args := in(column, values...)
	return w.and(cond, args...)
}

func TestProcedureListFilters(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Filters", "FIL")
		other := s.NewWorkspace(t, "Other", "OTH")
		// Look-alike rows elsewhere that no answer may count.
		for i := 0; i < 4; i++ {
			createProc(t, s, other.MemberToken, procInput(other, fmt.Sprintf("fix %d", i), obj("state", "TODO", "priority", "HIGH")))
		}
		p1, p2, p3 := w.ProjectID, createProject(t, s, w.MemberToken, "Second"), createProject(t, s, w.MemberToken, "Third")
		c1, c2 := w.CategoryID, createCategory(t, s, w.MemberToken, "Second category")
		c3 := createCategory(t, s, w.MemberToken, "Third category")
		m1, m2, m3 := w.MemberID, w.AdminID, addMember(t, s, w, "Third Doer", "third@fil.example", "MEMBER")
		states := []string{"TODO", "IN_PROGRESS", "COMPLETED", "WAITING"}
		priorities := []string{"LOW", "MEDIUM", "HIGH"}
		projects, categories, doers := []string{p1, p2, p3}, []string{c1, c2, c3}, []string{m1, m2, m3}
		var procs []procT
		for i := 0; i < 30; i++ {
			name := []string{"fix the build", "write docs", "Fix flaky test", "plan"}[i%4]
			procs = append(procs, createProc(t, s, w.MemberToken, procInput(w, name, obj(
				"state", states[i%4], "priority", priorities[i%3], "projectId", projects[(i/5)%3],
				"categoryId", categories[(i/2)%3], "doerId", doers[(i/3)%3], "dueAt", fmt.Sprintf("2026-07-%02dT00:00:00Z", 1+i%9)))))
		}
		update := func(id string, in map[string]any) {
			t.Helper()
			ok(t, s.GraphQL(t, w.MemberToken, `mutation($id: ID!, $in: UpdateProcedureInput!) { updateProcedure(id: $id, input: $in) { id } }`,
				obj("id", id, "in", in)), &struct{}{})
		}
		// Some unassigned, some uncategorised.
		for i := 0; i < 30; i += 3 {
			update(procs[i].ID, obj("doerId", nil))
		}
		for i := 1; i < 30; i += 5 {
			update(procs[i].ID, obj("categoryId", nil))
		}

		ws := where{}.and("workspace_id = ?", w.ID)
		cases := []struct {
			name   string
			filter map[string]any
			where  where
		}{
			{"States", obj("states", []string{"TODO", "IN_PROGRESS"}), ws.andIn("state", "TODO", "IN_PROGRESS")},
			{"StatesAll", obj("states", states), ws},
			{"StatesRepeated", obj("states", []string{"TODO", "TODO"}), ws.andIn("state", "TODO")},
			{"Priorities", obj("priorities", []string{"HIGH", "MEDIUM"}), ws.andIn("priority", "HIGH", "MEDIUM")},
			{"PrioritiesInTwoProjects", obj("priorities", []string{"HIGH", "MEDIUM"}, "projectIds", []string{p1, p2}),
				ws.andIn("priority", "HIGH", "MEDIUM").andIn("project_id", p1, p2)},
			{"ProjectIds", obj("projectIds", []string{p3, p1}), ws.andIn("project_id", p1, p3)},
			{"ProjectIdsWithUnknown", obj("projectIds", []string{p2, uuid.NewString(), other.ProjectID}), ws.andIn("project_id", p2)},
			{"Unassigned", obj("doerIds", []any{nil}), ws.and("doer_id IS NULL")},
			{"UnassignedOrDoer", obj("doerIds", []any{m2, nil}), ws.and("doer_id IS NULL OR doer_id = ?", m2)},
			{"Doers", obj("doerIds", []any{m1, m3}), ws.andIn("doer_id", m1, m3)},
			{"NoCategory", obj("categoryIds", []any{nil}), ws.and("category_id IS NULL")},
			{"NoCategoryOrOne", obj("categoryIds", []any{nil, c2}), ws.and("category_id IS NULL OR category_id = ?", c2)},
			{"Categories", obj("categoryIds", []any{c1, c3}), ws.andIn("category_id", c1, c3)},
			{"UnassignedAndStates", obj("doerIds", []any{nil}, "states", []string{"TODO", "WAITING"}), ws.and("doer_id IS NULL").andIn("state", "TODO", "WAITING")},
			{"Combination", obj("states", []string{"TODO", "IN_PROGRESS", "WAITING"}, "priorities", []string{"HIGH", "LOW"},
				"projectIds", []string{p1, p3}, "categoryIds", []any{nil, c1, c2}, "doerIds", []any{m1, nil}),
				ws.andIn("state", "TODO", "IN_PROGRESS", "WAITING").andIn("priority", "HIGH", "LOW").andIn("project_id", p1, p3).
					and("category_id IS NULL OR category_id IN (?, ?)", c1, c2).and("doer_id IS NULL OR doer_id = ?", m1)},
			{"CombinationWithSearchAndDue", obj("search", "FIX", "states", []string{"TODO", "COMPLETED"}, "doerIds", []any{nil, m2},
				"dueFrom", "2026-07-02T00:00:00Z", "dueTo", "2026-07-07T00:00:00Z"),
				ws.and("LOWER(name) LIKE ? OR LOWER(COALESCE(content, '')) LIKE ? OR LOWER(short_id) LIKE ?", "%fix%", "%fix%", "%fix%").
					andIn("state", "TODO", "COMPLETED").and("doer_id IS NULL OR doer_id = ?", m2).
					and("due_at >= ? AND due_at <= ?", mustTime("2026-07-02T00:00:00Z"), mustTime("2026-07-07T00:00:00Z"))},
			{"SingularAsBefore", obj("state", "TODO", "priority", "HIGH", "projectId", p2, "categoryId", c2, "doerId", m3),
				ws.andIn("state", "TODO").andIn("priority", "HIGH").andIn("project_id", p2).andIn("category_id", c2).andIn("doer_id", m3)},
			// An empty list does not filter.
			{"EmptyLists", obj("states", []string{}, "priorities", []string{}, "projectIds", []string{}, "categoryIds", []any{}, "doerIds", []any{}), ws},
			{"EmptyListBesideAnother", obj("states", []string{}, "priorities", []string{"LOW"}), ws.andIn("priority", "LOW")},
		}
		check := func(t *testing.T, first bool) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					cond := strings.Join(tc.where.sql, " AND ")
					want := idsSQL(t, db, "SELECT id FROM procedures WHERE "+cond, tc.where.args...)
					if n := countSQL(t, db, "SELECT COUNT(*) FROM procedures WHERE "+cond, tc.where.args...); n != len(want) {
						t.Fatalf("COUNT %d, %d ids", n, len(want))
					}
					if len(want) == 0 && first {
						t.Fatalf("test data: %s matches nothing", tc.name)
					}
					p := listProcs(t, s, w.ViewToken, obj("first", 100, "filter", tc.filter))
					got := ids(p.Nodes)
					sort.Strings(got)
					if p.TotalCount != len(want) || !sameStrings(got, want) {
						t.Fatalf("totalCount %d, %v\nwant %d, %v", p.TotalCount, got, len(want), want)
					}
					for _, vars := range []map[string]any{obj("first", 1), obj("last", 2, "orderBy", obj("field", "NAME", "direction", "ASC"))} {
						vars["filter"] = tc.filter
						if p := listProcs(t, s, w.ViewToken, vars); p.TotalCount != len(want) {
							t.Fatalf("%v: totalCount %d, want %d", vars, p.TotalCount, len(want))
						}
					}
					// Each project's nested list with the same filter: its
					// total is the COUNT of its own.
					var out struct {
						Projects struct {
							Nodes []struct {
								ID         string
								Procedures struct{ TotalCount int }
							}
						}
					}
					ok(t, s.GraphQL(t, w.ViewToken, `query($filter: ProcedureFilter) { projects(first: 10) { nodes { id procedures(first: 1, filter: $filter) { totalCount } } } }`,
						obj("filter", tc.filter)), &out)
					sum := 0
					for _, n := range out.Projects.Nodes {
						mine := tc.where.and("project_id = ?", n.ID)
						if want := countSQL(t, db, "SELECT COUNT(*) FROM procedures WHERE "+strings.Join(mine.sql, " AND "), mine.args...); n.Procedures.TotalCount != want {
							t.Fatalf("project %s: nested totalCount %d, COUNT %d", n.ID, n.Procedures.TotalCount, want)
						}
						sum += n.Procedures.TotalCount
					}
					if sum != len(want) {
						t.Fatalf("nested totals add up to %d, want %d", sum, len(want))
					}
				})
			}
		}
		check(t, true)
		if t.Failed() {
			return
		}

		// Writes that move procedures between values of every list.
		t.Run("AfterWrites", func(t *testing.T) {
			update(procs[3].ID, obj("state", "TODO", "priority", "HIGH", "doerId", nil))
			update(procs[0].ID, obj("doerId", m3, "categoryId", nil, "projectId", p3))
			update(procs[5].ID, obj("state", "WAITING", "categoryId", c1))
			ok(t, s.GraphQL(t, w.MemberToken, `mutation($id: ID!) { moveProcedure(id: $id, state: IN_PROGRESS) { id } }`, obj("id", procs[8].ID)), &struct{}{})
			ok(t, s.GraphQL(t, w.MemberToken, `mutation($id: ID!) { deleteProcedure(id: $id) { success } }`, obj("id", procs[9].ID)), &struct{}{})
			createProc(t, s, w.MemberToken, procInput(w, "fix late", obj("state", "IN_PROGRESS", "priority", "MEDIUM", "projectId", p2, "categoryId", c2)))
			// A deleted category leaves its procedures uncategorised.
			ok(t, s.GraphQL(t, w.MemberToken, `mutation($id: ID!) { deleteCategory(id: $id) { success } }`, obj("id", c3)), &struct{}{})
			ok(t, s.GraphQL(t, w.AdminToken, `mutation($id: ID!) { removeMember(id: $id) { id } }`, obj("id", m3)), &struct{}{})
			check(t, false)
		})

		for _, tc := range []struct {
			name   string
			filter map[string]any
			field  string
		}{
			{"ErrStateAndStates", obj("state", "TODO", "states", []string{"TODO"}), "states"},
			{"ErrPriorityAndPriorities", obj("priority", "LOW", "priorities", []string{"HIGH"}), "priorities"},
			{"ErrProjectIdAndProjectIds", obj("projectId", p1, "projectIds", []string{p2}), "projectIds"},
			{"ErrCategoryIdAndCategoryIds", obj("categoryId", c1, "categoryIds", []any{nil}), "categoryIds"},
			{"ErrDoerIdAndDoerIds", obj("doerId", m1, "doerIds", []any{m2}), "doerIds"},
			{"ErrSingularAndEmptyList", obj("state", "TODO", "states", []string{}), "states"},
			{"ErrTooManyProjectIds", obj("projectIds", uuids(core.MaxFilterValues+1)), "projectIds"},
			{"ErrTooManyCategoryIds", obj("categoryIds", append(anyStrings(uuids(core.MaxFilterValues)), nil)), "categoryIds"},
			{"ErrTooManyDoerIds", obj("doerIds", anyStrings(uuids(core.MaxFilterValues+1))), "doerIds"},
			{"ErrTooManyStates", obj("states", repeat("TODO", core.MaxFilterValues+1)), "states"},
			{"ErrTooManyPriorities", obj("priorities", repeat("LOW", core.MaxFilterValues+1)), "priorities"},
			// A malformed id of a list is named as the singular field's
			// (core checks ids, and knows them by their REST names).
			{"ErrProjectIdsNotUUID", obj("projectIds", []string{p1, "p"}), "projectId"},
			{"ErrDoerIdsNotUUID", obj("doerIds", []any{nil, "me"}), "doerId"},
			{"ErrCategoryIdsNotUUID", obj("categoryIds", []any{"c"}), "categoryId"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				wantError(t, s.GraphQL(t, w.ViewToken, proceduresQuery, obj("filter", tc.filter)), "validation_failed", tc.field)
				r := s.GraphQL(t, w.ViewToken, `query($filter: ProcedureFilter) { projects(first: 2) { nodes { procedures(first: 1, filter: $filter) { totalCount } } } }`,
					obj("filter", tc.filter))
				wantError(t, r, "validation_failed", tc.field)
			})
		}
		t.Run("AtMostValuesAccepted", func(t *testing.T) {
			for _, f := range []map[string]any{
				obj("projectIds", append(uuids(core.MaxFilterValues-1), p1)),
				obj("doerIds", append(anyStrings(uuids(core.MaxFilterValues-1)), nil)),
				obj("states", repeat("TODO", core.MaxFilterValues)),
			} {
				listProcs(t, s, w.ViewToken, obj("first", 1, "filter", f))
			}
		})
	})
}

func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func uuids(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = uuid.NewString()
	}
	return out
}

func anyStrings(l []string) []any {
	out := make([]any, len(l))
	for i, v := range l {
		out[i] = v
	}
	return out
}

func repeat(v string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = v
	}
	return out
}
