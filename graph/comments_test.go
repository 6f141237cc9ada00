package graph_test

// Comments over GraphQL: addComment, updateComment and deleteComment, who
// may change or delete a comment (its author or an admin), a procedure of
// any number of comments, and the views comments(first:, last:) shows.

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

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

// seedComments stores n comments on procedureID directly, as the member,
// texts c0, c1, … created a second apart from at (thousands in one go,
// where adding them one by one through the API would take long).
func seedComments(t *testing.T, s *apitest.Server, w *apitest.Workspace, procedureID string, n int, at time.Time) {
	t.Helper()
	if err := bench.SeedComments(context.Background(), s.DB.Client, uuid.MustParse(w.ID), uuid.MustParse(procedureID), uuid.MustParse(w.MemberID),
		n, at, func(i int) string { return fmt.Sprintf("c%d", i) }); err != nil {
		t.Fatal(err)
	}
}

// cs spells the texts c<from> … c<to-1>.
func cs(from, to int) []string {
	out := make([]string, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("c%d", i))
	}
	return out
}

// TestCommentViews: comments(first:, last:) shows the oldest first or the
// newest last comments, oldest first, by default the oldest 20 (a page of
// the connection), with the total of all of them, also of a procedure of
// more than a page; out of range, or both, is refused before anything
// runs; every view of a page is read in one statement.
func TestCommentViews(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Views", "VIEW")
		at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
		p := createProc(t, s, w.MemberToken, procInput(w, "Seven", nil))
		seedComments(t, s, w, p.ID, 7, at)
		over := core.MaxCommentPageSize + 5
		long := createProc(t, s, w.MemberToken, procInput(w, "Long", nil))
		seedComments(t, s, w, long.ID, over, at)
		empty := createProc(t, s, w.MemberToken, procInput(w, "Quiet", nil))

		texts := func(t *testing.T, id, args string) []string {
			t.Helper()
			var out struct {
				Procedure struct{ Comments nodes[struct{ Text string }] }
			}
			ok(t, s.GraphQL(t, w.ViewToken, `query($id: ID!) { procedure(id: $id) { comments`+args+` { nodes { text } } } }`, obj("id", id)), &out)
			got := []string{}
			for _, c := range out.Procedure.Comments {
				got = append(got, c.Text)
			}
			return got
		}
		for _, tc := range []struct {
			name, id, args string
			want           []string
		}{
			{"All", p.ID, "", cs(0, 7)},
			{"First3", p.ID, "(first: 3)", cs(0, 3)},
			{"Last3", p.ID, "(last: 3)", cs(4, 7)},
			{"Last1", p.ID, "(last: 1)", cs(6, 7)},
			{"FirstMoreThanHeld", p.ID, "(first: 100)", cs(0, 7)},
			{"None", empty.ID, "(last: 5)", []string{}},
			{"FirstZero", p.ID, "(first: 0)", []string{}},
			{"MoreThanAPageDefaultPage", long.ID, "", cs(0, core.DefaultCommentPageSize)},
			{"MoreThanAPageFirst100", long.ID, "(first: 100)", cs(0, 100)},
			{"MoreThanAPageFirst", long.ID, "(first: 2)", cs(0, 2)},
			{"MoreThanAPageLast", long.ID, "(last: 2)", cs(over-2, over)},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if got := texts(t, tc.id, tc.args); !slices.Equal(got, tc.want) {
					t.Fatalf("comments%s = %v, want %v", tc.args, got, tc.want)
				}
			})
		}

		t.Run("ErrOutOfRange", func(t *testing.T) {
			for _, tc := range []struct {
				args  string
				vars  map[string]any
				field string
			}{
				{"(first: -1)", nil, "first"},
				{"(last: 101)", nil, "last"},
				{"(first: 1, last: 1)", nil, "last"},
				{"(first: $n)", obj("n", -1), "first"},
				{"(last: $n)", obj("n", 101), "last"},
			} {
				before := s.DB.Statements()
				if r := s.GraphQL(t, w.ViewToken, `{ __typename }`, nil); len(r.Errors) > 0 {
					t.Fatal(r.Errors)
				}
				auth := s.DB.Statements() - before
				vars := obj("id", p.ID)
				for k, v := range tc.vars {
					vars[k] = v
				}
				decl := "$id: ID!"
				if tc.vars != nil {
					decl += ", $n: Int"
				}
				before = s.DB.Statements()
				r := s.GraphQL(t, w.ViewToken, `query(`+decl+`) { procedure(id: $id) { comments`+tc.args+` { nodes { text } } } }`, vars)
				wantError(t, r, "validation_failed", tc.field)
				if r.Status != http.StatusBadRequest || len(r.Data) != 0 {
					t.Fatalf("comments%s: status %d, data %s", tc.args, r.Status, r.Data)
				}
				if ran := s.DB.Statements() - before; ran != auth {
					t.Fatalf("comments%s: refused after %d statements, authentication runs %d", tc.args, ran, auth)
				}
			}
		})

		t.Run("ViewsOfAPageReadTogether", func(t *testing.T) {
			const one = `{ procedures(first: 5, orderBy: {field: NAME, direction: ASC}) { nodes { name comments { nodes { text } } } } }`
			const three = `{ procedures(first: 5, orderBy: {field: NAME, direction: ASC}) { nodes { name
				oldest: comments(first: 2) { nodes { text } } newest: comments(last: 2) { nodes { text } } all: comments { nodes { text } } } } }`
			statements := func(q string) (int64, *apitest.GQLResponse) {
				before := s.DB.Statements()
				r := s.GraphQL(t, w.ViewToken, q, nil)
				return s.DB.Statements() - before, r
			}
			// The version's shared edges and total, read once; the texts
			// differ, so that no answer comes from the response cache.
			statements(one)
			base, _ := statements(one + " # again")
			n, r := statements(three)
			var out struct {
				Procedures struct {
					Nodes []struct {
						Name                string
						Oldest, Newest, All nodes[struct{ Text string }]
					}
				}
			}
			ok(t, r, &out)
			if n != base {
				t.Fatalf("three views of a page's comments cost %d statements, one view %d", n, base)
			}
			want := map[string][3][]string{
				"Long":  {cs(0, 2), cs(over-2, over), cs(0, core.DefaultCommentPageSize)},
				"Quiet": {{}, {}, {}},
				"Seven": {cs(0, 2), cs(5, 7), cs(0, 7)},
			}
			for _, node := range out.Procedures.Nodes {
				text := func(c nodes[struct{ Text string }]) []string {
					out := []string{}
					for _, x := range c {
						out = append(out, x.Text)
					}
					return out
				}
				got := [3][]string{text(node.Oldest), text(node.Newest), text(node.All)}
				if w := want[node.Name]; !slices.Equal(got[0], w[0]) || !slices.Equal(got[1], w[1]) || !slices.Equal(got[2], w[2]) {
					t.Fatalf("%s: %v, want %v", node.Name, got, w)
				}
			}
			if len(out.Procedures.Nodes) != 3 {
				t.Fatalf("%d procedures", len(out.Procedures.Nodes))
			}
		})

		// A procedure holds any number of comments: the long one takes
		// more, and its total follows.
		t.Run("AddPastAPage", func(t *testing.T) {
			addComment(t, s, w.MemberToken, long.ID, "one more")
			var out struct {
				Procedure struct {
					Comments struct {
						TotalCount int
						Nodes      []struct{ Text string }
					}
				}
			}
			ok(t, s.GraphQL(t, w.ViewToken, `query($id: ID!) { procedure(id: $id) { comments(last: 1) { totalCount nodes { text } } } }`, obj("id", long.ID)), &out)
			if c := out.Procedure.Comments; c.TotalCount != over+1 || len(c.Nodes) != 1 || c.Nodes[0].Text != "one more" {
				t.Fatalf("after one more: %+v", c)
			}
		})
	})
}
