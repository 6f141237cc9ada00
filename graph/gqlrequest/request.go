// Package gqlrequest is a GraphQL request as procsvc's transports carry it
// (an HTTP POST's body, a WebSocket's subscribe payload): decoded and
// checked once, strictly, so that a malformed request is refused with a
// clear message before gqlgen sees it, and handed on through the context
// to whatever else needs it (the Idempotency-Key fingerprint, the
// Server-Sent Events transport) instead of being decoded again.
package gqlrequest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/99designs/gqlgen/graphql"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/jsontext"
)

// Request is a GraphQL request's body. Numbers in its variables and
// extensions are kept as sent (json.Number), as gqlgen decodes them.
type Request struct {
	Query         string         `json:"query"`
	OperationName string         `json:"operationName"`
	Variables     map[string]any `json:"variables"`
	Extensions    map[string]any `json:"extensions"`
}

// Decode decodes and checks a request's body: one JSON object, with a
// query or a persisted query's hash, whose text is valid Unicode.
// Errors: bad_request, validation_failed (text that is not valid Unicode,
// see CheckText).
func Decode(raw []byte) (*Request, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, apperr.New(apperr.BadRequest, "the request body must be a JSON object with a query")
	}
	var req Request
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	if err := dec.Decode(&req); err != nil || !representable(req.Variables) || !representable(req.Extensions) {
		return nil, decodeError(trimmed)
	}
	if dec.More() {
		return nil, apperr.New(apperr.BadRequest, "the request body must hold exactly one JSON object")
	}
	if req.Query == "" && req.Extensions["persistedQuery"] == nil {
		return nil, apperr.New(apperr.BadRequest, "the request has no query")
	}
	if err := CheckText(trimmed, req.Query); err != nil {
		return nil, err
	}
	return &req, nil
}

// representable reports whether every number in v is a float64, as a
// request's JSON must hold: numbers beyond it (1e400) are refused.
func representable(v any) bool {
	switch v := v.(type) {
	case json.Number:
		_, err := strconv.ParseFloat(string(v), 64)
		return err == nil
	case map[string]any:
		for _, e := range v {
			if !representable(e) {
				return false
			}
		}
	case []any:
		for _, e := range v {
			if !representable(e) {
				return false
			}
		}
	}
	return true
}

// decodeError is the refusal of a body that does not decode: the error of
// its first fault as encoding/json reports it, numbers read as float64.
// Only a body being refused is decoded this second time.
func decodeError(body []byte) error {
	var req struct {
		Query         string         `json:"query"`
		OperationName string         `json:"operationName"`
		Variables     map[string]any `json:"variables"`
		Extensions    map[string]any `json:"extensions"`
	}
	err := json.NewDecoder(bytes.NewReader(body)).Decode(&req)
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return apperr.New(apperr.BadRequest, "field %q has the wrong type: expected %s", typeErr.Field, typeErr.Type.String())
	}
	return apperr.New(apperr.BadRequest, "the request body is not valid JSON")
}

// CheckText refuses text that is not valid Unicode (bytes that are not
// UTF-8, unpaired surrogate escapes such as "\ud800") in a request's JSON
// (variables above all) or in its document's string literals: decoding
// would silently turn it into U+FFFD. Errors: validation_failed naming the
// input field, as gqlgen's own coercion errors name it.
func CheckText(body []byte, query string) error {
	var bad *jsontext.Error
	if errors.As(jsontext.Check(body), &bad) || errors.As(jsontext.CheckGraphQL(query), &bad) {
		field := bad.Name()
		if field == "" {
			field = "query"
		}
		return apperr.Invalid(field, "%s", bad.Message())
	}
	return nil
}

// Params returns r as gqlgen's executor takes it.
func (r *Request) Params() *graphql.RawParams {
	return &graphql.RawParams{Query: r.Query, OperationName: r.OperationName, Variables: r.Variables, Extensions: r.Extensions}
}

// Payload is what r's Idempotency-Key fingerprint covers: its query,
// operation name and variables, as values, however the request spelled them
// (white space, key order, escapes) and whichever transport carried it, so
// that a retry is the same request over either. Its extensions count only
// when it has no query text (a persisted query sent by hash alone, which
// they name).
func (r *Request) Payload() []byte {
	canonical := struct {
		Query         string         `json:"query"`
		OperationName string         `json:"operationName"`
		Variables     map[string]any `json:"variables"`
		Extensions    map[string]any `json:"extensions,omitempty"`
	}{Query: r.Query, OperationName: r.OperationName}
	if len(r.Variables) > 0 {
		canonical.Variables = r.Variables // none and {} alike
	}
	if r.Query == "" {
		canonical.Extensions = r.Extensions
	}
	// json.Marshal writes maps' keys in order, and numbers decoded as
	// json.Number as they were sent.
	b, err := json.Marshal(canonical)
	if err != nil {
		return nil
	}
	return b
}

type ctxKey struct{}

// NewContext returns ctx carrying r, the request being served.
func NewContext(ctx context.Context, r *Request) context.Context {
	return context.WithValue(ctx, ctxKey{}, r)
}

// FromContext returns the request NewContext put in ctx, nil if none.
func FromContext(ctx context.Context) *Request {
	r, _ := ctx.Value(ctxKey{}).(*Request)
	return r
}
