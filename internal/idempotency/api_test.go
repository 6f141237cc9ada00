package idempotency_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/idempotency"
	"github.com/procsvc/procsvc/internal/viewer"
)

// env is a real server over a real database with one workspace.
type env struct {
	s  *apitest.Server
	db *database.DB
	ws *apitest.Workspace
}

func newEnv(t *testing.T, db *database.DB, opts ...core.Option) *env {
	t.Helper()
	s := apitest.Start(t, db, opts...)
	return &env{s: s, db: db, ws: s.NewWorkspace(t, "Idem", "IDM")}
}

// answer is one HTTP response, body kept byte for byte.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) replayed() bool { return a.header.Get(idempotency.ReplayedHeader) == "true" }

// errorBody is docs/design.md §6's error body.
type errorBody struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	RequestID string `json:"requestId"`
	Fields    []struct {
		Field   string `json:"field"`
		Message string `json:"message"`
	} `json:"fields"`
}

func (a answer) err(t *testing.T) errorBody {
	t.Helper()
	var e errorBody
	if err := json.Unmarshal(a.body, &e); err != nil {
		t.Fatalf("not an error body (status %d): %s", a.status, a.body)
	}
	return e
}

// send sends a request to s with token and, unless keys is empty, one
// Idempotency-Key header per key.
func send(t testing.TB, s *apitest.Server, method, path, token string, body []byte, keys ...string) answer {
	t.Helper()
	a, err := try(context.Background(), s, method, path, token, body, keys...)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func try(ctx context.Context, s *apitest.Server, method, path, token string, body []byte, keys ...string) (answer, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, rd)
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, k := range keys {
		req.Header.Add(idempotency.Header, k)
	}
	resp, err := s.HTTP.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: raw}, nil
}

func (e *env) procBody(name string) []byte {
	b, _ := json.Marshal(map[string]any{"name": name, "priority": "MEDIUM", "state": "TODO", "dueAt": "2030-01-01T00:00:00Z",
		"projectId": e.ws.ProjectID, "categoryId": e.ws.CategoryID, "doerId": e.ws.MemberID})
	return b
}

func gqlBody(query string, vars map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	return b
}

const createMutation = `mutation C($in: CreateProcedureInput!) { createProcedure(input: $in) { id name shortId } }`

func (e *env) createVars(name string) map[string]any {
	return map[string]any{"in": map[string]any{"name": name, "priority": "MEDIUM", "state": "TODO", "dueAt": "2030-01-01T00:00:00Z",
		"projectId": e.ws.ProjectID, "categoryId": e.ws.CategoryID, "doerId": e.ws.MemberID}}
}

// procedures counts the procedures named name, in every workspace.
func procedures(t testing.TB, db *database.DB, name string) int {
	t.Helper()
	n, err := db.Client.Procedure.Query().Where(procedure.Name(name)).Count(viewer.System(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// keyRows counts the stored keys, in every workspace.
func keyRows(t testing.TB, db *database.DB) int {
	t.Helper()
	n, err := db.Client.IdempotencyKey.Query().Count(viewer.System(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func wantSameResponse(t *testing.T, first, again answer) {
	t.Helper()
	if again.status != first.status || !bytes.Equal(again.body, first.body) || again.header.Get("ETag") != first.header.Get("ETag") ||
		again.header.Get("Content-Type") != first.header.Get("Content-Type") {
		t.Fatalf("replay differs:\nfirst %d %q %q %s\nagain %d %q %q %s", first.status, first.header.Get("ETag"), first.header.Get("Content-Type"), first.body,
			again.status, again.header.Get("ETag"), again.header.Get("Content-Type"), again.body)
	}
	if !again.replayed() {
		t.Fatalf("a replay lacks %s: true", idempotency.ReplayedHeader)
	}
}

func wantKeyError(t *testing.T, a answer, status int, code, message string) {
	t.Helper()
	if a.status != status {
		t.Fatalf("status %d, want %d: %s", a.status, status, a.body)
	}
	e := a.err(t)
	if e.Code != code || !strings.Contains(e.Message, message) || len(e.Fields) != 1 || e.Fields[0].Field != idempotency.Header ||
		e.RequestID != a.header.Get("X-Request-Id") {
		t.Fatalf("want %s naming %s (%q) in the usual body, got %s", code, idempotency.Header, message, a.body)
	}
}

// TestRetryReplaysTheFirstResponse: a create retried with the same key runs
// once and answers the first response byte for byte (status, body, ETag),
// marked Idempotent-Replayed; the response cache serves no stale list
// around it; without the header every request executes.
func TestRetryReplaysTheFirstResponse(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		tok := e.ws.MemberToken
		// A cached list before the write.
		before := send(t, e.s, "GET", "/procedures?search=retried.", tok, nil)
		if before.status != 200 {
			t.Fatalf("list: %d %s", before.status, before.body)
		}
		body := e.procBody("retried.")
		first := send(t, e.s, "POST", "/procedures", tok, body, "create-1")
		if first.status != 200 || first.header.Get("ETag") == "" || first.replayed() {
			t.Fatalf("first: %d %v %s", first.status, first.header, first.body)
		}
		for range 3 {
			wantSameResponse(t, first, send(t, e.s, "POST", "/procedures", tok, body, "create-1"))
		}
		if n := procedures(t, db, "retried."); n != 1 {
			t.Fatalf("%d procedures after retries, want 1", n)
		}
		var list struct{ Meta struct{ Total int } }
		after := send(t, e.s, "GET", "/procedures?search=retried.", tok, nil)
		if err := json.Unmarshal(after.body, &list); err != nil || list.Meta.Total != 1 {
			t.Fatalf("list after the write: %s", after.body)
		}
		// Writes of other methods replay too: an update and a delete.
		var created struct{ ID string }
		_ = json.Unmarshal(first.body, &created)
		put := send(t, e.s, "PUT", "/procedures/"+created.ID, tok, []byte(`{"name":"renamed."}`), "update-1")
		wantSameResponse(t, put, send(t, e.s, "PUT", "/procedures/"+created.ID, tok, []byte(`{"name":"renamed."}`), "update-1"))
		del := send(t, e.s, "DELETE", "/procedures/"+created.ID, tok, nil, "delete-1")
		if del.status != 200 {
			t.Fatalf("delete: %d %s", del.status, del.body)
		}
		// The retried delete answers what the first did, not 404.
		wantSameResponse(t, del, send(t, e.s, "DELETE", "/procedures/"+created.ID, tok, nil, "delete-1"))
		// A 4xx answer is recorded and replayed as well.
		bad := send(t, e.s, "POST", "/procedures", tok, []byte(`{"name":""}`), "invalid-1")
		if bad.status != 400 {
			t.Fatalf("invalid create: %d %s", bad.status, bad.body)
		}
		wantSameResponse(t, bad, send(t, e.s, "POST", "/procedures", tok, []byte(`{"name":""}`), "invalid-1"))
		// Without the header, nothing changes: two creates.
		plain := e.procBody("unkeyed.")
		for range 2 {
			if a := send(t, e.s, "POST", "/procedures", tok, plain); a.status != 200 || a.replayed() {
				t.Fatalf("unkeyed create: %d %s", a.status, a.body)
			}
		}
		if n := procedures(t, db, "unkeyed."); n != 2 {
			t.Fatalf("%d unkeyed procedures, want 2", n)
		}
		// Reads ignore the header, however malformed.
		for range 2 {
			if a := send(t, e.s, "GET", "/procedures?search=retried.", tok, nil, "é\t"); a.status != 200 || a.replayed() {
				t.Fatalf("keyed read: %d %s", a.status, a.body)
			}
		}
	})
}

// TestKeyReusedForAnotherRequest: the same key with a different body, path,
// method or member is 409 conflict naming the header, and runs nothing.
func TestKeyReusedForAnotherRequest(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		first := send(t, e.s, "POST", "/procedures", e.ws.MemberToken, e.procBody("reused-a."), "key-1")
		if first.status != 200 {
			t.Fatalf("first: %d %s", first.status, first.body)
		}
		for _, c := range []struct {
			name, method, path, token string
			body                      []byte
		}{
			{"another body", "POST", "/procedures", e.ws.MemberToken, e.procBody("reused-b.")},
			{"another query", "POST", "/procedures?x=1", e.ws.MemberToken, e.procBody("reused-a.")},
			{"another path", "POST", "/categories", e.ws.MemberToken, []byte(`{"name":"reused-c."}`)},
			{"another member", "POST", "/procedures", e.ws.AdminToken, e.procBody("reused-a.")},
		} {
			a := send(t, e.s, c.method, c.path, c.token, c.body, "key-1")
			wantKeyError(t, a, http.StatusConflict, "conflict", idempotency.Header)
		}
		if n := procedures(t, db, "reused-a.") + procedures(t, db, "reused-b."); n != 1 {
			t.Fatalf("%d procedures, want 1", n)
		}
		// The original request still replays.
		wantSameResponse(t, first, send(t, e.s, "POST", "/procedures", e.ws.MemberToken, e.procBody("reused-a."), "key-1"))
	})
}

// TestMalformedKeys: a key that is empty, longer than 255 characters, not
// printable ASCII, or sent twice is 400 validation_failed naming the header,
// and runs nothing.
func TestMalformedKeys(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		for name, keys := range map[string][]string{
			"empty":     {""},
			"too long":  {strings.Repeat("k", 256)},
			"non-ASCII": {"clé"},
			"tab":       {"a\tb"},
			"two":       {"a", "b"},
		} {
			t.Run(name, func(t *testing.T) {
				a := send(t, e.s, "POST", "/procedures", e.ws.MemberToken, e.procBody("malformed."), keys...)
				wantKeyError(t, a, http.StatusBadRequest, "validation_failed", idempotency.Header)
				g := send(t, e.s, "POST", "/graphql", e.ws.MemberToken, gqlBody(createMutation, e.createVars("malformed.")), keys...)
				wantGraphQLKeyError(t, g, http.StatusBadRequest, "validation_failed", idempotency.Header)
			})
		}
		if n := procedures(t, db, "malformed."); n != 0 {
			t.Fatalf("%d procedures created with malformed keys", n)
		}
		// The longest key, and every printable character, are accepted.
		for _, key := range []string{strings.Repeat("k", 255), " !\"#$%&'()*+,-./0123456789:;<=>?@AZ[\\]^_`az{|}~"} {
			if a := send(t, e.s, "POST", "/categories", e.ws.MemberToken, []byte(`{"name":"ok `+fmt.Sprint(len(key))+`"}`), key); a.status != 200 {
				t.Fatalf("key %q: %d %s", key, a.status, a.body)
			}
		}
	})
}

// gqlAnswer is a GraphQL response's errors.
type gqlAnswer struct {
	Data   json.RawMessage `json:"data"`
	Errors []struct {
		Message    string `json:"message"`
		Extensions struct {
			Code      string `json:"code"`
			RequestID string `json:"requestId"`
			Fields    []struct {
				Field string `json:"field"`
			} `json:"fields"`
		} `json:"extensions"`
	} `json:"errors"`
}

func wantGraphQLKeyError(t *testing.T, a answer, status int, code, message string) {
	t.Helper()
	var g gqlAnswer
	if err := json.Unmarshal(a.body, &g); err != nil || a.status != status || len(g.Errors) != 1 {
		t.Fatalf("want %d %s, got %d %s", status, code, a.status, a.body)
	}
	ext := g.Errors[0].Extensions
	if ext.Code != code || !strings.Contains(g.Errors[0].Message, message) || len(ext.Fields) != 1 || ext.Fields[0].Field != idempotency.Header ||
		ext.RequestID != a.header.Get("X-Request-Id") {
		t.Fatalf("want %s naming %s, got %s", code, idempotency.Header, a.body)
	}
}

// TestGraphQLMutationReplays: a GraphQL mutation retried with its key runs
// once and replays; another mutation with the key is 409; queries ignore the
// header.
func TestGraphQLMutationReplays(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		body := gqlBody(createMutation, e.createVars("graphql."))
		first := send(t, e.s, "POST", "/graphql", e.ws.MemberToken, body, "gql-1")
		var g gqlAnswer
		if err := json.Unmarshal(first.body, &g); err != nil || first.status != 200 || len(g.Errors) > 0 || first.replayed() {
			t.Fatalf("first: %d %s", first.status, first.body)
		}
		for range 2 {
			wantSameResponse(t, first, send(t, e.s, "POST", "/graphql", e.ws.MemberToken, body, "gql-1"))
		}
		if n := procedures(t, db, "graphql."); n != 1 {
			t.Fatalf("%d procedures, want 1", n)
		}
		// A refused document (400, no data key) is refused before its
		// key is claimed: the retry is refused again, not replayed.
		invalid := gqlBody(`mutation { createProcedure(input: {name: 5}) { id } }`, nil)
		for range 2 {
			refused := send(t, e.s, "POST", "/graphql", e.ws.MemberToken, invalid, "gql-invalid")
			if refused.status != http.StatusBadRequest || strings.Contains(string(refused.body), `"data"`) || refused.replayed() {
				t.Fatalf("invalid mutation: %d %v %s", refused.status, refused.header, refused.body)
			}
		}
		other := send(t, e.s, "POST", "/graphql", e.ws.MemberToken, gqlBody(createMutation, e.createVars("graphql-other.")), "gql-1")
		wantGraphQLKeyError(t, other, http.StatusConflict, "conflict", idempotency.Header)
		// The same key on REST is another request too.
		wantKeyError(t, send(t, e.s, "POST", "/procedures", e.ws.MemberToken, e.procBody("graphql."), "gql-1"), http.StatusConflict, "conflict", idempotency.Header)
		// A query ignores the header, even a malformed one, and is never
		// replayed.
		q := gqlBody(`query Q { procedures(filter: {search: "graphql."}) { totalCount } }`, nil)
		for _, key := range []string{"gql-1", "é"} {
			a := send(t, e.s, "POST", "/graphql", e.ws.MemberToken, q, key)
			if a.status != 200 || a.replayed() || !strings.Contains(string(a.body), `"totalCount":1`) {
				t.Fatalf("keyed query: %d %v %s", a.status, a.header, a.body)
			}
		}
		if n := procedures(t, db, "graphql-other."); n != 0 {
			t.Fatalf("the conflicting mutation ran")
		}
		if n := keyRows(t, db); n != 1 {
			t.Fatalf("%d keys stored, want 1 (queries and refused documents store none)", n)
		}
	})
}

// TestWhichGraphQLRequestsAreKeyed: a GraphQL request's key is claimed by
// the executor once it knows the operation writes and has checked it: a
// mutation, sent as text or by persisted-query hash, is keyed; a query (by
// text or hash), a subscription over plain POST, a document that does not
// parse or validate, and an operation name that matches nothing store no
// key and are never replayed.
func TestWhichGraphQLRequestsAreKeyed(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		persisted := func(query string) []byte {
			sum := sha256.Sum256([]byte(query))
			return []byte(`{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"` + hex.EncodeToString(sum[:]) + `"}}}`)
		}
		register := func(query string) {
			t.Helper()
			var b map[string]any
			_ = json.Unmarshal(persisted(query), &b)
			b["query"] = query
			raw, _ := json.Marshal(b)
			if a := send(t, e.s, "POST", "/graphql", e.ws.MemberToken, raw); a.status != http.StatusOK {
				t.Fatalf("register: %d %s", a.status, a.body)
			}
		}
		const query, mutation = `{ workspace { key } }`, `mutation { createCategory(input: {name: "by hash"}) { name } }`
		register(query)
		register(mutation)
		for _, c := range []struct {
			name string
			body []byte
		}{
			{"query", gqlBody(`query Q { viewer { id } }`, nil)},
			{"query of several", []byte(`{"query":"query Q { viewer { id } } mutation M { createCategory(input: {name: \"never\"}) { id } }","operationName":"Q"}`)},
			{"persisted query", persisted(query)},
			{"subscription", gqlBody(`subscription { procedureEvents { kind } }`, nil)},
			{"syntax error", gqlBody(`mutation {`, nil)},
			{"invalid", gqlBody(`mutation { nope }`, nil)},
			{"unknown operation", []byte(`{"query":"mutation M { createCategory(input: {name: \"never\"}) { id } }","operationName":"N"}`)},
			{"persisted-query miss", persisted(`mutation { never }`)},
		} {
			t.Run(c.name, func(t *testing.T) {
				for range 2 {
					if a := send(t, e.s, "POST", "/graphql", e.ws.MemberToken, c.body, "not-keyed-"+c.name); a.replayed() {
						t.Fatalf("replayed: %d %s", a.status, a.body)
					}
				}
				if n := keyRows(t, db); n != 0 {
					t.Fatalf("%d keys stored", n)
				}
			})
		}
		first := send(t, e.s, "POST", "/graphql", e.ws.MemberToken, persisted(mutation), "by-hash")
		if first.status != http.StatusOK || !strings.Contains(string(first.body), `"by hash"`) {
			t.Fatalf("mutation by hash: %d %s", first.status, first.body)
		}
		wantSameResponse(t, first, send(t, e.s, "POST", "/graphql", e.ws.MemberToken, persisted(mutation), "by-hash"))
		if n := keyRows(t, db); n != 1 {
			t.Fatalf("%d keys stored, want the mutation's", n)
		}
		if n := categories(t, db, "never"); n != 0 {
			t.Fatalf("a mutation that was not selected ran")
		}
	})
}
