package graph_test

// The HTTP transport of /graphql: malformed bodies, content types, sizes,
// methods, GraphQL syntax and validation errors, operation limits, and the
// request id every error carries; the HTTP status and code of each refusal.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/graph/gqlhttp"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/middleware"
)

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
			{"ErrUnknownArgument", `{"query": "{ procedures(limit: 5) { totalCount } }"}`, "validation_failed", []string{"limit"}},
			{"ErrArgumentWrongType", `{"query": "{ procedures(first: \"ten\") { totalCount } }"}`, "validation_failed", []string{"first"}},
			{"ErrMissingSelection", `{"query": "{ viewer }"}`, "validation_failed", nil},
			{"ErrUndeclaredVariable", `{"query": "{ procedures(first: $n) { totalCount } }"}`, "validation_failed", nil},
			{"ErrVariableWrongType", `{"query": "query($n: Int) { procedures(first: $n) { totalCount } }", "variables": {"n": "ten"}}`, "validation_failed", []string{"first"}},
			{"ErrVariableFloatForInt", `{"query": "query($n: Int) { procedures(first: $n) { totalCount } }", "variables": {"n": 1.5}}`, "validation_failed", []string{"first"}},
			{"ErrVariableHugeInt", `{"query": "query($n: Int) { procedures(first: $n) { totalCount } }", "variables": {"n": 1e30}}`, "validation_failed", []string{"first"}},
			{"ErrVariableInputNotObject", `{"query": "mutation($in: CreateCategoryInput!) { createCategory(input: $in) { id } }", "variables": {"in": "x"}}`, "validation_failed", []string{"input"}},
			{"ErrVariableUnknownInputField", `{"query": "mutation($in: CreateCategoryInput!) { createCategory(input: $in) { id } }", "variables": {"in": {"name": "x", "color": "red"}}}`, "validation_failed", []string{"color"}},
			{"ErrVariableRequiredMissing", `{"query": "query($id: ID!) { procedure(id: $id) { id } }"}`, "validation_failed", []string{"id"}},
			{"ErrUnknownOperationName", `{"query": "query A { viewer { id } }", "operationName": "B"}`, "", nil},
			{"ErrAmbiguousOperation", `{"query": "query A { viewer { id } } query B { workspace { id } }"}`, "", nil},
			{"ErrDepthOverLimit", `{"query": ` + quote(deepIntrospection(gqlhttp.MaxDepth+1)) + `}`, "validation_failed", nil},
			{"ErrComplexityOverLimit", `{"query": ` + quote(aliasedLists(gqlhttp.MaxComplexity/100+1)) + `}`, "validation_failed", nil},
			{"ErrComplexityNodes", `{"query": ` + quote(aliasedNodes(gqlhttp.MaxComplexity/100+1, w.ProjectID)) + `}`, "validation_failed", nil},
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
			r := rawGraphQL(t, s, "POST", "/graphql", auth, "application/json", []byte(`{"query": `+quote(deepIntrospection(gqlhttp.MaxDepth))+`}`))
			if len(r.Errors) > 0 {
				t.Fatalf("%+v", r.Errors)
			}
		})
		t.Run("ComplexityUnderLimit", func(t *testing.T) {
			n := gqlhttp.MaxComplexity/(100+1) - 1
			r := rawGraphQL(t, s, "POST", "/graphql", auth, "application/json", []byte(`{"query": `+quote(aliasedLists(n))+`}`))
			if len(r.Errors) > 0 {
				t.Fatalf("%d lists of 100: %+v", n, r.Errors)
			}
		})
		t.Run("FullPageWithEdgesUnderLimit", func(t *testing.T) {
			q := `{ procedures(first: 30) { totalCount pageInfo { hasNextPage endCursor } edges { cursor node { ` + pageFields + ` } } } }`
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
			for _, q := range []string{aliasedLists(gqlhttp.MaxComplexity/100 + 1), deepIntrospection(gqlhttp.MaxDepth + 1)} {
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
			// A miss was not executed: no data key, by POST or GET.
			r := rawGraphQL(t, s, "POST", "/graphql", auth, "application/json", []byte(`{"extensions": `+ext+`}`))
			wantError(t, r, "PERSISTED_QUERY_NOT_FOUND")
			if r.Data != nil {
				t.Fatalf("POST miss: data %s", r.Data)
			}
			r = rawGraphQL(t, s, "GET", "/graphql?extensions="+url.QueryEscape(ext), auth, "", nil)
			wantError(t, r, "PERSISTED_QUERY_NOT_FOUND")
			if r.Data != nil {
				t.Fatalf("GET miss: data %s", r.Data)
			}
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

// TestTransportStatuses pins the HTTP status and code of failures the
// executor would otherwise answer in its own shapes: GET mutations, GET
// parameters that are not JSON, documents that do not parse or validate
// (400, not gqlgen's 422), and a GraphQL response media type sent as the
// request body's type.
func TestTransportStatuses(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		get := func(params url.Values) *apitest.GQLResponse {
			return rawGraphQL(t, s, http.MethodGet, "/graphql?"+params.Encode(), bearer(w.AdminToken), "", nil)
		}
		cases := []struct {
			name       string
			res        func() *apitest.GQLResponse
			status     int
			code       string
			allowPOST  bool
			fieldNamed string
		}{
			{"GetMutationRefused", func() *apitest.GQLResponse {
				return get(url.Values{"query": {`mutation { createCategory(input: {name: "x"}) { id } }`}})
			}, http.StatusMethodNotAllowed, "method_not_allowed", true, ""},
			{"GetVariablesNotJSON", func() *apitest.GQLResponse {
				return get(url.Values{"query": {`{ viewer { id } }`}, "variables": {"{oops"}})
			}, http.StatusBadRequest, "validation_failed", false, "variables"},
			{"GetExtensionsNotAnObject", func() *apitest.GQLResponse {
				return get(url.Values{"query": {`{ viewer { id } }`}, "extensions": {"[1]"}})
			}, http.StatusBadRequest, "validation_failed", false, "extensions"},
			{"GetSyntaxError", func() *apitest.GQLResponse {
				return get(url.Values{"query": {`{ viewer { id `}})
			}, http.StatusBadRequest, "bad_request", false, ""},
			{"PostUnknownField", func() *apitest.GQLResponse {
				return s.GraphQL(t, w.AdminToken, `{ viewer { shoeSize } }`, nil)
			}, http.StatusBadRequest, "validation_failed", false, ""},
			{"PostResponseMediaTypeAsRequest", func() *apitest.GQLResponse {
				return s.GraphQLRaw(t, w.AdminToken, "application/graphql-response+json", []byte(`{"query":"{ viewer { id } }"}`))
			}, http.StatusUnsupportedMediaType, "unsupported_media_type", false, ""},
		}
		before := s.GraphQL(t, w.AdminToken, `{ categories { totalCount } }`, nil)
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				res := tc.res()
				if res.Status != tc.status || res.Code() != tc.code {
					t.Fatalf("got %d %q, want %d %q: %+v", res.Status, res.Code(), tc.status, tc.code, res.Errors)
				}
				if res.Errors[0].Extensions.RequestID == "" || res.Errors[0].Extensions.RequestID != res.Header.Get("X-Request-Id") {
					t.Fatalf("requestId %q does not match X-Request-Id %q", res.Errors[0].Extensions.RequestID, res.Header.Get("X-Request-Id"))
				}
				if tc.allowPOST && res.Header.Get("Allow") != "POST" {
					t.Fatalf("Allow = %q, want POST", res.Header.Get("Allow"))
				}
				if tc.fieldNamed != "" && (len(res.Errors[0].Extensions.Fields) == 0 || res.Errors[0].Extensions.Fields[0].Field != tc.fieldNamed) {
					t.Fatalf("error does not name %s: %+v", tc.fieldNamed, res.Errors[0])
				}
			})
		}
		after := s.GraphQL(t, w.AdminToken, `{ categories { totalCount } }`, nil)
		if string(before.Data) != string(after.Data) {
			t.Fatalf("a refused request wrote: %s → %s", before.Data, after.Data)
		}
	})
}

// checkGraphQLGet cannot see a persisted query's operation, so a mutation
// registered by POST and then sent by GET with its hash reached gqlgen's GET
// transport, which answers 406 with no extensions.code. It must be
// method_not_allowed (405, Allow: POST) like a GET mutation sent as text.
// A query string gqlgen cannot parse (a bad %-escape, a ';') was answered
// 400 the same way, without a code.
func TestGraphQLGetTransportErrors(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		auth := bearer(w.MemberToken)

		const m = `mutation { createCategory(input: {name: "via GET"}) { id } }`
		sum := sha256.Sum256([]byte(m))
		ext := `{"persistedQuery": {"version": 1, "sha256Hash": "` + hex.EncodeToString(sum[:]) + `"}}`
		r := rawGraphQL(t, s, "POST", "/graphql", auth, "application/json", []byte(`{"query": `+quote(m)+`, "extensions": `+ext+`}`))
		if len(r.Errors) > 0 {
			t.Fatalf("register: %+v", r.Errors)
		}
		before := snapshot(t, s, w.AdminToken)
		r = rawGraphQL(t, s, "GET", "/graphql?extensions="+url.QueryEscape(ext), auth, "", nil)
		wantError(t, r, "method_not_allowed")
		if r.Status != http.StatusMethodNotAllowed || r.Header.Get("Allow") != "POST" {
			t.Errorf("status %d, Allow %q; want 405 and POST", r.Status, r.Header.Get("Allow"))
		}
		if after := snapshot(t, s, w.AdminToken); after != before {
			t.Errorf("a refused GET mutation changed the workspace")
		}

		for _, q := range []string{
			"/graphql?query=" + url.QueryEscape("{ viewer { id } }") + "&x=%zz",
			"/graphql?query=" + url.QueryEscape("{ viewer { id } }") + ";x=1",
		} {
			r = rawGraphQL(t, s, "GET", q, auth, "", nil)
			wantError(t, r, "bad_request")
			if r.Status != http.StatusBadRequest {
				t.Errorf("%s: status %d, want 400", q, r.Status)
			}
		}
	})
}
