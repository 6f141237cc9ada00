package graph_test

// Tenancy: a token of one workspace reaches none of another workspace's
// records, through any query or mutation, and leaves them unchanged.

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

func TestTenancy(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		a := s.NewWorkspace(t, "Acme", "ACME")
		b := s.NewWorkspace(t, "Beta", "BETA")

		// Workspace A's records.
		pA := createProc(t, s, a.MemberToken, procInput(a, "Secret alpha plan", map[string]any{"content": "classified needle"}))
		cA := addComment(t, s, a.MemberToken, pA.ID, "a private remark")
		emptyProjA := createProject(t, s, a.MemberToken, "Acme empty project")
		goneA, _ := memberWithToken(t, s, a, "Acme Gone", "gone@acme.example", "MEMBER")
		ok(t, s.GraphQL(t, a.AdminToken, `mutation($id: ID!) { removeMember(id: $id) { id } }`, obj("id", goneA)), &struct{}{})
		var toks struct{ Tokens []tokenT }
		ok(t, s.GraphQL(t, a.AdminToken, `{ tokens { `+tokenFields+` } }`, nil), &toks)
		var tokA []string
		for _, tk := range toks.Tokens {
			tokA = append(tokA, tk.ID)
		}
		if len(tokA) < 4 {
			t.Fatalf("workspace A has %d tokens", len(tokA))
		}
		aIDs := []string{a.ID, a.AdminID, a.MemberID, a.ViewerID, goneA, a.ProjectID, emptyProjA, a.CategoryID, pA.ID, cA}
		aIDs = append(aIDs, tokA...)

		// Workspace B's own records.
		pB := createProc(t, s, b.MemberToken, procInput(b, "Beta work", nil))

		before := snapshot(t, s, a.AdminToken)

		// containsA reports whether raw mentions any of A's ids or names.
		containsA := func(raw string) string {
			for _, id := range aIDs {
				if strings.Contains(raw, id) {
					return id
				}
			}
			for _, word := range []string{"Acme", "ACME", "Secret alpha", "classified", "private remark"} {
				if strings.Contains(raw, word) {
					return word
				}
			}
			return ""
		}

		type attempt struct {
			name   string
			query  string
			vars   map[string]any
			code   string   // expected error code; "" for success
			fields []string // for validation_failed
			data   string   // expected data, when set
			admin  bool     // only B's admin: the answer depends on the viewer
		}
		attempts := []attempt{
			// Queries by id.
			{name: "ProcedureById", query: `query($id: ID!) { procedure(id: $id) { id } }`, vars: obj("id", pA.ID), code: "not_found", data: `{"procedure":null}`},
			{name: "ProcedureByShortId", query: `query($id: ID!) { procedure(id: $id) { id } }`, vars: obj("id", pA.ShortID), code: "not_found", data: `{"procedure":null}`},
			{name: "ProjectById", query: `query($id: ID!) { project(id: $id) { id } }`, vars: obj("id", a.ProjectID), code: "not_found", data: `{"project":null}`},
			{name: "EmptyProjectById", query: `query($id: ID!) { project(id: $id) { id } }`, vars: obj("id", emptyProjA), code: "not_found", data: `{"project":null}`},
			{name: "CategoryById", query: `query($id: ID!) { category(id: $id) { id } }`, vars: obj("id", a.CategoryID), code: "not_found", data: `{"category":null}`},
			{name: "MemberById", query: `query($id: ID!) { member(id: $id) { id } }`, vars: obj("id", a.MemberID), code: "not_found", data: `{"member":null}`},
			{name: "AdminById", query: `query($id: ID!) { member(id: $id) { id } }`, vars: obj("id", a.AdminID), code: "not_found", data: `{"member":null}`},
			{name: "RemovedMemberById", query: `query($id: ID!) { member(id: $id) { id } }`, vars: obj("id", goneA), code: "not_found", data: `{"member":null}`},

			// Lists.
			{name: "ProceduresTotal", query: `{ procedures { totalCount nodes { id } } }`, data: `{"procedures":{"totalCount":1,"nodes":[{"id":"` + pB.ID + `"}]}}`},
			{name: "ProceduresByOtherCategoryId", query: `query($f: ProcedureFilter) { procedures(filter: $f) { totalCount nodes { id } } }`, vars: obj("f", obj("categoryId", a.CategoryID)), data: `{"procedures":{"totalCount":0,"nodes":[]}}`},
			{name: "ProceduresByOtherDoerId", query: `query($f: ProcedureFilter) { procedures(filter: $f) { totalCount nodes { id } } }`, vars: obj("f", obj("doerId", a.MemberID)), data: `{"procedures":{"totalCount":0,"nodes":[]}}`},
			{name: "ProceduresByOtherProjectId", query: `query($f: ProcedureFilter) { procedures(filter: $f) { totalCount nodes { id } } }`, vars: obj("f", obj("projectId", a.ProjectID)), data: `{"procedures":{"totalCount":0,"nodes":[]}}`},
			{name: "ProceduresSearchOtherShortId", query: `query($f: ProcedureFilter) { procedures(filter: $f) { totalCount nodes { id } } }`, vars: obj("f", obj("search", "ACME-1")), data: `{"procedures":{"totalCount":0,"nodes":[]}}`},
			{name: "ProceduresSearchOtherContent", query: `query($f: ProcedureFilter) { procedures(filter: $f) { totalCount nodes { id } } }`, vars: obj("f", obj("search", "needle")), data: `{"procedures":{"totalCount":0,"nodes":[]}}`},
			{name: "ProceduresLastPage", query: `{ procedures(last: 100) { totalCount nodes { id } } }`, data: `{"procedures":{"totalCount":1,"nodes":[{"id":"` + pB.ID + `"}]}}`},
			{name: "ProjectsSearch", query: `{ projects(search: "acme") { totalCount nodes { id } } }`, data: `{"projects":{"totalCount":0,"nodes":[]}}`},
			{name: "CategoriesSearch", query: `{ categories(search: "acme") { totalCount nodes { id } } }`, data: `{"categories":{"totalCount":0,"nodes":[]}}`},
			{name: "MembersSearch", query: `{ members(search: "acme") { totalCount nodes { id } } }`, data: `{"members":{"totalCount":0,"nodes":[]}}`},
			{name: "ProjectsList", query: `{ projects(first: 100) { totalCount nodes { id name } } }`},
			{name: "CategoriesList", query: `{ categories(first: 100) { totalCount nodes { id name } } }`},
			{name: "MembersList", query: `{ members(first: 100) { totalCount nodes { id name email } } }`},
			{name: "TokensList", query: `{ tokens { id name member { id name } } }`, admin: true},
			{name: "Workspace", query: `{ workspace { id name key } }`, data: `{"workspace":{"id":"` + b.ID + `","name":"Beta","key":"BETA"}}`},
			{name: "Viewer", query: `{ viewer { id workspaceId } }`, data: `{"viewer":{"id":"` + b.AdminID + `","workspaceId":"` + b.ID + `"}}`, admin: true},

			// node and nodes.
			{name: "NodeProcedure", query: `query($id: ID!) { node(id: $id) { id } }`, vars: obj("id", pA.ID), data: `{"node":null}`},
			{name: "NodeProject", query: `query($id: ID!) { node(id: $id) { id } }`, vars: obj("id", a.ProjectID), data: `{"node":null}`},
			{name: "NodeCategory", query: `query($id: ID!) { node(id: $id) { id } }`, vars: obj("id", a.CategoryID), data: `{"node":null}`},
			{name: "NodeMember", query: `query($id: ID!) { node(id: $id) { id } }`, vars: obj("id", a.MemberID), data: `{"node":null}`},
			{name: "NodeComment", query: `query($id: ID!) { node(id: $id) { id } }`, vars: obj("id", cA), data: `{"node":null}`},
			{name: "NodeWorkspace", query: `query($id: ID!) { node(id: $id) { id } }`, vars: obj("id", a.ID), data: `{"node":null}`},
			{name: "NodeToken", query: `query($id: ID!) { node(id: $id) { id } }`, vars: obj("id", tokA[0]), data: `{"node":null}`},
			{name: "Nodes", query: `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, vars: obj("ids", aIDs), data: `{"nodes":[` + strings.TrimSuffix(strings.Repeat("null,", len(aIDs)), ",") + `]}`},

			// Mutations on A's records.
			{name: "UpdateProcedure", query: `mutation($id: ID!) { updateProcedure(id: $id, input: {name: "pwned"}) { id } }`, vars: obj("id", pA.ID), code: "not_found"},
			{name: "UpdateProcedureByShortId", query: `mutation($id: ID!) { updateProcedure(id: $id, input: {name: "pwned"}) { id } }`, vars: obj("id", pA.ShortID), code: "not_found"},
			{name: "MoveProcedure", query: `mutation($id: ID!) { moveProcedure(id: $id, state: COMPLETED) { id } }`, vars: obj("id", pA.ID), code: "not_found"},
			{name: "MoveOwnAfterOthers", query: `mutation($id: ID!, $after: ID) { moveProcedure(id: $id, afterId: $after) { id } }`, vars: obj("id", pB.ID, "after", pA.ID), code: "validation_failed", fields: []string{"afterId"}},
			{name: "MoveOwnBeforeOthers", query: `mutation($id: ID!, $before: ID) { moveProcedure(id: $id, beforeId: $before) { id } }`, vars: obj("id", pB.ID, "before", pA.ID), code: "validation_failed", fields: []string{"beforeId"}},
			{name: "DeleteProcedure", query: `mutation($id: ID!) { deleteProcedure(id: $id) { success } }`, vars: obj("id", pA.ID), code: "not_found"},
			{name: "DeleteProcedureByShortId", query: `mutation($id: ID!) { deleteProcedure(id: $id) { success } }`, vars: obj("id", pA.ShortID), code: "not_found"},
			{name: "AddComment", query: `mutation($id: ID!) { addComment(input: {procedureId: $id, text: "hi"}) { id } }`, vars: obj("id", pA.ID), code: "not_found"},
			{name: "AddCommentByShortId", query: `mutation($id: ID!) { addComment(input: {procedureId: $id, text: "hi"}) { id } }`, vars: obj("id", pA.ShortID), code: "not_found"},
			{name: "UpdateComment", query: `mutation($id: ID!) { updateComment(id: $id, input: {text: "pwned"}) { id } }`, vars: obj("id", cA), code: "not_found"},
			{name: "DeleteComment", query: `mutation($id: ID!) { deleteComment(id: $id) { success } }`, vars: obj("id", cA), code: "not_found"},
			{name: "UpdateProject", query: `mutation($id: ID!) { updateProject(id: $id, input: {name: "pwned"}) { id } }`, vars: obj("id", a.ProjectID), code: "not_found"},
			{name: "DeleteProject", query: `mutation($id: ID!) { deleteProject(id: $id) { success } }`, vars: obj("id", a.ProjectID), code: "not_found"},
			{name: "DeleteEmptyProject", query: `mutation($id: ID!) { deleteProject(id: $id) { success } }`, vars: obj("id", emptyProjA), code: "not_found"},
			{name: "UpdateCategory", query: `mutation($id: ID!) { updateCategory(id: $id, input: {name: "pwned"}) { id } }`, vars: obj("id", a.CategoryID), code: "not_found"},
			{name: "DeleteCategory", query: `mutation($id: ID!) { deleteCategory(id: $id) { success } }`, vars: obj("id", a.CategoryID), code: "not_found"},
			{name: "UpdateMember", query: `mutation($id: ID!) { updateMember(id: $id, input: {role: VIEWER}) { id } }`, vars: obj("id", a.AdminID), code: "not_found"},
			{name: "RemoveMember", query: `mutation($id: ID!) { removeMember(id: $id) { id } }`, vars: obj("id", a.MemberID), code: "not_found"},
			{name: "RemoveAdmin", query: `mutation($id: ID!) { removeMember(id: $id) { id } }`, vars: obj("id", a.AdminID), code: "not_found"},
			{name: "UnlinkMember", query: `mutation($id: ID!) { unlinkMember(id: $id) { id } }`, vars: obj("id", a.MemberID), code: "not_found"},
			{name: "AllowMemberLink", query: `mutation($id: ID!) { allowMemberLink(id: $id) { id } }`, vars: obj("id", a.MemberID), code: "not_found"},

			// References to A's records from B's inputs.
			{name: "CreateWithOtherCategoryId", query: createProcMutation, vars: obj("in", procInput(b, "x", map[string]any{"categoryId": a.CategoryID})), code: "validation_failed", fields: []string{"categoryId"}},
			{name: "CreateWithOtherDoerId", query: createProcMutation, vars: obj("in", procInput(b, "x", map[string]any{"doerId": a.MemberID})), code: "validation_failed", fields: []string{"doerId"}},
			{name: "CreateWithOtherProjectId", query: createProcMutation, vars: obj("in", procInput(b, "x", map[string]any{"projectId": a.ProjectID})), code: "validation_failed", fields: []string{"projectId"}},
			{name: "UpdateWithOtherCategoryId", query: updateProcMutation, vars: obj("id", pB.ID, "in", obj("categoryId", a.CategoryID)), code: "validation_failed", fields: []string{"categoryId"}},
			{name: "UpdateWithOtherDoerId", query: updateProcMutation, vars: obj("id", pB.ID, "in", obj("doerId", a.AdminID)), code: "validation_failed", fields: []string{"doerId"}},
			{name: "UpdateWithOtherProjectId", query: updateProcMutation, vars: obj("id", pB.ID, "in", obj("projectId", a.ProjectID)), code: "validation_failed", fields: []string{"projectId"}},
			{name: "CreateTokenForOtherMember", query: `mutation($id: ID) { createToken(input: {memberId: $id}) { secret } }`, vars: obj("id", a.MemberID), code: "validation_failed", fields: []string{"memberId"}},
		}
		for i, id := range tokA {
			attempts = append(attempts, attempt{name: "RevokeToken" + string(rune('A'+i)), query: `mutation($id: ID!) { revokeToken(id: $id) { id } }`, vars: obj("id", id), code: "not_found"})
		}

		for _, tc := range attempts {
			t.Run(tc.name, func(t *testing.T) {
				tokens := []string{b.AdminToken, b.MemberToken}
				if tc.admin {
					tokens = tokens[:1]
				}
				for _, token := range tokens {
					r := s.GraphQL(t, token, tc.query, tc.vars)
					if tc.code != "" {
						if token == b.MemberToken && r.Code() == "forbidden" {
							continue // admin-only; B's admin covered it
						}
						wantError(t, r, tc.code, tc.fields...)
					} else if len(r.Errors) > 0 {
						t.Fatalf("errors %+v", r.Errors)
					}
					if tc.data != "" && string(r.Data) != tc.data && !(tc.code != "" && string(r.Data) == "null") {
						t.Fatalf("data %s, want %s", r.Data, tc.data)
					}
					if leak := containsA(string(r.Data)); leak != "" {
						t.Fatalf("response mentions workspace A's %q: %s", leak, r.Data)
					}
					for _, e := range r.Errors {
						if leak := containsA(e.Message); leak != "" {
							t.Fatalf("error message mentions workspace A's %q: %s", leak, e.Message)
						}
					}
				}
			})
		}

		t.Run("SameKeyWorkspaceSeesOnlyItsOwnShortId", func(t *testing.T) {
			c := s.NewWorkspace(t, "Clone", "ACME")
			wantError(t, s.GraphQL(t, c.AdminToken, `query($id: ID!) { procedure(id: $id) { id } }`, obj("id", "ACME-1")), "not_found")
			pC := createProc(t, s, c.MemberToken, procInput(c, "Clone's own", nil))
			if pC.ShortID != "ACME-1" {
				t.Fatalf("the clone's first procedure is %s", pC.ShortID)
			}
			if got := getProc(t, s, c.ViewToken, "ACME-1"); got.ID != pC.ID {
				t.Fatalf("ACME-1 in the clone resolves to %s, not %s", got.ID, pC.ID)
			}
			if got := getProc(t, s, a.ViewToken, "ACME-1"); got.ID != pA.ID {
				t.Fatalf("ACME-1 in A resolves to %s, not %s", got.ID, pA.ID)
			}
			wantError(t, s.GraphQL(t, c.MemberToken, updateProcMutation, obj("id", pA.ID, "in", obj("name", "pwned"))), "not_found")
			if n := listProcs(t, s, c.ViewToken, obj("filter", obj("search", "acme-1"))).TotalCount; n != 1 {
				t.Fatalf("the clone counts %d procedures matching acme-1", n)
			}
		})

		t.Run("SameEmailInAnotherWorkspaceIsNoConflict", func(t *testing.T) {
			addMember(t, s, b, "Same Email", "member@acme.example", "VIEWER")
		})

		t.Run("OtherWorkspaceUnchanged", func(t *testing.T) {
			if after := snapshot(t, s, a.AdminToken); after != before {
				t.Fatalf("workspace A changed\nbefore %s\n after %s", before, after)
			}
			for _, token := range []string{a.AdminToken, a.MemberToken, a.ViewToken} {
				if r := s.GraphQL(t, token, `{ viewer { id } }`, nil); len(r.Errors) > 0 {
					t.Fatalf("an A token stopped working: %+v", r.Errors)
				}
			}
		})
	})
}

// The automatic-persisted-query cache (hash → query text) was one for the
// whole server: a hash registered by one workspace ran for every other, so
// any token could confirm a guessed query text another tenant had sent,
// literals and all (a search term, a procedure's name in a mutation).
func TestPersistedQueriesPerWorkspace(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		a := s.NewWorkspace(t, "Acme", "ACME")
		b := s.NewWorkspace(t, "Beta", "BETA")
		const q = `{ procedures(filter: {search: "acquisition of Initech"}) { totalCount } }`
		sum := sha256.Sum256([]byte(q))
		ext := `{"persistedQuery": {"version": 1, "sha256Hash": "` + hex.EncodeToString(sum[:]) + `"}}`
		r := rawGraphQL(t, s, "POST", "/graphql", bearer(a.MemberToken), "application/json", []byte(`{"query": `+quote(q)+`, "extensions": `+ext+`}`))
		if len(r.Errors) > 0 {
			t.Fatalf("register: %+v", r.Errors)
		}
		// The same workspace may use the hash (another member too).
		r = rawGraphQL(t, s, "POST", "/graphql", bearer(a.ViewToken), "application/json", []byte(`{"extensions": `+ext+`}`))
		if len(r.Errors) > 0 {
			t.Fatalf("same workspace by hash: %+v", r.Errors)
		}
		// Another workspace does not learn that the query exists.
		for _, method := range []string{"POST", "GET"} {
			if method == "POST" {
				r = rawGraphQL(t, s, "POST", "/graphql", bearer(b.MemberToken), "application/json", []byte(`{"extensions": `+ext+`}`))
			} else {
				r = rawGraphQL(t, s, "GET", "/graphql?extensions="+url.QueryEscape(ext), bearer(b.MemberToken), "", nil)
			}
			wantError(t, r, "PERSISTED_QUERY_NOT_FOUND")
		}
	})
}
