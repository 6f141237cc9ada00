package rest_test

// A procedure's comments over REST: its answer embeds the newest
// limits.EmbeddedComments, oldest first, and GET /procedures/{id}/comments
// pages through all of them in the List envelope, with the same item shape.

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/limits"
)

// commentText is the text of a procedure's i-th comment (from 1), so that
// order shows in the texts.
func commentText(i int) string { return fmt.Sprintf("comment %02d", i) }

// checkEmbeddedComment asserts the shape of a comment as a procedure embeds
// it: exactly id, text and createdAt.
func checkEmbeddedComment(t testing.TB, c map[string]any) {
	t.Helper()
	wantKeys(t, "comment", c, "id", "text", "createdAt")
	wantID(t, "comment id", c["id"])
	wantTimestamp(t, "comment createdAt", c["createdAt"])
	wantString(t, "comment text", c["text"])
}

// texts returns each item's text, checking that every item is exactly the
// embedded comment shape.
func texts(t testing.TB, items []map[string]any) []string {
	t.Helper()
	out := make([]string, len(items))
	for i, c := range items {
		checkEmbeddedComment(t, c)
		out[i] = c["text"].(string)
	}
	return out
}

// span is the texts of comments from..to (from 1, inclusive), oldest first.
func span(from, to int) []string {
	out := []string{}
	for i := from; i <= to; i++ {
		out = append(out, commentText(i))
	}
	return out
}

func anyItems(t testing.TB, v any) []map[string]any {
	t.Helper()
	list, ok := v.([]any)
	if !ok {
		t.Fatalf("comments is %T, want an array: %v", v, v)
	}
	out := make([]map[string]any, len(list))
	for i, c := range list {
		out[i] = asObject(t, c, "comment")
	}
	return out
}

func TestProcedureComments(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		other := &env{srv: e.srv, ws: e.srv.NewWorkspace(t, "Other", "OTH")}
		foreign := other.createProcedure(t, nil)
		wantOK(t, other.do(t, "POST", "/procedures/"+foreign["id"].(string)+"/comments", other.ws.MemberToken, map[string]any{"text": "theirs"}))

		// Procedures with 0, 3 and 25 comments, each added through POST.
		counts := []int{0, 3, 25}
		procs := map[int]map[string]any{}
		for _, n := range counts {
			p := e.createProcedure(t, map[string]any{"name": fmt.Sprintf("With %d comments", n)})
			for i := 1; i <= n; i++ {
				wantOK(t, e.do(t, "POST", "/procedures/"+p["id"].(string)+"/comments", e.ws.MemberToken, map[string]any{"text": commentText(i)}))
			}
			procs[n] = p
		}

		// GET /procedures/{id} and GET /procedures embed the newest
		// limits.EmbeddedComments, oldest first.
		listed := map[string]map[string]any{}
		items, _ := wantList(t, e.do(t, "GET", "/procedures?limit=100", e.ws.ViewToken, nil), checkProcedure)
		for _, p := range items {
			listed[p["id"].(string)] = p
		}
		for _, n := range counts {
			id := procs[n]["id"].(string)
			want := span(max(1, n-limits.EmbeddedComments+1), n)
			for _, src := range []struct {
				name string
				p    map[string]any
			}{
				{"GET one", wantOK(t, e.do(t, "GET", "/procedures/"+id, e.ws.ViewToken, nil))},
				{"GET by shortId", wantOK(t, e.do(t, "GET", "/procedures/"+procs[n]["shortId"].(string), e.ws.ViewToken, nil))},
				{"a list item", listed[id]},
			} {
				if src.p == nil {
					t.Fatalf("procedure with %d comments not in the list", n)
				}
				if got := texts(t, anyItems(t, src.p["comments"])); !reflect.DeepEqual(got, want) {
					t.Errorf("%s of the procedure with %d comments embeds %v, want %v", src.name, n, got, want)
				}
			}
		}

		// The endpoint pages through every comment, oldest first.
		type page struct {
			query string
			want  []string
		}
		cases := []struct {
			n     int
			pages []page
		}{
			{0, []page{{"", span(1, 0)}, {"?page=2", span(1, 0)}, {"?limit=100", span(1, 0)}}},
			{3, []page{{"", span(1, 3)}, {"?limit=2", span(1, 2)}, {"?page=2&limit=2", span(3, 3)}, {"?page=3&limit=2", span(1, 0)}}},
			{25, []page{
				{"", span(1, core.DefaultCommentPageSize)},
				{"?page=1&limit=10", span(1, 10)},
				{"?page=2&limit=10", span(11, 20)},
				{"?page=3&limit=10", span(21, 25)},
				{"?page=4&limit=10", span(1, 0)},
				{"?page=2", span(21, 25)},
				{"?pageSize=7&page=4", span(22, 25)},
				{"?perPage=25", span(1, 25)},
				{"?limit=100", span(1, 25)},
			}},
		}
		for _, tc := range cases {
			for _, pg := range tc.pages {
				t.Run(fmt.Sprintf("%d comments %s", tc.n, pg.query), func(t *testing.T) {
					path := "/procedures/" + procs[tc.n]["id"].(string) + "/comments" + pg.query
					items, total := wantList(t, e.do(t, "GET", path, e.ws.ViewToken, nil), checkEmbeddedComment)
					if total != tc.n {
						t.Errorf("total %d, want %d", total, tc.n)
					}
					if got := texts(t, items); !reflect.DeepEqual(got, pg.want) {
						t.Errorf("page holds %v, want %v", got, pg.want)
					}
				})
			}
		}

		t.Run("the list's items are the embedded ones, byte for byte", func(t *testing.T) {
			p := procs[25]
			items, _ := wantList(t, e.do(t, "GET", "/procedures/"+p["shortId"].(string)+"/comments?limit=100", e.ws.ViewToken, nil), checkEmbeddedComment)
			embedded := anyItems(t, wantOK(t, e.do(t, "GET", "/procedures/"+p["id"].(string), e.ws.ViewToken, nil))["comments"])
			if got := items[len(items)-limits.EmbeddedComments:]; !reflect.DeepEqual(got, embedded) {
				t.Fatalf("the newest %d listed differ from the embedded ones:\nlisted   %v\nembedded %v", limits.EmbeddedComments, got, embedded)
			}
		})

		// Every comment is listed once across the pages, and the ids are
		// those POST answered (checked by the total and the texts above;
		// here: no id twice).
		t.Run("pages do not overlap", func(t *testing.T) {
			seen := map[string]bool{}
			for pg := 1; pg <= 3; pg++ {
				items, _ := wantList(t, e.do(t, "GET", fmt.Sprintf("/procedures/%s/comments?page=%d&limit=10", procs[25]["id"], pg), e.ws.ViewToken, nil), checkEmbeddedComment)
				for _, c := range items {
					if seen[c["id"].(string)] {
						t.Fatalf("comment %v on two pages", c)
					}
					seen[c["id"].(string)] = true
				}
			}
			if len(seen) != 25 {
				t.Fatalf("%d comments across the pages, want 25", len(seen))
			}
		})

		id := procs[3]["id"].(string)
		errs := []struct {
			name, path, token string
			status            int
			code, field       string
		}{
			{"another workspace's procedure", "/procedures/" + foreign["id"].(string) + "/comments", e.ws.ViewToken, 404, "not_found", ""},
			{"another workspace's shortId", "/procedures/" + foreign["shortId"].(string) + "/comments", e.ws.ViewToken, 404, "not_found", ""},
			{"an unknown shortId", "/procedures/RST-404/comments", e.ws.ViewToken, 404, "not_found", ""},
			{"an id of another kind", "/procedures/" + e.ws.ProjectID + "/comments", e.ws.ViewToken, 404, "not_found", ""},
			{"no token", "/procedures/" + id + "/comments", "", 401, "unauthenticated", ""},
			{"page 0", "/procedures/" + id + "/comments?page=0", e.ws.ViewToken, 400, "validation_failed", "page"},
			{"page not a number", "/procedures/" + id + "/comments?page=two", e.ws.ViewToken, 400, "validation_failed", "page"},
			{"page too far", "/procedures/" + id + "/comments?page=1000001", e.ws.ViewToken, 400, "validation_failed", "page"},
			{"limit 0", "/procedures/" + id + "/comments?limit=0", e.ws.ViewToken, 400, "validation_failed", "limit"},
			{"limit over the maximum", "/procedures/" + id + "/comments?limit=101", e.ws.ViewToken, 400, "validation_failed", "limit"},
			{"pageSize over the maximum", "/procedures/" + id + "/comments?pageSize=101", e.ws.ViewToken, 400, "validation_failed", "pageSize"},
			{"perPage signed", "/procedures/" + id + "/comments?perPage=%2B5", e.ws.ViewToken, 400, "validation_failed", "perPage"},
			{"limit and an alias", "/procedures/" + id + "/comments?limit=5&perPage=5", e.ws.ViewToken, 400, "validation_failed", "perPage"},
			{"a search (not a parameter here)", "/procedures/" + id + "/comments?search=x", e.ws.ViewToken, 400, "validation_failed", "search"},
			// The parameters are checked before the procedure is looked up.
			{"bad page of an unknown procedure", "/procedures/RST-404/comments?page=0", e.ws.ViewToken, 400, "validation_failed", "page"},
		}
		for _, tc := range errs {
			t.Run(tc.name, func(t *testing.T) {
				wantError(t, e.do(t, "GET", tc.path, tc.token, nil), tc.status, tc.code, tc.field)
			})
		}
	})
}

// TestProcedureCommentsCache: the comments page is a footprinted route. Its
// cached answer survives a comment on another procedure and is recomputed
// after a comment on its own (or the procedure's deletion).
func TestProcedureCommentsCache(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		mine, theirs := e.createProcedure(t, nil)["id"].(string), e.createProcedure(t, nil)["id"].(string)
		comment := func(id, text string) {
			wantOK(t, e.do(t, "POST", "/procedures/"+id+"/comments", e.ws.MemberToken, map[string]any{"text": text}))
		}
		comment(mine, commentText(1))
		path := "/procedures/" + mine + "/comments"
		read := func() (*response, []string) {
			r := e.do(t, "GET", path, e.ws.ViewToken, nil)
			items, total := wantList(t, r, checkEmbeddedComment)
			got := texts(t, items)
			if total != len(got) {
				t.Fatalf("total %d, %d listed", total, len(got))
			}
			return r, got
		}
		// The cache stores an answer once it has been sent: read until the
		// stored one answers (for up to 10 s: a loaded CI machine under
		// -race may take a while to store it).
		for i := 0; ; i++ {
			if r, _ := read(); r.Header.Get("X-Cache") == "hit" {
				break
			}
			if i == 1000 {
				t.Fatal("the comments page is never served from the cache")
			}
			time.Sleep(10 * time.Millisecond)
		}
		comment(theirs, "elsewhere")
		if r, got := read(); r.Header.Get("X-Cache") != "hit" || !reflect.DeepEqual(got, span(1, 1)) {
			t.Fatalf("after a comment on another procedure: X-Cache %q, %v; want a hit of %v", r.Header.Get("X-Cache"), got, span(1, 1))
		}
		comment(mine, commentText(2))
		if r, got := read(); r.Header.Get("X-Cache") == "hit" || !reflect.DeepEqual(got, span(1, 2)) {
			t.Fatalf("after a comment on this procedure: X-Cache %q, %v; want a fresh %v", r.Header.Get("X-Cache"), got, span(1, 2))
		}
		wantOK(t, e.do(t, "DELETE", "/procedures/"+mine, e.ws.MemberToken, nil))
		wantError(t, e.do(t, "GET", path, e.ws.ViewToken, nil), http.StatusNotFound, "not_found", "")
	})
}

// TestProcedureOfTenThousandComments: a procedure holds any number of
// comments, and every answer showing it stays the size of its newest
// limits.EmbeddedComments. Of a procedure of 10 000: GET /procedures/{id}
// and a list page embed the newest 20 with commentCount 10 000, in a few
// kilobytes; GET /procedures/{id}/comments pages through all of them,
// each once, oldest first, every page (the last included) as small; and
// POST adds the 10 001st.
func TestProcedureOfTenThousandComments(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		const n = 10_000
		p := e.createProcedure(t, map[string]any{"name": "Long-running"})
		id := p["id"].(string)
		few := e.createProcedure(t, map[string]any{"name": "Few"})
		for i := 1; i <= 3; i++ {
			wantOK(t, e.do(t, "POST", "/procedures/"+few["id"].(string)+"/comments", e.ws.MemberToken, map[string]any{"text": commentText(i)}))
		}
		at := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
		if err := bench.SeedComments(context.Background(), db.Client, uuid.MustParse(e.ws.ID), uuid.MustParse(id), uuid.MustParse(e.ws.MemberID),
			n, at, func(i int) string { return commentText(i + 1) }); err != nil {
			t.Fatal(err)
		}
		// embeds checks a procedure as an answer shows it: the newest 20
		// of total, oldest first.
		embeds := func(t *testing.T, what string, p map[string]any, total int, newest ...string) {
			t.Helper()
			checkProcedure(t, p)
			want := append(span(total-limits.EmbeddedComments+1, min(total, n)), newest...)
			want = want[len(want)-limits.EmbeddedComments:]
			if got := texts(t, anyItems(t, p["comments"])); !reflect.DeepEqual(got, want) || p["commentCount"] != float64(total) {
				t.Fatalf("%s embeds %v of %v, want %v of %d", what, got, p["commentCount"], want, total)
			}
		}
		one := e.do(t, "GET", "/procedures/"+id, e.ws.ViewToken, nil)
		embeds(t, "GET one", wantOK(t, one), n)
		// 20 comments of 13 characters and a procedure: a few kilobytes,
		// as with 20 comments in all.
		if len(one.Raw) > 4<<10 {
			t.Fatalf("GET of the procedure is %d bytes", len(one.Raw))
		}
		list := e.do(t, "GET", "/procedures?limit=100", e.ws.ViewToken, nil)
		items, total := wantList(t, list, checkProcedure)
		if total != 2 || len(items) != 2 {
			t.Fatalf("%d procedures listed of %d", len(items), total)
		}
		for _, it := range items {
			switch it["id"] {
			case id:
				embeds(t, "the list", it, n)
			default:
				if it["commentCount"] != float64(3) || len(anyItems(t, it["comments"])) != 3 {
					t.Fatalf("the other procedure shows %v of %v comments", it["comments"], it["commentCount"])
				}
			}
		}
		if len(list.Raw) > 6<<10 {
			t.Fatalf("the list page is %d bytes", len(list.Raw))
		}

		// Every comment, each once, oldest first, in pages of 100.
		seen := make(map[string]bool, n)
		var all []string
		for pg := 1; ; pg++ {
			r := e.do(t, "GET", fmt.Sprintf("/procedures/%s/comments?page=%d&limit=100", id, pg), e.ws.ViewToken, nil)
			items, total := wantList(t, r, checkEmbeddedComment)
			if total != n {
				t.Fatalf("page %d: total %d, want %d", pg, total, n)
			}
			if len(items) == 0 {
				if pg != n/100+1 {
					t.Fatalf("page %d is empty", pg)
				}
				break
			}
			if len(r.Raw) > 12<<10 {
				t.Fatalf("page %d is %d bytes", pg, len(r.Raw))
			}
			for _, c := range items {
				if seen[c["id"].(string)] {
					t.Fatalf("comment %v on two pages", c)
				}
				seen[c["id"].(string)] = true
			}
			all = append(all, texts(t, items)...)
		}
		if !reflect.DeepEqual(all, span(1, n)) {
			t.Fatalf("the pages hold %d comments, not the %d in order", len(all), n)
		}

		added := wantOK(t, e.do(t, "POST", "/procedures/"+id+"/comments", e.ws.MemberToken, map[string]any{"text": "the 10 001st"}))
		if added["text"] != "the 10 001st" {
			t.Fatalf("POST answered %v", added)
		}
		embeds(t, "GET after the 10 001st", wantOK(t, e.do(t, "GET", "/procedures/"+id, e.ws.ViewToken, nil)), n+1, "the 10 001st")
		last, total := wantList(t, e.do(t, "GET", "/procedures/"+id+"/comments?page=101&limit=100", e.ws.ViewToken, nil), checkEmbeddedComment)
		if got := texts(t, last); total != n+1 || !reflect.DeepEqual(got, []string{"the 10 001st"}) {
			t.Fatalf("the last page holds %v of %d", got, total)
		}
	})
}
