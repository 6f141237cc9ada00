package graph_test

// Keyset cursors through the API (docs/api.md, "Cursors"): the page after
// (or before) a cursor starts right beyond the row the cursor names,
// whatever was inserted or deleted since the page that gave it, for every
// sort of the procedures, both directions, both ways of paging, and for the
// name-sorted lists; rows tying on the sort key page by id. A cursor of
// another list, sort, filter or parent, or one this API never made, is
// validation_failed naming the argument.

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// procSortFields are ProcedureOrderField's values.
var procSortFields = []string{"CREATED_AT", "DUE_AT", "NAME", "PROJECT_NAME"}

// keyRow is a procedure of the cursor tests with every key it sorts by,
// and the group of each key's values it took (see keyValue).
type keyRow struct {
	id, name, project string
	due, created      time.Time
	group             map[string]int
}

// Every sort key takes the value of a group: 0..3 for the data set (three
// rows each, so that rows tie), -1 before all of them and 4 after.
func keyValue(field string, g int) any {
	switch field {
	case "CREATED_AT":
		return time.Date(2025, 1, 2+g, 8, 0, 0, 0, time.UTC)
	case "DUE_AT":
		return time.Date(2026, 2, 2+g, 12, 0, 0, 0, time.UTC)
	case "NAME":
		return fmt.Sprintf("n%d", g+1)
	}
	return fmt.Sprintf("p%d", g+1) // PROJECT_NAME: the project's name
}

// cmpKey compares a and b by field's key alone.
func cmpKey(field string, a, b keyRow) int {
	switch field {
	case "CREATED_AT":
		return a.created.Compare(b.created)
	case "DUE_AT":
		return a.due.Compare(b.due)
	case "NAME":
		return strings.Compare(a.name, b.name)
	}
	return strings.Compare(a.project, b.project)
}

// listOrder compares rows in a procedure list's order: by field, then id,
// both in one direction.
func listOrder(field string, desc bool) func(a, b keyRow) int {
	return func(a, b keyRow) int {
		c := cmpKey(field, a, b)
		if c == 0 {
			c = strings.Compare(a.id, b.id)
		}
		if desc {
			return -c
		}
		return c
	}
}

// beyond is the page of size a cursor at row at selects in rows (sorted by
// order): the first rows after it, or (backward) the last rows before it,
// and whether more lie beyond them.
func beyond[T any](rows []T, at T, order func(a, b T) int, backward bool, size int) ([]T, bool) {
	var out []T
	for _, r := range rows {
		if c := order(r, at); (backward && c < 0) || (!backward && c > 0) {
			out = append(out, r)
		}
	}
	more := len(out) > size
	if backward {
		return out[max(0, len(out)-size):], more
	}
	return out[:min(size, len(out))], more
}

// keyFixture is a workspace of twelve procedures whose four sort keys take
// four values each, three rows apiece, independently of each other; the
// projects p0 … p5 give PROJECT_NAME its groups -1 … 4.
type keyFixture struct {
	s        *apitest.Server
	db       *database.DB
	w        *apitest.Workspace
	projects map[string]string
	rows     map[string]keyRow
}

func newKeyFixture(t *testing.T, s *apitest.Server, db *database.DB) *keyFixture {
	t.Helper()
	f := &keyFixture{s: s, db: db, w: s.NewWorkspace(t, "Keys", "KEY"), projects: map[string]string{}, rows: map[string]keyRow{}}
	for g := -1; g <= 4; g++ {
		name := keyValue("PROJECT_NAME", g).(string)
		f.projects[name] = createProject(t, s, f.w.MemberToken, name)
	}
	for i := 0; i < 12; i++ {
		// i ↦ 5i mod 12 and 7i mod 12 are permutations: every key's groups
		// hold three rows, differently mixed for each key.
		f.add(t, map[string]int{"NAME": i / 3, "DUE_AT": i % 4, "CREATED_AT": 5 * i % 12 / 3, "PROJECT_NAME": 7 * i % 12 / 3})
	}
	return f
}

// add creates a procedure with the keys of groups; its creation time is
// set in the database (the API stamps the clock's).
func (f *keyFixture) add(t *testing.T, groups map[string]int) keyRow {
	t.Helper()
	r := keyRow{
		name: keyValue("NAME", groups["NAME"]).(string), project: keyValue("PROJECT_NAME", groups["PROJECT_NAME"]).(string),
		due: keyValue("DUE_AT", groups["DUE_AT"]).(time.Time), created: keyValue("CREATED_AT", groups["CREATED_AT"]).(time.Time),
		group: groups,
	}
	r.id = createProc(t, f.s, f.w.MemberToken, procInput(f.w, r.name, obj("dueAt", r.due.Format(time.RFC3339), "projectId", f.projects[r.project]))).ID
	execSQL(t, f.db, "UPDATE procedures SET created_at = ? WHERE id = ?", r.created, r.id)
	f.rows[r.id] = r
	return r
}

// addKeyed adds a procedure whose field key is in group g, its other keys
// in group 1.
func (f *keyFixture) addKeyed(t *testing.T, field string, g int) keyRow {
	groups := map[string]int{"NAME": 1, "DUE_AT": 1, "CREATED_AT": 1, "PROJECT_NAME": 1}
	groups[field] = g
	return f.add(t, groups)
}

func (f *keyFixture) remove(t *testing.T, id string) {
	t.Helper()
	ok(t, f.s.GraphQL(t, f.w.MemberToken, `mutation($id: ID!) { deleteProcedure(id: $id) { success } }`, obj("id", id)), &struct{}{})
	delete(f.rows, id)
}

// sorted is the rows in order.
func (f *keyFixture) sorted(order func(a, b keyRow) int) []keyRow {
	out := make([]keyRow, 0, len(f.rows))
	for _, r := range f.rows {
		out = append(out, r)
	}
	slices.SortFunc(out, order)
	return out
}

func keyIDs(rows []keyRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.id
	}
	return out
}

// checkFull reads the whole list in orderBy's order and compares it with
// the rows sorted by order.
func (f *keyFixture) checkFull(t *testing.T, orderBy map[string]any, order func(a, b keyRow) int) {
	t.Helper()
	all := listProcs(t, f.s, f.w.ViewToken, obj("first", 100, "orderBy", orderBy))
	if want := keyIDs(f.sorted(order)); !sameStrings(ids(all.Nodes), want) || all.TotalCount != len(want) {
		t.Fatalf("whole list (total %d) %v\nwant %v", all.TotalCount, ids(all.Nodes), want)
	}
}

// walkAcrossWrites reads a page, writes around its cursor, and reads the
// next page from the cursor: it must hold the rows right beyond the cursor
// in the list as it now is, none of the first page's and none skipped.
// Then the cursor's own row goes, and the cursor still marks its place.
func (f *keyFixture) walkAcrossWrites(t *testing.T, field string, desc, backward bool) {
	const size = 4
	dir := "ASC"
	if desc {
		dir = "DESC"
	}
	orderBy := obj("field", field, "direction", dir)
	order := listOrder(field, desc)
	page := func(cursor string) procPage {
		vars := obj("orderBy", orderBy)
		switch {
		case backward:
			vars["last"] = size
			if cursor != "" {
				vars["before"] = cursor
			}
		default:
			vars["first"] = size
			if cursor != "" {
				vars["after"] = cursor
			}
		}
		return listProcs(t, f.s, f.w.ViewToken, vars)
	}
	f.checkFull(t, orderBy, order)
	sorted := f.sorted(order)
	first := page("")
	// at is the row the cursor names (the page's edge nearest the rest of
	// the list), next the row beyond it, far the page's other end.
	var cursor string
	var want []keyRow
	var at, next, far keyRow
	if backward {
		want = sorted[len(sorted)-size:]
		cursor, at, next, far = deref(first.PageInfo.StartCursor), want[0], sorted[len(sorted)-size-1], want[size-1]
	} else {
		want = sorted[:size]
		cursor, at, next, far = deref(first.PageInfo.EndCursor), want[size-1], sorted[size], want[0]
	}
	if !sameStrings(ids(first.Nodes), keyIDs(want)) {
		t.Fatalf("first page %v, want %v", ids(first.Nodes), keyIDs(want))
	}
	if cmpKey(field, at, next) != 0 {
		t.Fatalf("test data: the rows either side of the cursor do not tie on %s", field)
	}

	// Between the pages: a row on the side already shown, a row tying
	// with the cursor's (only its id places it), and the deletion of a
	// row shown and of the row that would have come next.
	seen := -1
	if backward != desc {
		seen = 4
	}
	f.addKeyed(t, field, seen)
	f.addKeyed(t, field, at.group[field])
	f.remove(t, far.id)
	f.remove(t, next.id)
	f.checkFull(t, orderBy, order)

	check := func(t *testing.T, what string) {
		t.Helper()
		got := page(cursor)
		want, more := beyond(f.sorted(order), at, order, backward, size)
		if !sameStrings(ids(got.Nodes), keyIDs(want)) {
			t.Fatalf("%s: page %v\nwant %v\nwhole list %v", what, ids(got.Nodes), keyIDs(want), keyIDs(f.sorted(order)))
		}
		for _, id := range ids(got.Nodes) {
			if slices.Contains(ids(first.Nodes), id) {
				t.Fatalf("%s: %s was on the first page too", what, id)
			}
		}
		wantInfo := pageInfoT{HasNextPage: more, HasPreviousPage: true}
		if backward {
			wantInfo = pageInfoT{HasNextPage: true, HasPreviousPage: more}
		}
		if got.PageInfo.HasNextPage != wantInfo.HasNextPage || got.PageInfo.HasPreviousPage != wantInfo.HasPreviousPage ||
			got.TotalCount != len(f.rows) {
			t.Fatalf("%s: total %d, %+v; want %d, %+v", what, got.TotalCount, got.PageInfo, len(f.rows), wantInfo)
		}
	}
	check(t, "after the writes")
	f.remove(t, at.id)
	check(t, "after the cursor's row went")
	f.checkFull(t, orderBy, order)
}

func TestCursorsStableAcrossWrites(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		for _, field := range procSortFields {
			for _, desc := range []bool{false, true} {
				for _, backward := range []bool{false, true} {
					name := field + "_ASC"
					if desc {
						name = field + "_DESC"
					}
					if backward {
						name += "_LastBefore"
					} else {
						name += "_FirstAfter"
					}
					t.Run(name, func(t *testing.T) {
						newKeyFixture(t, s, db).walkAcrossWrites(t, field, desc, backward)
					})
				}
			}
		}

		// after and before together select the rows between two cursors,
		// as the list is when asked.
		t.Run("BetweenCursors", func(t *testing.T) {
			f := newKeyFixture(t, s, db)
			orderBy := obj("field", "DUE_AT", "direction", "ASC")
			order := listOrder("DUE_AT", false)
			all := listProcs(t, s, f.w.ViewToken, obj("first", 100, "orderBy", orderBy))
			sorted := f.sorted(order)
			lo, hi := sorted[1], sorted[8]
			after, before := all.Edges[1].Cursor, all.Edges[8].Cursor
			f.addKeyed(t, "DUE_AT", sorted[4].group["DUE_AT"])
			f.addKeyed(t, "DUE_AT", -1)
			f.remove(t, sorted[5].id)
			var between []keyRow
			for _, r := range f.sorted(order) {
				if order(r, lo) > 0 && order(r, hi) < 0 {
					between = append(between, r)
				}
			}
			for _, tc := range []struct {
				name       string
				size       map[string]any
				want       []keyRow
				next, prev bool
			}{
				// Going forward, hasNextPage says whether rows beyond the
				// page lie before the before cursor.
				{"All", obj(), between, false, true},
				{"First2", obj("first", 2), between[:2], true, true},
				{"Last2", obj("last", 2), between[len(between)-2:], true, true},
			} {
				t.Run(tc.name, func(t *testing.T) {
					vars := obj("after", after, "before", before, "orderBy", orderBy)
					for k, v := range tc.size {
						vars[k] = v
					}
					p := listProcs(t, s, f.w.ViewToken, vars)
					if !sameStrings(ids(p.Nodes), keyIDs(tc.want)) || p.PageInfo.HasNextPage != tc.next || p.PageInfo.HasPreviousPage != tc.prev {
						t.Fatalf("%v %+v\nwant %v", ids(p.Nodes), p.PageInfo, keyIDs(tc.want))
					}
				})
			}
		})
	})
}

// cursorText rewrites a cursor's decoded text with edit.
func cursorText(t *testing.T, c string, edit func(parts []string) []string) string {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		t.Fatalf("cursor %q is not base64url: %v", c, err)
	}
	parts := strings.Split(string(raw), "|")
	return base64.RawURLEncoding.EncodeToString([]byte(strings.Join(edit(parts), "|")))
}

// TestCursorErrors: a cursor belongs to one list, sort and filter; any
// other use of it, and anything this API never returned as a cursor, is
// validation_failed naming the argument that carried it. Filters that admit
// the same procedures share their cursors; a page of none still counts.
func TestCursorErrors(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		f := newKeyFixture(t, s, db)
		token := f.w.ViewToken
		nameAsc := obj("field", "NAME", "direction", "ASC")
		byName := listProcs(t, s, token, obj("first", 2, "orderBy", nameAsc))
		c := *byName.PageInfo.EndCursor
		byCreated := listProcs(t, s, token, obj("first", 2))
		projects := listNamed(t, s, token, "projects", obj("first", 2))
		pc := *projects.PageInfo.EndCursor
		var comments struct {
			Procedure struct {
				Comments struct{ PageInfo pageInfoT }
			}
		}
		pid := byName.Nodes[0].ID
		addComment(t, s, f.w.MemberToken, pid, "one")
		addComment(t, s, f.w.MemberToken, pid, "two")
		ok(t, s.GraphQL(t, token, `query($id: ID!) { procedure(id: $id) { comments(first: 1) { pageInfo { endCursor } } } }`, obj("id", pid)), &comments)
		cc := *comments.Procedure.Comments.PageInfo.EndCursor

		b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
		for _, tc := range []struct {
			name  string
			vars  map[string]any
			field string
		}{
			{"OtherDirection", obj("after", c, "orderBy", obj("field", "NAME", "direction", "DESC")), "after"},
			{"OtherField", obj("after", c, "orderBy", obj("field", "DUE_AT", "direction", "ASC")), "after"},
			{"OtherFieldSameKeyKind", obj("after", c, "orderBy", obj("field", "PROJECT_NAME", "direction", "ASC")), "after"},
			{"DefaultOrder", obj("after", c), "after"},
			{"CreatedAtCursorOnName", obj("after", *byCreated.PageInfo.EndCursor, "orderBy", nameAsc), "after"},
			{"BeforeOtherSort", obj("last", 2, "before", c, "orderBy", obj("field", "NAME", "direction", "DESC")), "before"},
			// Every row is TODO: the filter admits the same rows, but is
			// another filter.
			{"OtherFilter", obj("after", c, "orderBy", nameAsc, "filter", obj("state", "TODO")), "after"},
			{"OtherSearch", obj("after", c, "orderBy", nameAsc, "filter", obj("search", "n")), "after"},
			{"ProjectsCursor", obj("after", pc, "orderBy", nameAsc), "after"},
			{"CommentsCursor", obj("before", cc, "last", 1, "orderBy", nameAsc), "before"},
			{"Garbage", obj("after", "garbage!"), "after"},
			{"Empty", obj("after", ""), "after"},
			{"NotACursor", obj("after", b64("hello")), "after"},
			{"LegacyOffset", obj("after", b64("o:5")), "after"},
			{"LegacyOffsetBefore", obj("last", 1, "before", b64("o:5")), "before"},
			{"OtherVersion", obj("after", cursorText(t, c, func(p []string) []string { p[0] = "k2"; return p }), "orderBy", nameAsc), "after"},
			{"IdNotUUID", obj("after", cursorText(t, c, func(p []string) []string { p[2] = "x"; return p }), "orderBy", nameAsc), "after"},
			{"TimeKeyOnName", obj("after", cursorText(t, c, func(p []string) []string { p[3] = "t1700000000000000000"; return p }), "orderBy", nameAsc), "after"},
			{"UnknownKeyKind", obj("after", cursorText(t, c, func(p []string) []string { p[3] = "xn2"; return p }), "orderBy", nameAsc), "after"},
			{"NoKey", obj("after", cursorText(t, c, func(p []string) []string { return p[:3] }), "orderBy", nameAsc), "after"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				wantError(t, s.GraphQL(t, token, proceduresQuery, tc.vars), "validation_failed", tc.field)
			})
		}
		for _, tc := range []struct {
			name, list string
			vars       map[string]any
		}{
			{"ProceduresCursorOnProjects", "projects", obj("after", c)},
			{"ProceduresCursorOnCategories", "categories", obj("after", c)},
			{"ProceduresCursorOnMembers", "members", obj("after", c)},
			{"ProjectsCursorOnCategories", "categories", obj("after", pc)},
			{"ProjectsCursorOnMembers", "members", obj("after", pc)},
			{"ProjectsCursorOfAnotherSearch", "projects", obj("after", pc, "search", "p")},
			{"LegacyOffsetOnProjects", "projects", obj("after", b64("o:1"))},
		} {
			t.Run(tc.name, func(t *testing.T) {
				q := fmt.Sprintf(`query($after: String, $search: String) { %s(first: 2, after: $after, search: $search) { totalCount } }`, tc.list)
				wantError(t, s.GraphQL(t, token, q, tc.vars), "validation_failed", "after")
			})
		}
		t.Run("CommentsCursorOfProceduresList", func(t *testing.T) {
			r := s.GraphQL(t, token, `query($id: ID!, $after: String) { procedure(id: $id) { comments(first: 1, after: $after) { totalCount } } }`,
				obj("id", pid, "after", c))
			wantError(t, r, "validation_failed", "after")
		})

		// Filters that admit the same procedures (the same values in any
		// order, repeated, or one value given singly) are one list.
		t.Run("CanonicalFilterSharesCursors", func(t *testing.T) {
			order := listOrder("NAME", false)
			want := keyIDs(f.sorted(order))
			first := listProcs(t, s, token, obj("first", 3, "orderBy", nameAsc, "filter", obj("states", []string{"TODO", "IN_PROGRESS"})))
			next := listProcs(t, s, token, obj("first", 3, "after", *first.PageInfo.EndCursor, "orderBy", nameAsc,
				"filter", obj("states", []string{"IN_PROGRESS", "TODO", "TODO"})))
			if !sameStrings(ids(next.Nodes), want[3:6]) {
				t.Fatalf("states in another order: %v, want %v", ids(next.Nodes), want[3:6])
			}
			first = listProcs(t, s, token, obj("first", 3, "orderBy", nameAsc, "filter", obj("state", "TODO")))
			next = listProcs(t, s, token, obj("first", 3, "after", *first.PageInfo.EndCursor, "orderBy", nameAsc, "filter", obj("states", []string{"TODO"})))
			if !sameStrings(ids(next.Nodes), want[3:6]) {
				t.Fatalf("state given as a list: %v, want %v", ids(next.Nodes), want[3:6])
			}
		})

		// A cursor names a row, not a direction: the start of a page read
		// backward starts a page read forward, and the other way round.
		t.Run("EitherDirection", func(t *testing.T) {
			want := keyIDs(f.sorted(listOrder("NAME", false)))
			back := listProcs(t, s, token, obj("last", 3, "orderBy", nameAsc))
			p := listProcs(t, s, token, obj("first", 5, "after", *back.PageInfo.StartCursor, "orderBy", nameAsc))
			if !sameStrings(ids(p.Nodes), want[len(want)-2:]) {
				t.Fatalf("after the last page's start: %v, want %v", ids(p.Nodes), want[len(want)-2:])
			}
			p = listProcs(t, s, token, obj("last", 5, "before", c, "orderBy", nameAsc))
			if !sameStrings(ids(p.Nodes), want[:1]) {
				t.Fatalf("before the first page's end: %v, want %v", ids(p.Nodes), want[:1])
			}
		})

		t.Run("EmptyPages", func(t *testing.T) {
			n := len(f.rows)
			for _, tc := range []struct {
				name       string
				vars       map[string]any
				next, prev bool
			}{
				{"First0", obj("first", 0), true, false},
				{"Last0", obj("last", 0), false, true},
				{"First0After", obj("first", 0, "after", c, "orderBy", nameAsc), true, true},
				{"Last0Before", obj("last", 0, "before", c, "orderBy", nameAsc), true, true},
			} {
				t.Run(tc.name, func(t *testing.T) {
					p := listProcs(t, s, token, tc.vars)
					if len(p.Nodes) != 0 || p.TotalCount != n || p.PageInfo.StartCursor != nil || p.PageInfo.EndCursor != nil ||
						p.PageInfo.HasNextPage != tc.next || p.PageInfo.HasPreviousPage != tc.prev {
						t.Fatalf("%d nodes, total %d, %+v; want none of %d, next %v, previous %v",
							len(p.Nodes), p.TotalCount, p.PageInfo, n, tc.next, tc.prev)
					}
				})
			}
		})
	})
}

// namedRow is a record of a name-sorted list.
type namedRow = named

func namedOrder(a, b namedRow) int {
	if c := strings.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// namedLists are the name-sorted lists, with how a test adds a record to
// one and takes one away.
var namedLists = []struct {
	field  string
	add    func(t *testing.T, s *apitest.Server, w *apitest.Workspace, name string) string
	remove string
}{
	{"projects", func(t *testing.T, s *apitest.Server, w *apitest.Workspace, name string) string {
		return createProject(t, s, w.MemberToken, name)
	}, `mutation($id: ID!) { deleteProject(id: $id) { success } }`},
	{"categories", func(t *testing.T, s *apitest.Server, w *apitest.Workspace, name string) string {
		return createCategory(t, s, w.MemberToken, name)
	}, `mutation($id: ID!) { deleteCategory(id: $id) { success } }`},
	{"members", func(t *testing.T, s *apitest.Server, w *apitest.Workspace, name string) string {
		return addMember(t, s, w, name, fmt.Sprintf("%s.%d@keys.example", strings.ToLower(name), time.Now().UnixNano()), "MEMBER")
	}, `mutation($id: ID!) { removeMember(id: $id) { id } }`},
}

// TestNamedCursorsStableAcrossWrites is the walk across writes of
// TestCursorsStableAcrossWrites for projects, categories and members
// (sorted by name, then id), both ways of paging.
func TestNamedCursorsStableAcrossWrites(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		for _, list := range namedLists {
			for _, backward := range []bool{false, true} {
				name := list.field + "_FirstAfter"
				if backward {
					name = list.field + "_LastBefore"
				}
				t.Run(name, func(t *testing.T) {
					// Capitalised names sort alike in every collation:
					// the workspace's own records (Acme …, Ada Admin,
					// Max Member, Vic Viewer) and three Kb and three Kc.
					w := s.NewWorkspace(t, "Acme", "ACME")
					rows := map[string]namedRow{}
					for _, n := range []string{"Kb", "Kb", "Kb", "Kc", "Kc", "Kc"} {
						id := list.add(t, s, w, n)
						rows[id] = namedRow{ID: id, Name: n}
					}
					sorted := func() []namedRow {
						out := make([]namedRow, 0, len(rows))
						for _, r := range rows {
							out = append(out, r)
						}
						slices.SortFunc(out, namedOrder)
						return out
					}
					read := false
					checkFull := func(t *testing.T) {
						t.Helper()
						all := listNamed(t, s, w.ViewToken, list.field, obj("first", 100))
						got := all.Nodes
						// The workspace's own records join the model on
						// the first read.
						for _, n := range got {
							if _, ok := rows[n.ID]; !ok && !read && n.Name != "Kb" && n.Name != "Kc" {
								rows[n.ID] = n
							}
						}
						read = true
						if want := namedIDs(sorted()); !sameStrings(namedIDs(got), want) || all.TotalCount != len(want) {
							t.Fatalf("whole list (total %d) %v\nwant %v", all.TotalCount, got, sorted())
						}
					}
					checkFull(t)
					all := sorted()
					var size int
					var at, next, far namedRow
					var seenName string
					if backward {
						j := len(all) - 1
						for all[j].Name != "Kc" {
							j--
						}
						size = len(all) - (j - 1)
						at, next, far, seenName = all[j-1], all[j-2], all[j], "Zz"
					} else {
						i := slices.IndexFunc(all, func(r namedRow) bool { return r.Name == "Kb" })
						size = i + 2
						at, next, far, seenName = all[i+1], all[i+2], all[i], "Ka"
					}
					vars := obj("first", size)
					if backward {
						vars = obj("last", size)
					}
					first := listNamed(t, s, w.ViewToken, list.field, vars)
					cursor := deref(first.PageInfo.EndCursor)
					if backward {
						cursor = deref(first.PageInfo.StartCursor)
					}
					if at.Name != next.Name || !slices.Contains(namedIDs(first.Nodes), far.ID) || !slices.Contains(namedIDs(first.Nodes), at.ID) {
						t.Fatalf("test data: first page %v, cursor at %v, next %v", first.Nodes, at, next)
					}
					for _, n := range []string{seenName, at.Name} {
						id := list.add(t, s, w, n)
						rows[id] = namedRow{ID: id, Name: n}
					}
					for _, id := range []string{far.ID, next.ID} {
						ok(t, s.GraphQL(t, w.AdminToken, list.remove, obj("id", id)), &struct{}{})
						delete(rows, id)
					}
					checkFull(t)
					check := func(t *testing.T, what string) {
						t.Helper()
						vars := obj("first", 2, "after", cursor)
						if backward {
							vars = obj("last", 2, "before", cursor)
						}
						got := listNamed(t, s, w.ViewToken, list.field, vars)
						want, more := beyond(sorted(), at, namedOrder, backward, 2)
						if !sameStrings(namedIDs(got.Nodes), namedIDs(want)) {
							t.Fatalf("%s: page %v\nwant %v\nwhole list %v", what, got.Nodes, want, sorted())
						}
						if backward && (got.PageInfo.HasPreviousPage != more || !got.PageInfo.HasNextPage) ||
							!backward && (got.PageInfo.HasNextPage != more || !got.PageInfo.HasPreviousPage) || got.TotalCount != len(rows) {
							t.Fatalf("%s: total %d, %+v; want %d, more %v", what, got.TotalCount, got.PageInfo, len(rows), more)
						}
					}
					check(t, "after the writes")
					ok(t, s.GraphQL(t, w.AdminToken, list.remove, obj("id", at.ID)), &struct{}{})
					delete(rows, at.ID)
					check(t, "after the cursor's row went")
					checkFull(t)
				})
			}
		}
	})
}
