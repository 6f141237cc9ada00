package graph_test

// Members over GraphQL: addMember, updateMember, removeMember, member(id),
// the members list, and the rule that a workspace always keeps an active
// admin.

import (
	"strings"
	"testing"

	"github.com/procsvc/procsvc/graph/gqlhttp"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

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
			for _, m := range listNamed(t, s, w.ViewToken, "members", obj("first", gqlhttp.MaxPageSize)).Nodes {
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
