package graph_test

// The procedures list over GraphQL: Relay pagination, filters and orders.

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

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
