package graph_test

// The HTTP transport of /graphql: malformed bodies, content types, sizes,
// methods, GraphQL syntax and validation errors, operation limits, and the
// request id every error carries.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/graph"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/middleware"
)

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

// deepIntrospection is an operation nested depth fields deep.
func deepIntrospection(depth int) string {
	// __schema, types, fields, type, then ofType down to name.
	if depth < 5 {
		panic("too shallow")
	}
	q := "name"
	for i := 0; i < depth-5; i++ {
		q = "ofType { " + q + " }"
	}
	return "{ __schema { types { fields { type { " + q + " } } } } }"
}

func TestTransport(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		auth := bearer(w.AdminToken)
		const okQuery = `{"query":"{ viewer { id } }"}`

		big := func(n int) []byte {
			pad := strings.Repeat("x", n)
			return []byte(`{"query":"{ viewer { id } }","variables":{"pad":"` + pad + `"}}`)
		}
		overhead := len(big(0))

		cases := []struct {
			name        string
			method      string
			contentType string
			body        []byte
			status      int
			code        string
		}{
			{"ErrBodyNotJSON", "POST", "application/json", []byte("query { viewer { id } }"), 400, "bad_request"},
			{"ErrBodyEmpty", "POST", "application/json", []byte(""), 400, "bad_request"},
			{"ErrBodyWhitespace", "POST", "application/json", []byte(" \n\t "), 400, "bad_request"},
			{"ErrBodyArray", "POST", "application/json", []byte(`[` + okQuery + `]`), 400, "bad_request"},
			{"ErrBodyNumber", "POST", "application/json", []byte(`5`), 400, "bad_request"},
			{"ErrBodyString", "POST", "application/json", []byte(`"{ viewer { id } }"`), 400, "bad_request"},
			{"ErrBodyNull", "POST", "application/json", []byte(`null`), 400, "bad_request"},
			{"ErrBodyTruncated", "POST", "application/json", []byte(`{"query": "{ viewer { id } }"`), 400, "bad_request"},
			{"ErrBodyTrailingObject", "POST", "application/json", []byte(okQuery + okQuery), 400, "bad_request"},
			{"ErrQueryNumber", "POST", "application/json", []byte(`{"query": 5}`), 400, "bad_request"},
			{"ErrQueryObject", "POST", "application/json", []byte(`{"query": {"viewer": "id"}}`), 400, "bad_request"},
			{"ErrQueryMissing", "POST", "application/json", []byte(`{}`), 400, "bad_request"},
			{"ErrQueryEmpty", "POST", "application/json", []byte(`{"query": ""}`), 400, "bad_request"},
			{"ErrVariablesArray", "POST", "application/json", []byte(`{"query": "{ viewer { id } }", "variables": [1]}`), 400, "bad_request"},
			{"ErrVariablesString", "POST", "application/json", []byte(`{"query": "{ viewer { id } }", "variables": "{}"}`), 400, "bad_request"},
			{"ErrOperationNameNumber", "POST", "application/json", []byte(`{"query": "{ viewer { id } }", "operationName": 7}`), 400, "bad_request"},
			{"ErrContentTypeText", "POST", "text/plain", []byte(okQuery), 415, "unsupported_media_type"},
			{"ErrContentTypeMissing", "POST", "", []byte(okQuery), 415, "unsupported_media_type"},
			{"ErrContentTypeForm", "POST", "application/x-www-form-urlencoded", []byte("query=%7Bviewer%7Bid%7D%7D"), 415, "unsupported_media_type"},
			{"ErrContentTypeGraphQL", "POST", "application/graphql", []byte("{ viewer { id } }"), 415, "unsupported_media_type"},
			{"ErrContentTypeMalformed", "POST", "application/json; charset", []byte(okQuery), 415, "unsupported_media_type"},
			{"ErrBodyTooLarge", "POST", "application/json", big(middleware.MaxBodyBytes - overhead + 1), 413, "payload_too_large"},
			{"ErrBodyFarTooLarge", "POST", "application/json", big(3 * middleware.MaxBodyBytes), 413, "payload_too_large"},
			{"ErrMethodPut", "PUT", "application/json", []byte(okQuery), 405, "method_not_allowed"},
			{"ErrMethodDelete", "DELETE", "", nil, 405, "method_not_allowed"},
			{"ErrMethodPatch", "PATCH", "application/json", []byte(okQuery), 405, "method_not_allowed"},
			{"ErrMethodOptions", "OPTIONS", "", nil, 405, "method_not_allowed"},
			{"ErrGetWithoutQuery", "GET", "", nil, 400, "bad_request"},
			{"BodyAtLimit", "POST", "application/json", big(middleware.MaxBodyBytes - overhead), 200, ""},
			{"ContentTypeWithCharset", "POST", "application/json; charset=utf-8", []byte(okQuery), 200, ""},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				r := rawGraphQL(t, s, tc.method, "/graphql", auth, tc.contentType, tc.body)
				if r.Status != tc.status {
					t.Fatalf("status %d, want %d (%+v)", r.Status, tc.status, r.Errors)
				}
				if tc.code == "" {
					var out struct{ Viewer named }
					ok(t, r, &out)
					if out.Viewer.ID != w.AdminID {
						t.Fatalf("viewer %s", out.Viewer.ID)
					}
					return
				}
				wantError(t, r, tc.code)
				if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
					t.Fatalf("Content-Type %q", ct)
				}
				if tc.status == 405 {
					allow := r.Header.Get("Allow")
					if !strings.Contains(allow, "GET") || !strings.Contains(allow, "POST") {
						t.Fatalf("Allow = %q", allow)
					}
				}
			})
		}
		t.Run("ErrTransportBeforeAuth", func(t *testing.T) {
			// A malformed request without a token is still answered with
			// its transport error and a request id.
			r := rawGraphQL(t, s, "POST", "/graphql", nil, "text/plain", []byte(okQuery))
			wantError(t, r, "unsupported_media_type")
		})

		t.Run("Get", func(t *testing.T) {
			r := rawGraphQL(t, s, "GET", "/graphql?query="+url.QueryEscape(`{ viewer { id } }`), auth, "", nil)
			var out struct{ Viewer named }
			ok(t, r, &out)
			if out.Viewer.ID != w.AdminID {
				t.Fatalf("viewer %s", out.Viewer.ID)
			}
		})
		t.Run("ErrGetMutation", func(t *testing.T) {
			r := rawGraphQL(t, s, "GET", "/graphql?query="+url.QueryEscape(`mutation { createCategory(input: {name: "via get"}) { id } }`), auth, "", nil)
			if len(r.Errors) == 0 || r.Status < 400 || r.Status >= 500 {
				t.Fatalf("status %d, errors %+v, data %s", r.Status, r.Errors, r.Data)
			}
			if c := listNamed(t, s, w.ViewToken, "categories", obj("search", "via get")); c.TotalCount != 0 {
				t.Fatal("a GET ran a mutation")
			}
		})

		gqlCases := []struct {
			name, body, code string
			fields           []string
		}{
			{"ErrSyntax", `{"query": "{ viewer { id "}`, "bad_request", nil},
			{"ErrSyntaxGarbage", `{"query": "¿qué? ☃"}`, "bad_request", nil},
			{"ErrUnknownField", `{"query": "{ viewer { id password } }"}`, "validation_failed", nil},
			{"ErrUnknownRootField", `{"query": "{ everything { id } }"}`, "validation_failed", nil},
			{"ErrUnknownArgument", `{"query": "{ procedures(limit: 5) { totalCount } }"}`, "validation_failed", nil},
			{"ErrArgumentWrongType", `{"query": "{ procedures(first: \"ten\") { totalCount } }"}`, "validation_failed", nil},
			{"ErrMissingSelection", `{"query": "{ viewer }"}`, "validation_failed", nil},
			{"ErrUndeclaredVariable", `{"query": "{ procedures(first: $n) { totalCount } }"}`, "validation_failed", nil},
			{"ErrVariableWrongType", `{"query": "query($n: Int) { procedures(first: $n) { totalCount } }", "variables": {"n": "ten"}}`, "validation_failed", []string{"n"}},
			{"ErrVariableFloatForInt", `{"query": "query($n: Int) { procedures(first: $n) { totalCount } }", "variables": {"n": 1.5}}`, "validation_failed", []string{"n"}},
			{"ErrVariableHugeInt", `{"query": "query($n: Int) { procedures(first: $n) { totalCount } }", "variables": {"n": 1e30}}`, "validation_failed", []string{"n"}},
			{"ErrVariableInputNotObject", `{"query": "mutation($in: CreateCategoryInput!) { createCategory(input: $in) { id } }", "variables": {"in": "x"}}`, "validation_failed", []string{"in"}},
			{"ErrVariableUnknownInputField", `{"query": "mutation($in: CreateCategoryInput!) { createCategory(input: $in) { id } }", "variables": {"in": {"name": "x", "color": "red"}}}`, "validation_failed", nil},
			{"ErrVariableRequiredMissing", `{"query": "query($id: ID!) { procedure(id: $id) { id } }"}`, "validation_failed", []string{"id"}},
			{"ErrUnknownOperationName", `{"query": "query A { viewer { id } }", "operationName": "B"}`, "", nil},
			{"ErrAmbiguousOperation", `{"query": "query A { viewer { id } } query B { workspace { id } }"}`, "", nil},
			{"ErrDepthOverLimit", `{"query": ` + quote(deepIntrospection(graph.MaxDepth+1)) + `}`, "validation_failed", nil},
			{"ErrComplexityOverLimit", `{"query": ` + quote(aliasedLists(graph.MaxComplexity/100+1)) + `}`, "validation_failed", nil},
			{"ErrComplexityNodes", `{"query": ` + quote(aliasedNodes(graph.MaxComplexity/100+1, w.ProjectID)) + `}`, "validation_failed", nil},
		}
		for _, tc := range gqlCases {
			t.Run(tc.name, func(t *testing.T) {
				r := rawGraphQL(t, s, "POST", "/graphql", auth, "application/json", []byte(tc.body))
				if tc.code == "" {
					// Any 4xx code will do, as long as it is one of ours.
					if len(r.Errors) == 0 || r.Status >= 500 {
						t.Fatalf("status %d errors %+v", r.Status, r.Errors)
					}
					if r.Errors[0].Extensions.Code == "" {
						t.Fatalf("error without a code: %+v", r.Errors[0])
					}
					wantError(t, r, r.Errors[0].Extensions.Code)
					if st := http.StatusText(r.Status); st == "" {
						t.Fatalf("status %d", r.Status)
					}
					return
				}
				wantError(t, r, tc.code, tc.fields...)
				if string(r.Data) != "null" && len(r.Data) != 0 {
					t.Fatalf("data %s for a refused operation", r.Data)
				}
			})
		}
		t.Run("DepthAtLimit", func(t *testing.T) {
			r := rawGraphQL(t, s, "POST", "/graphql", auth, "application/json", []byte(`{"query": `+quote(deepIntrospection(graph.MaxDepth))+`}`))
			if len(r.Errors) > 0 {
				t.Fatalf("%+v", r.Errors)
			}
		})
		t.Run("ComplexityUnderLimit", func(t *testing.T) {
			n := graph.MaxComplexity/(100+1) - 1
			r := rawGraphQL(t, s, "POST", "/graphql", auth, "application/json", []byte(`{"query": `+quote(aliasedLists(n))+`}`))
			if len(r.Errors) > 0 {
				t.Fatalf("%d lists of 100: %+v", n, r.Errors)
			}
		})
		t.Run("FullPageWithEdgesUnderLimit", func(t *testing.T) {
			q := `{ procedures(first: 100) { totalCount pageInfo { hasNextPage endCursor } edges { cursor node { ` + procFields + ` } } } }`
			if r := rawGraphQL(t, s, "POST", "/graphql", auth, "application/json", []byte(`{"query": `+quote(q)+`}`)); len(r.Errors) > 0 {
				t.Fatalf("%+v", r.Errors)
			}
		})
		t.Run("LimitsRunNoSQL", func(t *testing.T) {
			// Fresh tokens make authentication cost the same for both calls
			// (lookup plus the first lastUsedAt write).
			fresh := func() string {
				var out struct{ CreateToken struct{ Secret string } }
				ok(t, s.GraphQL(t, w.AdminToken, `mutation { createToken(input: {}) { secret } }`, nil), &out)
				return out.CreateToken.Secret
			}
			cost := func(token, query string) (int64, *apitest.GQLResponse) {
				n := s.DB.Statements()
				r := rawGraphQL(t, s, "POST", "/graphql", bearer(token), "application/json", []byte(`{"query": `+quote(query)+`}`))
				return s.DB.Statements() - n, r
			}
			base, r := cost(fresh(), `{ __typename }`)
			if len(r.Errors) > 0 {
				t.Fatalf("%+v", r.Errors)
			}
			for _, q := range []string{aliasedLists(graph.MaxComplexity/100 + 1), deepIntrospection(graph.MaxDepth + 1)} {
				n, r := cost(fresh(), q)
				wantError(t, r, "validation_failed")
				if n != base {
					t.Fatalf("an over-limit operation ran %d statements, authentication alone runs %d", n, base)
				}
			}
		})

		t.Run("PersistedQuery", func(t *testing.T) {
			const q = `{ workspace { key } }`
			sum := sha256.Sum256([]byte(q))
			ext := `{"persistedQuery": {"version": 1, "sha256Hash": "` + hex.EncodeToString(sum[:]) + `"}}`
			r := rawGraphQL(t, s, "POST", "/graphql", auth, "application/json", []byte(`{"extensions": `+ext+`}`))
			wantError(t, r, "PERSISTED_QUERY_NOT_FOUND")
			r = rawGraphQL(t, s, "POST", "/graphql", auth, "application/json", []byte(`{"query": `+quote(q)+`, "extensions": `+ext+`}`))
			if len(r.Errors) > 0 || string(r.Data) != `{"workspace":{"key":"ACME"}}` {
				t.Fatalf("register: %s %+v", r.Data, r.Errors)
			}
			for _, method := range []string{"POST", "GET"} {
				if method == "POST" {
					r = rawGraphQL(t, s, "POST", "/graphql", auth, "application/json", []byte(`{"extensions": `+ext+`}`))
				} else {
					r = rawGraphQL(t, s, "GET", "/graphql?extensions="+url.QueryEscape(ext), auth, "", nil)
				}
				if len(r.Errors) > 0 || string(r.Data) != `{"workspace":{"key":"ACME"}}` {
					t.Fatalf("%s by hash: %s %+v", method, r.Data, r.Errors)
				}
			}
			r = rawGraphQL(t, s, "POST", "/graphql", auth, "application/json", []byte(`{"query": "{ viewer { id } }", "extensions": `+ext+`}`))
			wantError(t, r, "validation_failed")
		})

		t.Run("RequestIdKept", func(t *testing.T) {
			const id = "0190f2a4-1111-7abc-8def-0123456789ab"
			h := bearer(w.AdminToken)
			h.Set("X-Request-Id", id)
			r := rawGraphQL(t, s, "POST", "/graphql", h, "application/json", []byte(`{"query": "{ nope }"}`))
			if r.Header.Get("X-Request-Id") != id {
				t.Fatalf("X-Request-Id %q", r.Header.Get("X-Request-Id"))
			}
			wantError(t, r, "validation_failed")
			if r.Errors[0].Extensions.RequestID != id {
				t.Fatalf("requestId %q", r.Errors[0].Extensions.RequestID)
			}
		})
		t.Run("RequestIdReplacedWhenInvalid", func(t *testing.T) {
			h := http.Header{}
			h.Set("X-Request-Id", "<script>")
			r := rawGraphQL(t, s, "POST", "/graphql", h, "application/json", []byte(okQuery))
			got := r.Header.Get("X-Request-Id")
			if got == "<script>" || len(got) != 36 {
				t.Fatalf("X-Request-Id %q", got)
			}
			wantError(t, r, "unauthenticated")
		})
		t.Run("RequestIdUniquePerRequest", func(t *testing.T) {
			seen := map[string]bool{}
			for i := 0; i < 5; i++ {
				r := rawGraphQL(t, s, "POST", "/graphql", auth, "application/json", []byte(`{"query": "{ procedure(id: \"ACME-99\") { id } }"}`))
				wantError(t, r, "not_found")
				id := r.Errors[0].Extensions.RequestID
				if seen[id] {
					t.Fatalf("request id %s reused", id)
				}
				seen[id] = true
			}
		})
		t.Run("MultipleErrorsShareRequestId", func(t *testing.T) {
			r := rawGraphQL(t, s, "POST", "/graphql", auth, "application/json",
				[]byte(`{"query": "{ a: procedure(id: \"ACME-98\") { id } b: project(id: \"x\") { id } c: viewer { id } }"}`))
			if len(r.Errors) != 2 {
				t.Fatalf("%d errors: %+v", len(r.Errors), r.Errors)
			}
			wantError(t, r, "not_found")
			var out struct{ C *named }
			if err := json.Unmarshal(r.Data, &out); err != nil || out.C == nil || out.C.ID != w.AdminID {
				t.Fatalf("partial data %s", r.Data)
			}
		})
	})
}

// aliasedLists is an operation of n aliased procedure pages of 100.
func aliasedLists(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, " l%d: procedures(first: 100) { totalCount }", i)
	}
	b.WriteString(" }")
	return b.String()
}

// aliasedNodes is an operation of n aliased nodes(ids:) calls of 100 ids.
func aliasedNodes(n int, id string) string {
	ids := strings.TrimSuffix(strings.Repeat(quote(id)+",", 100), ",")
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, " n%d: nodes(ids: [%s]) { id }", i, ids)
	}
	b.WriteString(" }")
	return b.String()
}
