package graph_test

// Comments over GraphQL: addComment, updateComment and deleteComment, and
// who may change or delete a comment (its author or an admin).

import (
	"strings"
	"testing"

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
