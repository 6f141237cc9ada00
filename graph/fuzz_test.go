package graph_test

// Fuzzing of /graphql through the real handler on SQLite: every operation
// with random variables, and random raw bodies. Whatever arrives, the answer
// is never a 500 nor an internal error, always JSON, every error carries
// extensions.code, and a non-200 answer, or an answer in which the one root
// mutation field failed, leaves the workspace's data exactly as it was.

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// fuzzOps are the operations the fuzzer sends variables to.
var fuzzOps = []string{
	`query($first: Int, $after: String, $last: Int, $before: String, $f: ProcedureFilter, $o: ProcedureOrder) { procedures(first: $first, after: $after, last: $last, before: $before, filter: $f, orderBy: $o) { totalCount pageInfo { hasNextPage endCursor } nodes { id shortId category { name } doer { name } project { name } comments { nodes { text author { name } } } } } }`,
	`query($id: ID!) { procedure(id: $id) { id name comments { nodes { id } } } }`,
	`query($id: ID!) { node(id: $id) { id ... on Procedure { name } ... on Token { name } } }`,
	`query($ids: [ID!]!) { nodes(ids: $ids) { id } }`,
	`query($first: Int, $after: String, $last: Int, $before: String, $search: String) { projects(first: $first, after: $after, last: $last, before: $before, search: $search) { totalCount nodes { id name } } categories(first: $first, search: $search) { totalCount } members(last: $last, search: $search) { totalCount } }`,
	`mutation($in: CreateProcedureInput!) { createProcedure(input: $in) { id shortId position } }`,
	`mutation($id: ID!, $in: UpdateProcedureInput!) { updateProcedure(id: $id, input: $in) { id position category { name } } }`,
	`mutation($id: ID!, $state: ProcedureState, $after: ID, $before: ID) { moveProcedure(id: $id, state: $state, afterId: $after, beforeId: $before) { id position } }`,
	`mutation($id: ID!) { deleteProcedure(id: $id) { success } }`,
	`mutation($in: CreateProjectInput!) { createProject(input: $in) { id } }`,
	`mutation($id: ID!, $in: UpdateProjectInput!) { updateProject(id: $id, input: $in) { id } }`,
	`mutation($id: ID!) { deleteProject(id: $id) { success } }`,
	`mutation($in: CreateCategoryInput!) { createCategory(input: $in) { id } }`,
	`mutation($id: ID!, $in: UpdateCategoryInput!) { updateCategory(id: $id, input: $in) { id } }`,
	`mutation($id: ID!) { deleteCategory(id: $id) { success } }`,
	`mutation($in: AddCommentInput!) { addComment(input: $in) { id } }`,
	`mutation($id: ID!, $in: UpdateCommentInput!) { updateComment(id: $id, input: $in) { id } }`,
	`mutation($id: ID!) { deleteComment(id: $id) { success } }`,
	`mutation($in: AddMemberInput!) { addMember(input: $in) { id } }`,
	`mutation($id: ID!, $in: UpdateMemberInput!) { updateMember(id: $id, input: $in) { id } }`,
	`mutation($id: ID!) { removeMember(id: $id) { id } }`,
	`mutation($in: CreateTokenInput!) { createToken(input: $in) { secret } }`,
	`mutation($id: ID!) { revokeToken(id: $id) { id } }`,
}

func FuzzGraphQL(f *testing.F) {
	db := dbtest.Open(f, "sqlite")
	s := apitest.Start(f, db)
	a := s.NewWorkspace(f, "Fuzz", "FZ")
	b := s.NewWorkspace(f, "Other", "OTH")
	pA := createProc(f, s, a.MemberToken, procInput(a, "Alpha", nil))
	pB := createProc(f, s, b.MemberToken, procInput(b, "Beta", nil))
	cA := addComment(f, s, a.MemberToken, pA.ID, "a remark")
	tokens := []string{a.AdminToken, a.MemberToken, a.ViewToken, b.AdminToken, ""}

	// $ID placeholders in fuzzed variables are replaced by real ids, so that
	// the fuzzer reaches past "not found".
	idsJSON, _ := json.Marshal([]string{pA.ID, pB.ID, a.ProjectID, b.ProjectID, a.CategoryID, b.CategoryID, a.MemberID, b.MemberID, cA, "FZ-1", "OTH-1", a.ID, b.ID})
	var ids []string
	_ = json.Unmarshal(idsJSON, &ids)

	for i := range fuzzOps {
		f.Add(uint8(i), uint8(0), uint8(0), false, []byte(`{"id":"$ID","in":{"name":"x"},"first":1}`))
	}
	in, _ := json.Marshal(map[string]any{"in": procInput(a, "Seed", map[string]any{"content": map[string]any{"a": []int{1}}})})
	f.Add(uint8(5), uint8(0), uint8(1), false, in)
	f.Add(uint8(6), uint8(0), uint8(1), false, []byte(`{"id":"$ID","in":{"position":1e300,"categoryId":null,"content":"\u0000"}}`))
	f.Add(uint8(0), uint8(0), uint8(1), false, []byte(`{"first":100,"after":"bzox","f":{"search":"\u0000","dueFrom":"2026-01-01","dueTo":"2025-01-01"}}`))
	f.Add(uint8(0), uint8(0), uint8(1), false, []byte(`{"last":5,"before":"bzoxMDk5NTExNjI3Nzc2"}`))
	f.Add(uint8(3), uint8(0), uint8(1), false, []byte(`{"ids":["$ID","$ID","x"]}`))
	f.Add(uint8(0), uint8(0), uint8(1), true, []byte(`{"query":"{ viewer { id } }","variables":null,"operationName":7}`))
	f.Add(uint8(0), uint8(0), uint8(1), true, []byte(`{"query":"mutation { a: createCategory(input:{name:\"x\"}) { id } b: deleteCategory(id:\"zz\") { success } }"}`))
	f.Add(uint8(0), uint8(0), uint8(1), true, []byte(`{"query":"{ __schema { types { name } } }","extensions":{"persistedQuery":{"version":1,"sha256Hash":"00"}}}`))

	f.Fuzz(func(t *testing.T, opI, idI, tokenI uint8, raw bool, vars []byte) {
		var body []byte
		if raw {
			body = vars
		} else {
			var v any
			if err := json.Unmarshal(vars, &v); err != nil {
				v = string(vars)
			}
			v = substituteIDs(v, ids, int(idI))
			var err error
			body, err = json.Marshal(map[string]any{"query": fuzzOps[int(opI)%len(fuzzOps)], "variables": v})
			if err != nil {
				t.Skip()
			}
		}
		req, err := http.NewRequest(http.MethodPost, s.URL+"/graphql", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if tok := tokens[int(tokenI)%len(tokens)]; tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		before := apitest.DataDigest(t, db.SQL)
		resp, err := s.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		out, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode >= 500 {
			t.Fatalf("%s: status %d: %s", body, resp.StatusCode, out)
		}
		var r struct {
			Data   map[string]json.RawMessage `json:"data"`
			Errors []struct {
				Message    string         `json:"message"`
				Extensions map[string]any `json:"extensions"`
			} `json:"errors"`
		}
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("%s: body is not a GraphQL JSON response (status %d): %q", body, resp.StatusCode, out)
		}
		for _, e := range r.Errors {
			code, _ := e.Extensions["code"].(string)
			if code == "" || code == "internal" {
				t.Fatalf("%s: error without a proper code (status %d): %s", body, resp.StatusCode, out)
			}
			if rid, _ := e.Extensions["requestId"].(string); rid != resp.Header.Get("X-Request-Id") {
				t.Fatalf("%s: requestId %q vs header %q", body, rid, resp.Header.Get("X-Request-Id"))
			}
		}
		if len(r.Errors) == 0 && resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d without errors: %s", body, resp.StatusCode, out)
		}
		succeeded := false
		for _, v := range r.Data {
			if string(v) != "null" {
				succeeded = true
			}
		}
		// Mutation results are nullable: a root field that wrote shows its
		// result even when a later one fails (docs/api.md), raw bodies with
		// several root fields included.
		if !succeeded || resp.StatusCode != http.StatusOK {
			if after := apitest.DataDigest(t, db.SQL); after != before {
				t.Fatalf("%s: no root field succeeded (status %d) but data changed: %s", body, resp.StatusCode, out)
			}
		}
	})
}

// substituteIDs replaces every "$ID" string in v by an id, chosen from ids by
// seed and position.
func substituteIDs(v any, ids []string, seed int) any {
	n := 0
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			if x == "$ID" {
				n++
				return ids[(seed+n)%len(ids)]
			}
			return x
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
			return x
		case map[string]any:
			for k := range x {
				x[k] = walk(x[k])
			}
			return x
		}
		return v
	}
	return walk(v)
}
