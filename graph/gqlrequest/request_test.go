package gqlrequest_test

import (
	"bytes"
	"testing"

	"github.com/procsvc/procsvc/graph/gqlrequest"
	"github.com/procsvc/procsvc/internal/apperr"
)

// TestDecodeRefuses: what is not one representable GraphQL request is
// refused with the code a client can act on, before anything runs.
func TestDecodeRefuses(t *testing.T) {
	for _, tc := range []struct{ name, body, code string }{
		{"NotAnObject", `[]`, "bad_request"},
		{"NotJSON", `{"query":`, "bad_request"},
		{"TrailingData", `{"query":"{ viewer { id } }"} {}`, "bad_request"},
		{"NumberOutOfRange", `{"query":"query($n: Float) { viewer { id } }","variables":{"n":1e400}}`, "bad_request"},
		{"QueryNotAString", `{"query":1}`, "bad_request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gqlrequest.Decode([]byte(tc.body))
			if got := apperr.CodeOf(err); string(got) != tc.code {
				t.Fatalf("Decode(%s) = %v (%s), want %s", tc.body, err, got, tc.code)
			}
		})
	}
}

// TestPayloadIsTheRequestAsValues: a retry spelled differently is the same
// request; a different query, operation or variable is not; extensions
// count only for a request sent by hash alone.
func TestPayloadIsTheRequestAsValues(t *testing.T) {
	payload := func(body string) []byte {
		t.Helper()
		r, err := gqlrequest.Decode([]byte(body))
		if err != nil {
			t.Fatalf("Decode(%s): %v", body, err)
		}
		return r.Payload()
	}
	base := `{"query":"mutation($a: Int, $b: Int) { x }","variables":{"a":1,"b":2}}`
	for _, same := range []string{
		`{ "variables" : { "b" : 2, "a" : 1 }, "query" : "mutation($a: Int, $b: Int) { x }" }`,
		`{"query":"mutation($a: Int, $b: Int) { x }","variables":{"a":1,"b":2},"extensions":{"tracing":true}}`,
		`{"query":"mutation($a: Int, $b: Int) \u007b x }","variables":{"a":1,"b":2}}`,
	} {
		if !bytes.Equal(payload(base), payload(same)) {
			t.Errorf("%s\nand %s\nshould be one request", base, same)
		}
	}
	if !bytes.Equal(payload(`{"query":"{ x }"}`), payload(`{"query":"{ x }","variables":{}}`)) {
		t.Error("no variables and {} should be one request")
	}
	for _, other := range []string{
		`{"query":"mutation($a: Int, $b: Int) { x }","variables":{"a":1,"b":3}}`,
		`{"query":"mutation($a: Int, $b: Int) { y }","variables":{"a":1,"b":2}}`,
		`{"query":"mutation($a: Int, $b: Int) { x }","variables":{"a":1,"b":2},"operationName":"O"}`,
	} {
		if bytes.Equal(payload(base), payload(other)) {
			t.Errorf("%s\nand %s\nshould be different requests", base, other)
		}
	}
	byHash := func(hash string) []byte {
		return payload(`{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"` + hash + `"}}}`)
	}
	if bytes.Equal(byHash("aa"), byHash("bb")) {
		t.Error("persisted queries sent by different hashes should be different requests")
	}
}
