package graph_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

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
