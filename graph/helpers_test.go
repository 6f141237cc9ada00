package graph_test

// Shared helpers of the GraphQL tests: the shape of every resource and the
// fields that select it, a client for any request to /graphql, assertions on
// answers and errors, makers of records, a snapshot of a workspace for
// "nothing was written" assertions, the checks shared by the name-sorted
// lists (projects, categories, members), and operations of a given size.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/graph/gqlhttp"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
)

// ---------------------------------------------------------------------------
// Shapes.

// named is any object reduced to its id and name.
type named struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type commentT struct {
	ID          string `json:"id"`
	ProcedureID string `json:"procedureId"`
	Text        string `json:"text"`
	Author      *named `json:"author"`
	CreatedAt   string `json:"createdAt"`
	UpdatedAt   string `json:"updatedAt"`
}

type procT struct {
	ID              string          `json:"id"`
	ShortID         string          `json:"shortId"`
	Name            string          `json:"name"`
	Priority        string          `json:"priority"`
	State           string          `json:"state"`
	Content         *string         `json:"content"`
	CategoryID      *string         `json:"categoryId"`
	DoerID          *string         `json:"doerId"`
	CreatorID       string          `json:"creatorId"`
	Position        float64         `json:"position"`
	DueAt           string          `json:"dueAt"`
	CreatedAt       string          `json:"createdAt"`
	UpdatedAt       string          `json:"updatedAt"`
	ProjectID       string          `json:"projectId"`
	WorkspaceID     string          `json:"workspaceId"`
	CaptureID       *string         `json:"captureId"`
	DisplayVideo    bool            `json:"displayVideo"`
	IsFineTunedData bool            `json:"isFineTunedData"`
	Category        *named          `json:"category"`
	Doer            *named          `json:"doer"`
	Project         named           `json:"project"`
	Comments        nodes[commentT] `json:"comments"`
}

// procFields selects every field of procT.
const procFields = `id shortId name priority state content categoryId doerId creatorId position dueAt createdAt
	updatedAt projectId workspaceId captureId displayVideo isFineTunedData category { id name } doer { id name }
	project { id name } comments { nodes { id procedureId text author { id name } createdAt updatedAt } }`

// pageFields selects every field of procT with a procedure's newest 3
// comments: complexity 53 per procedure (18 plain fields, 3 edges of 3, and
// comments: 1 + 3 × 8).
const pageFields = `id shortId name priority state content categoryId doerId creatorId position dueAt createdAt
	updatedAt projectId workspaceId captureId displayVideo isFineTunedData category { id name } doer { id name }
	project { id name } comments(last: 3) { nodes { id procedureId text author { id name } createdAt updatedAt } }`

// fullPage is the largest page of pageFields within the complexity limit:
// 30 procedures, 1 + 1 + 30 × 53 = 1 592 for its nodes, with its total and
// page info (5) and its edges' cursors and ids (1 + 30 × (1 + 2) = 91).
const fullPage = `{ procedures(first: 30) { totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
	edges { cursor node { id } } nodes { ` + pageFields + ` } } }`

type pageInfoT struct {
	HasNextPage     bool    `json:"hasNextPage"`
	HasPreviousPage bool    `json:"hasPreviousPage"`
	StartCursor     *string `json:"startCursor"`
	EndCursor       *string `json:"endCursor"`
}

type procPage struct {
	TotalCount int       `json:"totalCount"`
	PageInfo   pageInfoT `json:"pageInfo"`
	Edges      []struct {
		Cursor string `json:"cursor"`
		Node   struct {
			ID string `json:"id"`
		} `json:"node"`
	} `json:"edges"`
	Nodes []procT `json:"nodes"`
}

const proceduresQuery = `query($first: Int, $after: String, $last: Int, $before: String, $filter: ProcedureFilter, $orderBy: ProcedureOrder) {
	procedures(first: $first, after: $after, last: $last, before: $before, filter: $filter, orderBy: $orderBy) {
		totalCount
		pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
		edges { cursor node { id } }
		nodes { id shortId name content state priority categoryId doerId projectId position dueAt createdAt project { id name } }
	}
}`

type projectT struct {
	ID          string
	WorkspaceID string
	Name        string
	StartedAt   *string
	DueAt       *string
	CreatedAt   string
	UpdatedAt   string
}

const projectFields = `id workspaceId name startedAt dueAt createdAt updatedAt`

type categoryT struct {
	ID          string
	WorkspaceID string
	Name        string
	CreatedAt   string
	UpdatedAt   string
}

const categoryFields = `id workspaceId name createdAt updatedAt`

type memberT struct {
	ID          string
	WorkspaceID string
	Name        string
	Email       string
	Role        string
	CreatedAt   string
	RemovedAt   *string
}

const memberFields = `id workspaceId name email role createdAt removedAt`

type tokenT struct {
	ID         string
	Name       string
	Member     *named
	CreatedAt  string
	LastUsedAt *string
	ExpiresAt  *string
	RevokedAt  *string
}

const tokenFields = `id name member { id name } createdAt lastUsedAt expiresAt revokedAt`

// ---------------------------------------------------------------------------
// Requests and answers.

// rawGraphQL sends any request to path and parses a GraphQL-shaped answer.
func rawGraphQL(t testing.TB, s *apitest.Server, method, path string, header http.Header, contentType string, body []byte) *apitest.GQLResponse {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := s.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := &apitest.GQLResponse{Status: resp.StatusCode, Header: resp.Header}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("response is not JSON (status %d): %.300s", resp.StatusCode, raw)
	}
	return out
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func bearer(token string) http.Header {
	return http.Header{"Authorization": []string{"Bearer " + token}}
}

// ok decodes a successful response's data into v.
func ok(t testing.TB, r *apitest.GQLResponse, v any) {
	t.Helper()
	if len(r.Errors) == 0 && r.Status != http.StatusOK {
		t.Fatalf("status %d without errors", r.Status)
	}
	r.Decode(t, v)
}

// wantError asserts that r failed with code, that extensions.fields of its
// first error names every one of fields, and that every error carries the
// response's X-Request-Id as extensions.requestId.
func wantError(t testing.TB, r *apitest.GQLResponse, code string, fields ...string) {
	t.Helper()
	if len(r.Errors) == 0 {
		t.Fatalf("want error %q, got data %s", code, r.Data)
	}
	e := r.Errors[0]
	if e.Extensions.Code != code {
		t.Fatalf("want code %q, got %q: %s", code, e.Extensions.Code, e.Message)
	}
	if r.Status >= 500 {
		t.Fatalf("status %d for code %s", r.Status, code)
	}
	reqID := r.Header.Get("X-Request-Id")
	if reqID == "" {
		t.Fatalf("response has no X-Request-Id header")
	}
	for _, e := range r.Errors {
		if e.Extensions.RequestID != reqID {
			t.Fatalf("error %q has requestId %q, header says %q", e.Message, e.Extensions.RequestID, reqID)
		}
	}
	have := map[string]bool{}
	for _, f := range e.Extensions.Fields {
		have[f.Field] = true
	}
	for _, f := range fields {
		if !have[f] {
			t.Fatalf("want extensions.fields to name %q, got %+v (%s)", f, e.Extensions.Fields, e.Message)
		}
	}
}

// obj builds a map from alternating keys and values.
func obj(kv ...any) map[string]any {
	m := make(map[string]any, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// ---------------------------------------------------------------------------
// Records.

// procInput is a valid CreateProcedureInput in w, changed by over (a nil
// value in over removes the key).
func procInput(w *apitest.Workspace, name string, over map[string]any) map[string]any {
	m := map[string]any{
		"name": name, "priority": "MEDIUM", "state": "TODO", "dueAt": "2026-06-01T12:00:00Z",
		"categoryId": w.CategoryID, "doerId": w.MemberID, "projectId": w.ProjectID,
	}
	for k, v := range over {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return m
}

const createProcMutation = `mutation($in: CreateProcedureInput!) { createProcedure(input: $in) { ` + procFields + ` } }`

// createProc creates a procedure as token and returns it.
func createProc(t testing.TB, s *apitest.Server, token string, in map[string]any) procT {
	t.Helper()
	var out struct{ CreateProcedure procT }
	ok(t, s.GraphQL(t, token, createProcMutation, obj("in", in)), &out)
	return out.CreateProcedure
}

// getProc reads a procedure by id or shortId.
func getProc(t testing.TB, s *apitest.Server, token, id string) procT {
	t.Helper()
	var out struct{ Procedure *procT }
	ok(t, s.GraphQL(t, token, `query($id: ID!) { procedure(id: $id) { `+procFields+` } }`, obj("id", id)), &out)
	if out.Procedure == nil {
		t.Fatalf("procedure %s is null", id)
	}
	return *out.Procedure
}

// listProcs runs the procedures query with vars.
func listProcs(t testing.TB, s *apitest.Server, token string, vars map[string]any) procPage {
	t.Helper()
	var out struct{ Procedures procPage }
	ok(t, s.GraphQL(t, token, proceduresQuery, vars), &out)
	if len(out.Procedures.Edges) != len(out.Procedures.Nodes) {
		t.Fatalf("%d edges but %d nodes", len(out.Procedures.Edges), len(out.Procedures.Nodes))
	}
	for i, e := range out.Procedures.Edges {
		if e.Node.ID != out.Procedures.Nodes[i].ID {
			t.Fatalf("edge %d is %s but node %d is %s", i, e.Node.ID, i, out.Procedures.Nodes[i].ID)
		}
	}
	return out.Procedures
}

// addMember adds a member as the admin and returns its id.
func addMember(t testing.TB, s *apitest.Server, w *apitest.Workspace, name, email, role string) string {
	t.Helper()
	var out struct{ AddMember named }
	ok(t, s.GraphQL(t, w.AdminToken, `mutation($in: AddMemberInput!) { addMember(input: $in) { id name } }`,
		obj("in", obj("name", name, "email", email, "role", role))), &out)
	return out.AddMember.ID
}

// removedMember adds a member and removes it, returning its id.
func removedMember(t testing.TB, s *apitest.Server, w *apitest.Workspace, email string) string {
	t.Helper()
	id := addMember(t, s, w, "Gone Member", email, "MEMBER")
	ok(t, s.GraphQL(t, w.AdminToken, `mutation($id: ID!) { removeMember(id: $id) { id removedAt } }`, obj("id", id)), &struct{}{})
	return id
}

// memberWithToken adds a member of role and a token for it.
func memberWithToken(t testing.TB, s *apitest.Server, w *apitest.Workspace, name, email, role string) (id, secret string) {
	t.Helper()
	id = addMember(t, s, w, name, email, role)
	var out struct {
		CreateToken struct{ Secret string }
	}
	ok(t, s.GraphQL(t, w.AdminToken, `mutation($in: CreateTokenInput!) { createToken(input: $in) { secret } }`,
		obj("in", obj("memberId", id, "name", name))), &out)
	return id, out.CreateToken.Secret
}

// createProject creates a project as token and returns its id.
func createProject(t testing.TB, s *apitest.Server, token, name string) string {
	t.Helper()
	var out struct{ CreateProject named }
	ok(t, s.GraphQL(t, token, `mutation($in: CreateProjectInput!) { createProject(input: $in) { id name } }`,
		obj("in", obj("name", name))), &out)
	return out.CreateProject.ID
}

// createCategory creates a category as token and returns its id.
func createCategory(t testing.TB, s *apitest.Server, token, name string) string {
	t.Helper()
	var out struct{ CreateCategory named }
	ok(t, s.GraphQL(t, token, `mutation($in: CreateCategoryInput!) { createCategory(input: $in) { id name } }`,
		obj("in", obj("name", name))), &out)
	return out.CreateCategory.ID
}

// addComment adds a comment as token and returns its id.
func addComment(t testing.TB, s *apitest.Server, token, procedureID, text string) string {
	t.Helper()
	var out struct{ AddComment commentT }
	ok(t, s.GraphQL(t, token, `mutation($in: AddCommentInput!) { addComment(input: $in) { id procedureId text } }`,
		obj("in", obj("procedureId", procedureID, "text", text))), &out)
	return out.AddComment.ID
}

// dialectSQL is query, written with ? placeholders, in db's dialect.
func dialectSQL(db *database.DB, query string) string {
	if db.Dialect != "postgres" {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// execSQL runs a raw statement written with ? placeholders on either dialect.
func execSQL(t testing.TB, db *database.DB, query string, args ...any) {
	t.Helper()
	query = dialectSQL(db, query)
	if _, err := db.SQL.ExecContext(context.Background(), query, args...); err != nil {
		t.Fatalf("exec %s: %v", query, err)
	}
}

// countSQL runs a raw COUNT written with ? placeholders on either dialect:
// what a test checks the API's totals against, read past every cache.
func countSQL(t testing.TB, db *database.DB, query string, args ...any) int {
	t.Helper()
	query = dialectSQL(db, query)
	var n int
	if err := db.SQL.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", query, err)
	}
	return n
}

// ---------------------------------------------------------------------------
// Snapshot of a workspace.

// snapshotQueries read everything a workspace's admin can see, except
// tokens' lastUsedAt (which reading itself may bump), each within the
// complexity limit; the procedures are read two at a time, by name, each
// with the default page of its comments (its oldest 20).
var snapshotQueries = []string{`{
	workspace { id name key createdAt }
	viewer { ` + memberFields + ` }
	projects(first: 100) { totalCount nodes { ` + projectFields + ` } }
	categories(first: 100) { totalCount nodes { ` + categoryFields + ` } }
}`, `{
	members(first: 100) { totalCount nodes { ` + memberFields + ` } }
	tokens { id name member { id } createdAt expiresAt revokedAt }
}`}

const snapshotProcedures = `query($after: String) {
	procedures(first: 2, after: $after, orderBy: {field: NAME, direction: ASC}) { totalCount pageInfo { hasNextPage endCursor } nodes { ` + procFields + ` } }
}`

func snapshot(t testing.TB, s *apitest.Server, token string) string {
	t.Helper()
	var b strings.Builder
	for _, q := range snapshotQueries {
		r := s.GraphQL(t, token, q, nil)
		if len(r.Errors) > 0 {
			t.Fatalf("snapshot: %+v", r.Errors)
		}
		b.Write(r.Data)
	}
	vars := map[string]any{}
	for {
		r := s.GraphQL(t, token, snapshotProcedures, vars)
		if len(r.Errors) > 0 {
			t.Fatalf("snapshot: %+v", r.Errors)
		}
		b.Write(r.Data)
		var page struct{ Procedures struct{ PageInfo pageInfoT } }
		r.Decode(t, &page)
		if !page.Procedures.PageInfo.HasNextPage {
			return b.String()
		}
		vars["after"] = *page.Procedures.PageInfo.EndCursor
	}
}

// ---------------------------------------------------------------------------
// Name-sorted lists (projects, categories, members).

type namedConn struct {
	TotalCount int
	PageInfo   pageInfoT
	Edges      []struct {
		Cursor string
		Node   named
	}
	Nodes []named
}

// listNamed runs one of the name-sorted lists (projects, categories,
// members) with vars.
func listNamed(t testing.TB, s *apitest.Server, token, field string, vars map[string]any) namedConn {
	t.Helper()
	q := fmt.Sprintf(`query($first: Int, $after: String, $last: Int, $before: String, $search: String) {
		%s(first: $first, after: $after, last: $last, before: $before, search: $search) {
			totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
			edges { cursor node { id name } } nodes { id name }
		}
	}`, field)
	var out map[string]namedConn
	ok(t, s.GraphQL(t, token, q, vars), &out)
	c := out[field]
	if len(c.Edges) != len(c.Nodes) {
		t.Fatalf("%d edges, %d nodes", len(c.Edges), len(c.Nodes))
	}
	return c
}

func namedIDs(ns []named) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.ID
	}
	return out
}

// testNamedList checks a name-sorted list: order by name then id, search
// (case-insensitive on what match says), totalCount and Relay pagination.
func testNamedList(t *testing.T, s *apitest.Server, token, field string, match func(n named, q string) bool, searches ...string) {
	all := listNamed(t, s, token, field, obj("first", gqlhttp.MaxPageSize))
	if all.TotalCount != len(all.Nodes) || all.TotalCount < 4 {
		t.Fatalf("%s: totalCount %d, %d nodes; the test needs at least 4", field, all.TotalCount, len(all.Nodes))
	}
	want := append([]named(nil), all.Nodes...)
	sort.SliceStable(want, func(i, j int) bool {
		if want[i].Name != want[j].Name {
			return want[i].Name < want[j].Name
		}
		return want[i].ID < want[j].ID
	})
	t.Run("OrderedByNameThenId", func(t *testing.T) {
		if got := namedIDs(all.Nodes); !sameStrings(got, namedIDs(want)) {
			t.Fatalf("order %v, want %v", all.Nodes, want)
		}
	})
	t.Run("DefaultPageHoldsAll", func(t *testing.T) {
		if c := listNamed(t, s, token, field, nil); len(c.Nodes) != all.TotalCount || c.PageInfo.HasNextPage {
			t.Fatalf("default page: %d nodes, %+v", len(c.Nodes), c.PageInfo)
		}
	})
	t.Run("ForwardPages", func(t *testing.T) {
		var got []string
		vars := obj("first", 2)
		for i := 0; i <= all.TotalCount; i++ {
			c := listNamed(t, s, token, field, vars)
			if c.TotalCount != all.TotalCount || c.PageInfo.HasPreviousPage != (i > 0) {
				t.Fatalf("page %d: totalCount %d, %+v", i, c.TotalCount, c.PageInfo)
			}
			got = append(got, namedIDs(c.Nodes)...)
			if !c.PageInfo.HasNextPage {
				break
			}
			vars["after"] = *c.PageInfo.EndCursor
		}
		if !sameStrings(got, namedIDs(want)) {
			t.Fatalf("pages %v, want %v", got, namedIDs(want))
		}
	})
	t.Run("BackwardPages", func(t *testing.T) {
		var got []string
		vars := obj("last", 3)
		for i := 0; i <= all.TotalCount; i++ {
			c := listNamed(t, s, token, field, vars)
			if c.TotalCount != all.TotalCount || c.PageInfo.HasNextPage != (i > 0) {
				t.Fatalf("page %d: totalCount %d, %+v", i, c.TotalCount, c.PageInfo)
			}
			got = append(namedIDs(c.Nodes), got...)
			if !c.PageInfo.HasPreviousPage {
				break
			}
			vars["before"] = *c.PageInfo.StartCursor
		}
		if !sameStrings(got, namedIDs(want)) {
			t.Fatalf("pages %v, want %v", got, namedIDs(want))
		}
	})
	for _, q := range searches {
		t.Run("Search_"+q, func(t *testing.T) {
			var wantIDs []string
			for _, n := range want {
				if match(n, strings.ToLower(strings.TrimSpace(q))) {
					wantIDs = append(wantIDs, n.ID)
				}
			}
			if len(wantIDs) == 0 || len(wantIDs) == len(want) {
				t.Fatalf("search %q matches %d of %d: not a useful case", q, len(wantIDs), len(want))
			}
			c := listNamed(t, s, token, field, obj("search", q))
			if c.TotalCount != len(wantIDs) || !sameStrings(namedIDs(c.Nodes), wantIDs) {
				t.Fatalf("search %q: total %d %v, want %v", q, c.TotalCount, c.Nodes, wantIDs)
			}
			c = listNamed(t, s, token, field, obj("search", q, "first", 1))
			if c.TotalCount != len(wantIDs) || len(c.Nodes) != 1 {
				t.Fatalf("search %q first 1: total %d, %d nodes", q, c.TotalCount, len(c.Nodes))
			}
		})
	}
	t.Run("SearchNoMatch", func(t *testing.T) {
		if c := listNamed(t, s, token, field, obj("search", "zzzqqq")); c.TotalCount != 0 || len(c.Nodes) != 0 {
			t.Fatalf("total %d", c.TotalCount)
		}
	})
	for _, tc := range []struct {
		name  string
		vars  map[string]any
		field string
	}{
		{"ErrFirstTooLarge", obj("first", gqlhttp.MaxPageSize+1), "first"},
		{"ErrLastNegative", obj("last", -2), "last"},
		{"ErrAfterNotCursor", obj("after", "nope"), "after"},
		{"ErrSearchTooLong", obj("search", strings.Repeat("q", core.MaxTitleLen+1)), "search"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := fmt.Sprintf(`query($first: Int, $last: Int, $after: String, $search: String) { %s(first: $first, last: $last, after: $after, search: $search) { totalCount } }`, field)
			wantError(t, s.GraphQL(t, token, q, tc.vars), "validation_failed", tc.field)
		})
	}
}

func nameContains(n named, q string) bool { return strings.Contains(strings.ToLower(n.Name), q) }

// ---------------------------------------------------------------------------
// Operations of a given size.

// deepIntrospection is an operation nested depth fields deep: __schema,
// types, fields, type, then a chain of ofType down to name, whose first
// gqlhttp.MaxFreeWrappedTypes levels add no depth.
func deepIntrospection(depth int) string {
	if depth < 5 {
		panic("too shallow")
	}
	q := "name"
	for i := 0; i < gqlhttp.MaxFreeWrappedTypes+depth-5; i++ {
		q = "ofType { " + q + " }"
	}
	return "{ __schema { types { fields { type { " + q + " } } } } }"
}

// aliasedLists is an operation of n aliased pages of 100 procedures' ids,
// each of complexity 102 (the connection, its nodes, 100 ids).
func aliasedLists(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, " l%d: procedures(first: 100) { nodes { id } }", i)
	}
	b.WriteString(" }")
	return b.String()
}

// ---------------------------------------------------------------------------
// Small utilities.

func strp(s string) *string { return &s }

// same reports whether a and b are deeply equal (pointers followed).
func same(a, b any) bool { return reflect.DeepEqual(a, b) }

// dump renders v as JSON for failure messages.
func dump(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

func deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// ids returns the ids of ps.
func ids(ps []procT) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.ID
	}
	return out
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// nodes decodes a connection's nodes ({"nodes": [...]}) as a list.
type nodes[T any] []T

func (n *nodes[T]) UnmarshalJSON(b []byte) error {
	var c struct{ Nodes []T }
	err := json.Unmarshal(b, &c)
	*n = c.Nodes
	return err
}
