package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/jsontext"
	"github.com/procsvc/procsvc/internal/middleware"
	"github.com/procsvc/procsvc/internal/timefmt"
)

// body is a request's JSON object, decoded field by field so that each
// problem names its field and an absent field can be told from a null one.
type body struct {
	fields map[string]json.RawMessage
	used   map[string]bool
	val    *apperr.Validation
}

// readBody enforces the transport rules for a JSON body: Content-Type, size,
// well-formed JSON, an object at the top, and text that is valid Unicode.
// Errors: unsupported_media_type, payload_too_large, bad_request,
// validation_failed (naming the field whose text is not valid UTF-8).
func readBody(w http.ResponseWriter, r *http.Request) (*body, error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return nil, apperr.New(apperr.UnsupportedMediaType, "send the body as Content-Type: application/json")
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, middleware.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, apperr.New(apperr.PayloadTooLarge, "the request body exceeds %d bytes", middleware.MaxBodyBytes)
		}
		return nil, apperr.New(apperr.BadRequest, "the request body could not be read")
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return nil, apperr.New(apperr.BadRequest, "the request body is empty; send a JSON object")
	}
	if !json.Valid(trimmed) {
		return nil, apperr.New(apperr.BadRequest, "the request body is not valid JSON")
	}
	if trimmed[0] != '{' {
		return nil, apperr.New(apperr.BadRequest, "the request body must be a JSON object")
	}
	if err := checkText(trimmed); err != nil {
		return nil, err
	}
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(trimmed, &fields); err != nil {
		return nil, apperr.New(apperr.BadRequest, "the request body is not valid JSON")
	}
	return &body{fields: fields, used: map[string]bool{}, val: &apperr.Validation{}}, nil
}

// checkText refuses a body with a string that is not valid Unicode (bytes
// that are not UTF-8, an unpaired surrogate escape such as "\ud800"), which
// decoding would silently turn into U+FFFD. The error names the top-level
// field holding it, and the full path when it is nested (in content).
func checkText(raw []byte) error {
	err := jsontext.Check(raw)
	var bad *jsontext.Error
	if !errors.As(err, &bad) {
		return nil
	}
	field := "body"
	if len(bad.Path) > 0 {
		if name, _ := bad.Path[0].(string); name != "" {
			field = name
		}
	}
	if len(bad.Path) <= 1 {
		return apperr.Invalid(field, "%s", bad.Message())
	}
	return apperr.Invalid(field, "%s (at %s)", bad.Message(), bad.Field())
}

// ignore marks read-only fields that a client may echo back (GET, modify,
// PUT) without error.
func (b *body) ignore(names ...string) {
	for _, n := range names {
		b.used[n] = true
	}
}

// finish reports unknown fields and every type error collected.
func (b *body) finish() error {
	addUnused(b.val, b.fields, b.used, "is not a field of this resource")
	return b.val.Err()
}

// addUnused reports msg for every name of all that used lacks, in name
// order: bodies and query strings refuse what the endpoint does not read.
func addUnused[V any](val *apperr.Validation, all map[string]V, used map[string]bool, msg string) {
	var unknown []string
	for k := range all {
		if !used[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		val.Add(k, "%s", msg)
	}
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// field returns the raw value of name and whether it was sent.
func (b *body) field(name string) (json.RawMessage, bool) {
	b.used[name] = true
	raw, ok := b.fields[name]
	return raw, ok
}

// str decodes a string field: absent, null, or a string.
func (b *body) str(name string) graphql.Omittable[*string] {
	return decodeField[string](b, name, "must be a string")
}

// boolean decodes a boolean field.
func (b *body) boolean(name string) graphql.Omittable[*bool] {
	return decodeField[bool](b, name, "must be true or false")
}

// number decodes a numeric field.
func (b *body) number(name string) graphql.Omittable[*float64] {
	return decodeField[float64](b, name, "must be a number")
}

// decodeField decodes field name as a T: absent, null, or a T; any other
// value is reported with problem.
func decodeField[T any](b *body, name, problem string) graphql.Omittable[*T] {
	raw, ok := b.field(name)
	if !ok {
		return graphql.Omittable[*T]{}
	}
	if isNull(raw) {
		return graphql.OmittableOf[*T](nil)
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		b.val.Add(name, "%s", problem)
		return graphql.Omittable[*T]{}
	}
	return graphql.OmittableOf(&v)
}

// timestamp decodes a timestamp field (see timefmt.Parse).
func (b *body) timestamp(name string) graphql.Omittable[*time.Time] {
	s := b.str(name)
	v, ok := s.ValueOK()
	if !ok {
		return graphql.Omittable[*time.Time]{}
	}
	if v == nil {
		return graphql.OmittableOf[*time.Time](nil)
	}
	t, err := timefmt.Parse(*v)
	if err != nil {
		b.val.Add(name, "%s", err)
		return graphql.Omittable[*time.Time]{}
	}
	return graphql.OmittableOf(&t)
}

// raw returns a field's JSON as is (for content, which may be any value).
func (b *body) raw(name string) (json.RawMessage, bool) { return b.field(name) }

// value returns the value of a set, non-null Omittable or nil.
func value[T any](o graphql.Omittable[*T]) *T {
	v, _ := o.ValueOK()
	return v
}
