package graph_test

// Authentication and roles: who may call what, and how a request without
// usable credentials is answered.

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

var roleRank = map[string]int{"VIEWER": 1, "MEMBER": 2, "ADMIN": 3}

func TestRoles(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		tokens := map[string]string{"VIEWER": w.ViewToken, "MEMBER": w.MemberToken, "ADMIN": w.AdminToken}
		seq := 0
		next := func(prefix string) string {
			seq++
			return prefix + string(rune('a'+seq%26)) + strings.Repeat("x", seq/26)
		}

		newProc := func(t *testing.T) procT { return createProc(t, s, w.MemberToken, procInput(w, next("proc "), nil)) }
		newMember := func(t *testing.T) string {
			e := next("m")
			return addMember(t, s, w, "Target "+e, e+"@acme.example", "VIEWER")
		}
		newToken := func(t *testing.T) string {
			var out struct {
				CreateToken struct{ Token struct{ ID string } }
			}
			ok(t, s.GraphQL(t, w.AdminToken, `mutation { createToken(input: {name: "target"}) { token { id } } }`, nil), &out)
			return out.CreateToken.Token.ID
		}

		cases := []struct {
			name, min, query string
			vars             func(t *testing.T) map[string]any
		}{
			{"CreateProcedure", "MEMBER", createProcMutation, func(t *testing.T) map[string]any { return obj("in", procInput(w, "new", nil)) }},
			{"UpdateProcedure", "MEMBER", `mutation($id: ID!) { updateProcedure(id: $id, input: {name: "changed"}) { id } }`,
				func(t *testing.T) map[string]any { return obj("id", newProc(t).ID) }},
			{"MoveProcedure", "MEMBER", `mutation($id: ID!) { moveProcedure(id: $id, state: COMPLETED) { id } }`,
				func(t *testing.T) map[string]any { return obj("id", newProc(t).ID) }},
			{"DeleteProcedure", "MEMBER", `mutation($id: ID!) { deleteProcedure(id: $id) { success } }`,
				func(t *testing.T) map[string]any { return obj("id", newProc(t).ID) }},
			{"CreateProject", "MEMBER", `mutation { createProject(input: {name: "new"}) { id } }`, func(t *testing.T) map[string]any { return nil }},
			{"UpdateProject", "MEMBER", `mutation($id: ID!) { updateProject(id: $id, input: {name: "changed"}) { id } }`,
				func(t *testing.T) map[string]any {
					return obj("id", createProject(t, s, w.MemberToken, next("project ")))
				}},
			{"DeleteProject", "MEMBER", `mutation($id: ID!) { deleteProject(id: $id) { success } }`,
				func(t *testing.T) map[string]any {
					return obj("id", createProject(t, s, w.MemberToken, next("project ")))
				}},
			{"CreateCategory", "MEMBER", `mutation { createCategory(input: {name: "new"}) { id } }`, func(t *testing.T) map[string]any { return nil }},
			{"UpdateCategory", "MEMBER", `mutation($id: ID!) { updateCategory(id: $id, input: {name: "changed"}) { id } }`,
				func(t *testing.T) map[string]any {
					return obj("id", createCategory(t, s, w.MemberToken, next("category ")))
				}},
			{"DeleteCategory", "MEMBER", `mutation($id: ID!) { deleteCategory(id: $id) { success } }`,
				func(t *testing.T) map[string]any {
					return obj("id", createCategory(t, s, w.MemberToken, next("category ")))
				}},
			{"AddComment", "MEMBER", `mutation($id: ID!) { addComment(input: {procedureId: $id, text: "hi"}) { id } }`,
				func(t *testing.T) map[string]any { return obj("id", newProc(t).ID) }},
			{"UpdateComment", "MEMBER", `mutation($id: ID!) { updateComment(id: $id, input: {text: "changed"}) { id } }`,
				func(t *testing.T) map[string]any {
					return obj("id", addComment(t, s, w.MemberToken, newProc(t).ID, "c"))
				}},
			{"DeleteComment", "MEMBER", `mutation($id: ID!) { deleteComment(id: $id) { success } }`,
				func(t *testing.T) map[string]any {
					return obj("id", addComment(t, s, w.MemberToken, newProc(t).ID, "c"))
				}},
			{"AddMember", "ADMIN", `mutation($e: String!) { addMember(input: {name: "New", email: $e}) { id } }`,
				func(t *testing.T) map[string]any { return obj("e", next("new")+"@acme.example") }},
			{"UpdateMember", "ADMIN", `mutation($id: ID!) { updateMember(id: $id, input: {role: MEMBER}) { id } }`,
				func(t *testing.T) map[string]any { return obj("id", newMember(t)) }},
			{"RemoveMember", "ADMIN", `mutation($id: ID!) { removeMember(id: $id) { id } }`,
				func(t *testing.T) map[string]any { return obj("id", newMember(t)) }},
			{"UnlinkMember", "ADMIN", `mutation($id: ID!) { unlinkMember(id: $id) { id } }`,
				func(t *testing.T) map[string]any { return obj("id", newMember(t)) }},
			{"AllowMemberLink", "ADMIN", `mutation($id: ID!) { allowMemberLink(id: $id) { id } }`,
				func(t *testing.T) map[string]any { return obj("id", newMember(t)) }},
			{"CreateToken", "ADMIN", `mutation { createToken(input: {name: "new"}) { secret } }`, func(t *testing.T) map[string]any { return nil }},
			{"CreateTokenForOther", "ADMIN", `mutation($id: ID) { createToken(input: {memberId: $id}) { secret } }`,
				func(t *testing.T) map[string]any { return obj("id", w.MemberID) }},
			{"RevokeToken", "ADMIN", `mutation($id: ID!) { revokeToken(id: $id) { id } }`,
				func(t *testing.T) map[string]any { return obj("id", newToken(t)) }},
			{"Tokens", "ADMIN", `{ tokens { id } }`, func(t *testing.T) map[string]any { return nil }},

			// Reads are open to every role.
			{"Viewer", "VIEWER", `{ viewer { id role } }`, func(t *testing.T) map[string]any { return nil }},
			{"Workspace", "VIEWER", `{ workspace { id } }`, func(t *testing.T) map[string]any { return nil }},
			{"Procedures", "VIEWER", `{ procedures { totalCount } }`, func(t *testing.T) map[string]any { return nil }},
			{"Procedure", "VIEWER", `query($id: ID!) { procedure(id: $id) { id comments { nodes { id } } } }`, func(t *testing.T) map[string]any { return obj("id", newProc(t).ShortID) }},
			{"Projects", "VIEWER", `{ projects { totalCount } }`, func(t *testing.T) map[string]any { return nil }},
			{"Project", "VIEWER", `query($id: ID!) { project(id: $id) { id } }`, func(t *testing.T) map[string]any { return obj("id", w.ProjectID) }},
			{"Categories", "VIEWER", `{ categories { totalCount } }`, func(t *testing.T) map[string]any { return nil }},
			{"Category", "VIEWER", `query($id: ID!) { category(id: $id) { id } }`, func(t *testing.T) map[string]any { return obj("id", w.CategoryID) }},
			{"Members", "VIEWER", `{ members { totalCount } }`, func(t *testing.T) map[string]any { return nil }},
			{"Member", "VIEWER", `query($id: ID!) { member(id: $id) { id } }`, func(t *testing.T) map[string]any { return obj("id", w.AdminID) }},
			{"Nodes", "VIEWER", `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, func(t *testing.T) map[string]any { return obj("ids", []string{w.ProjectID, w.MemberID}) }},
		}
		for _, tc := range cases {
			for _, role := range []string{"VIEWER", "MEMBER", "ADMIN"} {
				allowed := roleRank[role] >= roleRank[tc.min]
				name := tc.name + "_" + role
				if allowed {
					name += "_Allowed"
				} else {
					name += "_ErrForbidden"
				}
				t.Run(name, func(t *testing.T) {
					vars := tc.vars(t)
					before := snapshot(t, s, w.AdminToken)
					r := s.GraphQL(t, tokens[role], tc.query, vars)
					if allowed {
						if len(r.Errors) > 0 {
							t.Fatalf("%s refused: %+v", role, r.Errors)
						}
						if string(r.Data) == "null" || string(r.Data) == "" {
							t.Fatalf("no data")
						}
						return
					}
					wantError(t, r, "forbidden")
					if r.Status != http.StatusOK && r.Status != http.StatusForbidden {
						t.Fatalf("status %d", r.Status)
					}
					if after := snapshot(t, s, w.AdminToken); after != before {
						t.Fatalf("a forbidden call changed the workspace\nbefore %s\n after %s", before, after)
					}
				})
			}
		}
	})
}

// authProbe is one request made with a given Authorization header.
func authProbe(t testing.TB, s *apitest.Server, authorization, query string) *apitest.GQLResponse {
	t.Helper()
	h := http.Header{}
	if authorization != "" {
		h.Set("Authorization", authorization)
	}
	return rawGraphQL(t, s, http.MethodPost, "/graphql", h, "application/json", []byte(`{"query":`+quote(query)+`}`))
}

func TestUnauthenticated(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		const read = `{ viewer { id } }`
		const write = `mutation { createCategory(input: {name: "sneaky"}) { id } }`
		for _, tc := range []struct{ name, header string }{
			{"ErrNoHeader", ""},
			{"ErrSchemeOnly", "Bearer"},
			{"ErrSchemeAndSpace", "Bearer "},
			{"ErrBasicScheme", "Basic YWRtaW46YWRtaW4="},
			{"ErrOtherScheme", "Token " + w.AdminToken},
			{"ErrNoScheme", w.AdminToken},
			{"ErrSecretTooShort", "Bearer pms_short"},
			{"ErrSecretWithSpace", "Bearer " + w.AdminToken[:10] + " " + w.AdminToken[10:]},
			{"ErrSecretNonASCII", "Bearer pms_ééééééééééééééééééé"},
			{"ErrSecretTooLong", "Bearer " + strings.Repeat("a", 201)},
			{"ErrUnknownSecret", "Bearer pms_" + strings.Repeat("A", 43)},
			{"ErrTruncatedSecret", "Bearer " + w.AdminToken[:len(w.AdminToken)-1]},
			{"ErrTwoCredentials", "Bearer " + w.AdminToken + ", Bearer " + w.MemberToken},
		} {
			t.Run(tc.name, func(t *testing.T) {
				for _, q := range []string{read, write} {
					r := authProbe(t, s, tc.header, q)
					wantError(t, r, "unauthenticated")
					if r.Status != http.StatusUnauthorized {
						t.Fatalf("status %d, want 401", r.Status)
					}
					if h := r.Header.Get("WWW-Authenticate"); !strings.HasPrefix(h, "Bearer") {
						t.Fatalf("WWW-Authenticate = %q", h)
					}
					if string(r.Data) != "null" && len(r.Data) != 0 {
						t.Fatalf("data %s", r.Data)
					}
				}
			})
		}
		t.Run("NothingWritten", func(t *testing.T) {
			if c := listNamed(t, s, w.ViewToken, "categories", obj("search", "sneaky")); c.TotalCount != 0 {
				t.Fatalf("an unauthenticated mutation wrote %d categories", c.TotalCount)
			}
		})
		t.Run("SchemeIsCaseInsensitive", func(t *testing.T) {
			r := authProbe(t, s, "bearer "+w.MemberToken, `{ viewer { id } }`)
			var out struct{ Viewer named }
			ok(t, r, &out)
			if out.Viewer.ID != w.MemberID {
				t.Fatalf("viewer %s", out.Viewer.ID)
			}
		})
	})
}

func TestDisconnected(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		p := createProc(t, s, w.MemberToken, procInput(w, "Untouchable", nil))
		create := func(t *testing.T, memberID string) (id, secret string) {
			var out struct {
				CreateToken struct {
					Secret string
					Token  struct{ ID string }
				}
			}
			ok(t, s.GraphQL(t, w.AdminToken, `mutation($id: ID) { createToken(input: {memberId: $id, expiresAt: "2999-01-01"}) { secret token { id } } }`, obj("id", memberID)), &out)
			return out.CreateToken.Token.ID, out.CreateToken.Secret
		}
		expectDisconnected := func(t *testing.T, secret string, reason apperr.Reason) {
			t.Helper()
			before := snapshot(t, s, w.AdminToken)
			for _, q := range []string{`{ viewer { id } }`, `{ workspace { id } }`,
				`mutation($id: ID!) { updateProcedure(id: $id, input: {name: "changed"}) { id } }`,
				`mutation($id: ID!) { deleteProcedure(id: $id) { success } }`} {
				r := s.GraphQL(t, secret, q, obj("id", p.ID))
				wantError(t, r, "disconnected")
				if r.Status != http.StatusBadRequest {
					t.Fatalf("status %d, want 400", r.Status)
				}
				if r.Errors[0].Message != apperr.DisconnectedMessage {
					t.Fatalf("message %q", r.Errors[0].Message)
				}
				if got := r.Errors[0].Extensions.Reason; got != string(reason) {
					t.Fatalf("extensions.reason %q, want %q", got, reason)
				}
			}
			if after := snapshot(t, s, w.AdminToken); after != before {
				t.Fatalf("a disconnected token changed the workspace")
			}
		}
		t.Run("RevokedToken", func(t *testing.T) {
			id, secret := create(t, w.MemberID)
			ok(t, s.GraphQL(t, secret, `{ viewer { id } }`, nil), &struct{}{})
			ok(t, s.GraphQL(t, w.AdminToken, `mutation($id: ID!) { revokeToken(id: $id) { id } }`, obj("id", id)), &struct{}{})
			expectDisconnected(t, secret, apperr.TokenRevoked)
		})
		t.Run("ExpiredToken", func(t *testing.T) {
			id, secret := create(t, w.MemberID)
			ok(t, s.GraphQL(t, secret, `{ viewer { id } }`, nil), &struct{}{})
			execSQL(t, db, "UPDATE tokens SET expires_at = ? WHERE id = ?", time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC), id)
			expectDisconnected(t, secret, apperr.TokenExpired)
		})
		t.Run("RemovedMembersToken", func(t *testing.T) {
			m, secret := memberWithToken(t, s, w, "Leaving", "leaving@acme.example", "ADMIN")
			ok(t, s.GraphQL(t, secret, `{ viewer { id } }`, nil), &struct{}{})
			ok(t, s.GraphQL(t, w.AdminToken, `mutation($id: ID!) { removeMember(id: $id) { id } }`, obj("id", m)), &struct{}{})
			expectDisconnected(t, secret, apperr.MemberRemoved)
		})
		t.Run("RemovedMembersTokenStaysDeadWhenUnrevoked", func(t *testing.T) {
			// Even if the token row were not revoked, a removed member's
			// token must not work.
			m, secret := memberWithToken(t, s, w, "Leaving Two", "leaving2@acme.example", "MEMBER")
			ok(t, s.GraphQL(t, w.AdminToken, `mutation($id: ID!) { removeMember(id: $id) { id } }`, obj("id", m)), &struct{}{})
			execSQL(t, db, "UPDATE tokens SET revoked_at = NULL WHERE member_id = ?", m)
			expectDisconnected(t, secret, apperr.MemberRemoved)
		})
		t.Run("OtherTokensUnaffected", func(t *testing.T) {
			for _, token := range []string{w.AdminToken, w.MemberToken, w.ViewToken} {
				if r := s.GraphQL(t, token, `{ viewer { id } }`, nil); len(r.Errors) > 0 {
					t.Fatalf("%+v", r.Errors)
				}
			}
			if got := getProc(t, s, w.ViewToken, p.ID); got.Name != "Untouchable" {
				t.Fatalf("procedure changed: %s", got.Name)
			}
		})
	})
}
