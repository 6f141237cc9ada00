package graph_test

// Procedure.comments as a connection (docs/api.md, "Comments"): oldest
// first, its total, its page info and cursors, whether the page came from
// the batched read of a whole list (no cursor) or from one procedure's read
// at a cursor; and the cursors' stability across writes, as for every list.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/viewer"
)

// commentRow is a comment of the model a test keeps.
type commentRow struct {
	id, text string
	created  time.Time
}

// commentOrder is the connection's order: oldest first, then by id.
func commentOrder(a, b commentRow) int {
	if c := a.created.Compare(b.created); c != 0 {
		return c
	}
	return strings.Compare(a.id, b.id)
}

// storeComment writes a comment of the member's on procedureID created at
// at, straight into the database (the API stamps the clock's time).
func storeComment(t *testing.T, s *apitest.Server, w *apitest.Workspace, procedureID, text string, at time.Time) commentRow {
	t.Helper()
	c, err := s.DB.Client.Comment.Create().SetWorkspaceID(uuid.MustParse(w.ID)).SetProcedureID(uuid.MustParse(procedureID)).
		SetAuthorID(uuid.MustParse(w.MemberID)).SetText(text).SetCreatedAt(at).SetUpdatedAt(at).Save(viewer.System(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	return commentRow{id: c.ID.String(), text: text, created: at}
}

type commentPage struct {
	TotalCount int
	PageInfo   pageInfoT
	Edges      []struct {
		Cursor string
		Node   struct{ ID, Text string }
	}
	Nodes []struct{ ID, Text string }
}

func (p commentPage) ids() []string {
	out := make([]string, len(p.Nodes))
	for i, n := range p.Nodes {
		out[i] = n.ID
	}
	return out
}

const commentPageQuery = `query($id: ID!, $first: Int, $after: String, $last: Int, $before: String) {
	procedure(id: $id) { comments(first: $first, after: $after, last: $last, before: $before) {
		totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
		edges { cursor node { id text } } nodes { id text }
	} }
}`

// readComments reads a page of a procedure's comments, checking that its
// edges and nodes agree and that its start and end cursors are its edges'.
func readComments(t *testing.T, s *apitest.Server, token, procedureID string, vars map[string]any) commentPage {
	t.Helper()
	v := obj("id", procedureID)
	for k, x := range vars {
		v[k] = x
	}
	var out struct {
		Procedure struct{ Comments commentPage }
	}
	ok(t, s.GraphQL(t, token, commentPageQuery, v), &out)
	p := out.Procedure.Comments
	checkCommentPage(t, p)
	return p
}

func checkCommentPage(t *testing.T, p commentPage) {
	t.Helper()
	if len(p.Edges) != len(p.Nodes) {
		t.Fatalf("%d edges, %d nodes", len(p.Edges), len(p.Nodes))
	}
	for i, e := range p.Edges {
		if e.Node.ID != p.Nodes[i].ID {
			t.Fatalf("edge %d is %s, node %s", i, e.Node.ID, p.Nodes[i].ID)
		}
	}
	if n := len(p.Edges); n == 0 && (p.PageInfo.StartCursor != nil || p.PageInfo.EndCursor != nil) ||
		n > 0 && (deref(p.PageInfo.StartCursor) != p.Edges[0].Cursor || deref(p.PageInfo.EndCursor) != p.Edges[n-1].Cursor) {
		t.Fatalf("pageInfo %+v does not match the edges %+v", p.PageInfo, p.Edges)
	}
}

// TestCommentConnection: every way of paging a procedure's comments, with
// its total and where the page sits; the cursors of a page read for a whole
// list serve the reads at a cursor of one procedure; a cursor of another
// procedure is refused.
func TestCommentConnection(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Talk", "TALK")
		p := createProc(t, s, w.MemberToken, procInput(w, "Seven", nil))
		quiet := createProc(t, s, w.MemberToken, procInput(w, "Quiet", nil))
		at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
		seedComments(t, s, w, p.ID, 7, at)
		all := readComments(t, s, w.ViewToken, p.ID, obj("first", 100))
		if got := commentTexts(all); !slices.Equal(got, cs(0, 7)) || all.TotalCount != 7 {
			t.Fatalf("all comments %v (total %d), want %v", got, all.TotalCount, cs(0, 7))
		}
		cursor := func(i int) string { return all.Edges[i].Cursor }

		for _, tc := range []struct {
			name       string
			vars       map[string]any
			want       []string
			next, prev bool
		}{
			{"Default", obj(), cs(0, 7), false, false},
			{"First3", obj("first", 3), cs(0, 3), true, false},
			{"First7", obj("first", 7), cs(0, 7), false, false},
			{"Last3", obj("last", 3), cs(4, 7), false, true},
			{"Last7", obj("last", 7), cs(0, 7), false, false},
			{"First3After2", obj("first", 3, "after", cursor(2)), cs(3, 6), true, true},
			{"First3After4", obj("first", 3, "after", cursor(4)), cs(5, 7), false, true},
			{"AfterLast", obj("first", 3, "after", cursor(6)), []string{}, false, true},
			{"AfterDefaultSize", obj("after", cursor(0)), cs(1, 7), false, true},
			{"Last2Before4", obj("last", 2, "before", cursor(4)), cs(2, 4), true, true},
			{"Last10Before2", obj("last", 10, "before", cursor(2)), cs(0, 2), true, false},
			{"BeforeFirst", obj("last", 3, "before", cursor(0)), []string{}, true, false},
			{"AfterAndBefore", obj("after", cursor(1), "before", cursor(5)), cs(2, 5), false, true},
			{"First2AfterAndBefore", obj("first", 2, "after", cursor(1), "before", cursor(5)), cs(2, 4), true, true},
			{"Last2AfterAndBefore", obj("last", 2, "after", cursor(1), "before", cursor(5)), cs(3, 5), true, true},
			// A page of none still carries the total and where it is.
			{"First0", obj("first", 0), []string{}, true, false},
			{"Last0", obj("last", 0), []string{}, false, true},
			{"First0After", obj("first", 0, "after", cursor(3)), []string{}, true, true},
			{"Last0Before", obj("last", 0, "before", cursor(3)), []string{}, true, true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got := readComments(t, s, w.ViewToken, p.ID, tc.vars)
				if !slices.Equal(commentTexts(got), tc.want) || got.TotalCount != 7 ||
					got.PageInfo.HasNextPage != tc.next || got.PageInfo.HasPreviousPage != tc.prev {
					t.Fatalf("%v, total %d, %+v; want %v, 7, next %v, previous %v",
						commentTexts(got), got.TotalCount, got.PageInfo, tc.want, tc.next, tc.prev)
				}
			})
		}
		t.Run("NoComments", func(t *testing.T) {
			for _, vars := range []map[string]any{obj(), obj("first", 0), obj("last", 5)} {
				got := readComments(t, s, w.ViewToken, quiet.ID, vars)
				if len(got.Nodes) != 0 || got.TotalCount != 0 || got.PageInfo.HasNextPage || got.PageInfo.HasPreviousPage {
					t.Fatalf("%v: %+v", vars, got)
				}
			}
		})
		// Every edge's cursor starts the rest of the list.
		t.Run("EveryEdgeCursor", func(t *testing.T) {
			for i, e := range all.Edges {
				got := readComments(t, s, w.ViewToken, p.ID, obj("after", e.Cursor))
				if !slices.Equal(commentTexts(got), cs(i+1, 7)) {
					t.Fatalf("after edge %d: %v", i, commentTexts(got))
				}
				got = readComments(t, s, w.ViewToken, p.ID, obj("last", 100, "before", e.Cursor))
				if !slices.Equal(commentTexts(got), cs(0, i)) {
					t.Fatalf("before edge %d: %v", i, commentTexts(got))
				}
			}
		})
		// The pages of a list of procedures come from one batched read;
		// their cursors and page info are those of one procedure's read.
		t.Run("ListPagesAsOneProcedures", func(t *testing.T) {
			var out struct {
				Procedures struct {
					Nodes []struct {
						ID                      string
						Oldest, Newest, Nothing commentPage
					}
				}
			}
			const q = `{ procedures(first: 10) { nodes { id
				oldest: comments(first: 3) { ...page } newest: comments(last: 2) { ...page } nothing: comments(first: 0) { ...page } } } }
				fragment page on CommentConnection { totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor } edges { cursor node { id text } } nodes { id text } }`
			ok(t, s.GraphQL(t, w.ViewToken, q, nil), &out)
			if len(out.Procedures.Nodes) != 2 {
				t.Fatalf("%d procedures", len(out.Procedures.Nodes))
			}
			for _, n := range out.Procedures.Nodes {
				for _, c := range []struct {
					name string
					page commentPage
					vars map[string]any
				}{{"oldest", n.Oldest, obj("first", 3)}, {"newest", n.Newest, obj("last", 2)}, {"nothing", n.Nothing, obj("first", 0)}} {
					checkCommentPage(t, c.page)
					one := readComments(t, s, w.ViewToken, n.ID, c.vars)
					if !same(c.page, one) {
						t.Fatalf("%s %s in a list: %+v\nalone: %+v", n.ID, c.name, c.page, one)
					}
				}
				if n.ID != p.ID {
					continue
				}
				got := readComments(t, s, w.ViewToken, p.ID, obj("first", 3, "after", deref(n.Oldest.PageInfo.EndCursor)))
				if !slices.Equal(commentTexts(got), cs(3, 6)) {
					t.Fatalf("after the list's oldest 3: %v", commentTexts(got))
				}
				got = readComments(t, s, w.ViewToken, p.ID, obj("last", 3, "before", deref(n.Newest.PageInfo.StartCursor)))
				if !slices.Equal(commentTexts(got), cs(2, 5)) {
					t.Fatalf("before the list's newest 2: %v", commentTexts(got))
				}
			}
		})
		t.Run("ErrCursorOfAnotherProcedure", func(t *testing.T) {
			other := createProc(t, s, w.MemberToken, procInput(w, "Other", nil))
			seedComments(t, s, w, other.ID, 3, at)
			wantError(t, s.GraphQL(t, w.ViewToken, commentPageQuery, obj("id", other.ID, "after", cursor(1))), "validation_failed", "after")
			wantError(t, s.GraphQL(t, w.ViewToken, commentPageQuery, obj("id", other.ID, "last", 1, "before", cursor(1))), "validation_failed", "before")
		})
		t.Run("ErrNotACursor", func(t *testing.T) {
			for _, c := range []string{"nope", "", "bzo1"} {
				wantError(t, s.GraphQL(t, w.ViewToken, commentPageQuery, obj("id", p.ID, "after", c)), "validation_failed", "after")
			}
		})
	})
}

func commentTexts(p commentPage) []string {
	out := []string{}
	for _, n := range p.Nodes {
		out = append(out, n.Text)
	}
	return out
}

// TestCommentCursorsStableAcrossWrites: a procedure's comments paged from a
// cursor across an insert on the side already shown, one tying with the
// cursor's creation time, one through the API (the newest), and the
// deletion of a comment shown and of the one that would have come next;
// then of the cursor's own comment. Both ways of paging.
func TestCommentCursorsStableAcrossWrites(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		base := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
		hour := func(g int) time.Time { return base.Add(time.Duration(g) * time.Hour) }
		for _, backward := range []bool{false, true} {
			name := "FirstAfter"
			if backward {
				name = "LastBefore"
			}
			t.Run(name, func(t *testing.T) {
				w := s.NewWorkspace(t, "Talk", "TALK")
				p := createProc(t, s, w.MemberToken, procInput(w, "Discussed", nil))
				rows := map[string]commentRow{}
				// Nine comments, three at each of three times.
				for i := 0; i < 9; i++ {
					r := storeComment(t, s, w, p.ID, fmt.Sprintf("c%d", i), hour(i/3))
					rows[r.id] = r
				}
				sorted := func() []commentRow {
					out := make([]commentRow, 0, len(rows))
					for _, r := range rows {
						out = append(out, r)
					}
					slices.SortFunc(out, commentOrder)
					return out
				}
				ids := func(rs []commentRow) []string {
					out := make([]string, len(rs))
					for i, r := range rs {
						out[i] = r.id
					}
					return out
				}
				checkFull := func(t *testing.T) {
					t.Helper()
					got := readComments(t, s, w.ViewToken, p.ID, obj("first", 100))
					if want := ids(sorted()); !slices.Equal(got.ids(), want) || got.TotalCount != len(want) {
						t.Fatalf("all comments (total %d) %v\nwant %v", got.TotalCount, got.ids(), want)
					}
				}
				checkFull(t)
				const size = 4
				all := sorted()
				var cursor string
				var at, next, far commentRow
				var seen time.Time
				vars := obj("first", size)
				if backward {
					vars = obj("last", size)
				}
				first := readComments(t, s, w.ViewToken, p.ID, vars)
				if backward {
					cursor, at, next, far, seen = deref(first.PageInfo.StartCursor), all[len(all)-size], all[len(all)-size-1], all[len(all)-1], hour(5)
				} else {
					cursor, at, next, far, seen = deref(first.PageInfo.EndCursor), all[size-1], all[size], all[0], hour(-1)
				}
				if !at.created.Equal(next.created) || !slices.Contains(first.ids(), at.id) || !slices.Contains(first.ids(), far.id) {
					t.Fatalf("test data: first page %v, cursor at %v, next %v", first.ids(), at, next)
				}

				for _, r := range []commentRow{
					storeComment(t, s, w, p.ID, "seen", seen),
					storeComment(t, s, w, p.ID, "tie", at.created),
				} {
					rows[r.id] = r
				}
				var added struct {
					AddComment struct{ ID, CreatedAt string }
				}
				ok(t, s.GraphQL(t, w.MemberToken, `mutation($in: AddCommentInput!) { addComment(input: $in) { id createdAt } }`,
					obj("in", obj("procedureId", p.ID, "text", "newest"))), &added)
				created, err := time.Parse(time.RFC3339, added.AddComment.CreatedAt)
				if err != nil {
					t.Fatal(err)
				}
				rows[added.AddComment.ID] = commentRow{id: added.AddComment.ID, text: "newest", created: created}
				remove := func(id string) {
					ok(t, s.GraphQL(t, w.AdminToken, `mutation($id: ID!) { deleteComment(id: $id) { success } }`, obj("id", id)), &struct{}{})
					delete(rows, id)
				}
				remove(far.id)
				remove(next.id)
				checkFull(t)
				check := func(t *testing.T, what string) {
					t.Helper()
					vars := obj("first", size, "after", cursor)
					if backward {
						vars = obj("last", size, "before", cursor)
					}
					got := readComments(t, s, w.ViewToken, p.ID, vars)
					want, more := beyond(sorted(), at, commentOrder, backward, size)
					if !slices.Equal(got.ids(), ids(want)) {
						t.Fatalf("%s: %v\nwant %v\nall %v", what, commentTexts(got), ids(want), ids(sorted()))
					}
					for _, id := range got.ids() {
						if slices.Contains(first.ids(), id) {
							t.Fatalf("%s: %s was on the first page too", what, id)
						}
					}
					if backward && (got.PageInfo.HasPreviousPage != more || !got.PageInfo.HasNextPage) ||
						!backward && (got.PageInfo.HasNextPage != more || !got.PageInfo.HasPreviousPage) || got.TotalCount != len(rows) {
						t.Fatalf("%s: total %d, %+v; want %d, more %v", what, got.TotalCount, got.PageInfo, len(rows), more)
					}
				}
				check(t, "after the writes")
				remove(at.id)
				check(t, "after the cursor's comment went")
				checkFull(t)
			})
		}
	})
}

// TestCommentConnectionOfTenThousand: a procedure holds any number of
// comments, and its connection pages through 10 000 of them, each once and
// in order, forward (first/after) and backward (last/before), with their
// totalCount on every page. A page of procedures showing two views of each
// one's comments costs the statements it cost before two of them held
// 10 000 each, and stays as small. The 10 001st is added.
func TestCommentConnectionOfTenThousand(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Long", "LONG")
		const n = 10_000
		at := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
		var procs []string
		for i := range 5 {
			p := createProc(t, s, w.MemberToken, procInput(w, fmt.Sprintf("P%d", i), nil))
			seedComments(t, s, w, p.ID, i, at)
			procs = append(procs, p.ID)
		}
		const list = `{ procedures(first: 100, orderBy: {field: NAME, direction: ASC}) { totalCount nodes { name
			comments(last: 3) { totalCount nodes { text } } oldest: comments(first: 2) { nodes { text } } } } }`
		type listed struct {
			Procedures struct {
				Nodes []struct {
					Name     string
					Comments struct {
						TotalCount int
						Nodes      []struct{ Text string }
					}
					Oldest nodes[struct{ Text string }]
				}
			}
		}
		run := func(t *testing.T, q string) (int64, int, listed) {
			t.Helper()
			before := s.DB.Statements()
			r := s.GraphQL(t, w.ViewToken, q, nil)
			ran := s.DB.Statements() - before
			var out listed
			ok(t, r, &out)
			return ran, len(r.Data), out
		}
		// The fewest statements of two runs (texts differ, so that no
		// answer comes from the response cache): a run may also record
		// its token's use.
		fewest := func(t *testing.T, tag string) (int64, int, listed) {
			t.Helper()
			a, size, out := run(t, list+" # "+tag)
			b, _, _ := run(t, list+" # "+tag+" again")
			return min(a, b), size, out
		}
		run(t, list)
		base, small, _ := fewest(t, "few")
		// P0 and P3 now hold 10 000 comments (P3 its 3 first).
		seedComments(t, s, w, procs[0], n, at)
		seedComments(t, s, w, procs[3], n-3, at.Add(time.Hour))
		ran, size, out := fewest(t, "long")
		if ran != base {
			t.Fatalf("the page cost %d statements once two procedures held 10 000 comments, %d before", ran, base)
		}
		if size > small+200 {
			t.Fatalf("the page is %d bytes, %d before", size, small)
		}
		for _, node := range out.Procedures.Nodes {
			c := node.Comments
			var last []string
			for _, x := range c.Nodes {
				last = append(last, x.Text)
			}
			switch node.Name {
			case "P0":
				if c.TotalCount != n || !slices.Equal(last, cs(n-3, n)) || len(node.Oldest) != 2 || node.Oldest[0].Text != "c0" {
					t.Fatalf("P0: %+v, oldest %v", c, node.Oldest)
				}
			case "P3":
				if c.TotalCount != n || !slices.Equal(last, cs(n-6, n-3)) || len(node.Oldest) != 2 || node.Oldest[1].Text != "c1" {
					t.Fatalf("P3: %+v, oldest %v", c, node.Oldest)
				}
			}
		}

		// Forward, then backward, in pages of 100.
		forward := []string{}
		vars := obj("first", 100)
		for pages := 1; ; pages++ {
			p := readComments(t, s, w.ViewToken, procs[0], vars)
			if p.TotalCount != n || len(p.Nodes) != 100 {
				t.Fatalf("page %d: %d comments of %d", pages, len(p.Nodes), p.TotalCount)
			}
			for _, c := range p.Nodes {
				forward = append(forward, c.Text)
			}
			if !p.PageInfo.HasNextPage {
				if pages != n/100 {
					t.Fatalf("%d pages", pages)
				}
				break
			}
			vars = obj("first", 100, "after", *p.PageInfo.EndCursor)
		}
		backward := []string{}
		vars = obj("last", 100)
		for {
			p := readComments(t, s, w.ViewToken, procs[0], vars)
			if p.TotalCount != n || len(p.Nodes) != 100 {
				t.Fatalf("%d comments of %d", len(p.Nodes), p.TotalCount)
			}
			page := make([]string, 0, 100)
			for _, c := range p.Nodes {
				page = append(page, c.Text)
			}
			backward = append(page, backward...)
			if !p.PageInfo.HasPreviousPage {
				break
			}
			vars = obj("last", 100, "before", *p.PageInfo.StartCursor)
		}
		if !slices.Equal(forward, cs(0, n)) || !slices.Equal(backward, forward) {
			t.Fatalf("forward %d comments, backward %d, not the %d in order", len(forward), len(backward), n)
		}

		addComment(t, s, w.MemberToken, procs[0], "the 10 001st")
		if p := readComments(t, s, w.ViewToken, procs[0], obj("last", 2)); p.TotalCount != n+1 || p.Nodes[1].Text != "the 10 001st" {
			t.Fatalf("after the 10 001st: %d, %+v", p.TotalCount, p.Nodes)
		}
	})
}
