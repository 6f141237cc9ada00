package graph_test

// API tokens over GraphQL: createToken, the tokens list and revokeToken.

import (
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

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
