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
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

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

// FromQuery decodes a GET request's parameters (query, operationName, and
// variables and extensions as JSON objects) by Decode's rules: numbers kept
// as sent, numbers beyond a float64 refused, text that is not valid Unicode
// refused. Errors: bad_request (no query; a number beyond a float64),
// validation_failed (variables or extensions not a JSON object, or text that
// is not valid Unicode, see CheckText).
func FromQuery(q url.Values) (*Request, error) {
	req := &Request{Query: q.Get("query"), OperationName: q.Get("operationName")}
	for _, p := range []struct {
		name string
		into *map[string]any
	}{{"variables", &req.Variables}, {"extensions", &req.Extensions}} {
		v := q.Get(p.name)
		if v == "" {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(v))
		dec.UseNumber()
		if err := dec.Decode(p.into); err != nil || dec.More() {
			return nil, apperr.Invalid(p.name, "must be a JSON object")
		}
		if !representable(*p.into) {
			return nil, apperr.New(apperr.BadRequest, "%s holds a number beyond a 64-bit float", p.name)
		}
		if err := CheckText([]byte(v), ""); err != nil {
			return nil, err
		}
	}
	if err := CheckText(nil, req.Query); err != nil {
		return nil, err
	}
	if req.Query == "" && req.Extensions == nil {
		return nil, apperr.New(apperr.BadRequest, "a GET request needs a query parameter")
	}
	return req, nil
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

// Of returns the request r carries: the one its guard decoded (NewContext),
// or, where no guard ran (a test serving the executor alone), r's query
// string or body (at most maxBody bytes) decoded now by the same rules.
// Errors: Decode's and FromQuery's; bad_request when the body cannot be
// read.
func Of(r *http.Request, maxBody int64) (*Request, error) {
	if req := FromContext(r.Context()); req != nil {
		return req, nil
	}
	if r.Method == http.MethodGet {
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			return nil, apperr.New(apperr.BadRequest, "the query string cannot be parsed")
		}
		return FromQuery(q)
	}
	raw, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
	if err != nil {
		return nil, apperr.New(apperr.BadRequest, "the request body could not be read")
	}
	return Decode(raw)
}

// Refusal is err, a request's refusal by Of, as the executor's errors
// carry it: its message and code.
func Refusal(err error) gqlerror.List {
	ae := apperr.From(err)
	return gqlerror.List{{Message: ae.Message, Extensions: map[string]any{"code": string(ae.Code)}}}
}

// Operation is r's request (Of, within maxBody bytes) as exec's operation
// context, its reading timed from start: what an HTTP transport runs.
// When the request cannot be read, err says why (answer Refusal(err));
// when exec refuses it, errs are its errors and oc what exec made of it.
func Operation(ctx context.Context, r *http.Request, maxBody int64, exec graphql.GraphExecutor, start time.Time) (oc *graphql.OperationContext, errs gqlerror.List, err error) {
	req, err := Of(r, maxBody)
	if err != nil {
		return nil, nil, err
	}
	params := req.Params()
	params.Headers = r.Header
	params.ReadTime = graphql.TraceTiming{Start: start, End: graphql.Now()}
	oc, errs = exec.CreateOperationContext(ctx, params)
	return oc, errs, nil
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
