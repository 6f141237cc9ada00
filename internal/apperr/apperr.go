// Package apperr is the one error type of procsvc. Every failure a client can
// see carries one of the codes below (docs/design.md §6). The codes are the
// domain's: each transport derives its own answer from them (the HTTP status
// table is middleware.HTTPStatus; GraphQL puts the code in
// extensions.code).
package apperr

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
)

// Code is a machine-readable error class, stable across releases.
type Code string

// The codes, as documented in docs/design.md §6 and the README.
const (
	ValidationFailed     Code = "validation_failed"
	BadRequest           Code = "bad_request"
	Disconnected         Code = "disconnected"
	Unauthenticated      Code = "unauthenticated"
	Forbidden            Code = "forbidden"
	NotFound             Code = "not_found"
	MethodNotAllowed     Code = "method_not_allowed"
	Conflict             Code = "conflict"
	PreconditionFailed   Code = "precondition_failed"
	PayloadTooLarge      Code = "payload_too_large"
	UnsupportedMediaType Code = "unsupported_media_type"
	RateLimited          Code = "rate_limited"
	Internal             Code = "internal"
	GenerationFailed     Code = "generation_failed"
	Unavailable          Code = "unavailable"
)

// codes is every Code above.
var codes = []Code{
	ValidationFailed, BadRequest, Disconnected, Unauthenticated, Forbidden,
	NotFound, MethodNotAllowed, Conflict, PreconditionFailed, PayloadTooLarge,
	UnsupportedMediaType, RateLimited, Internal, GenerationFailed, Unavailable,
}

// Known reports whether c is one of procsvc's codes (as opposed to, say, a
// code of gqlgen's).
func Known(c Code) bool { return slices.Contains(codes, c) }

// DisconnectedMessage is docs/contract.md §7's text for an expired or revoked
// credential.
const DisconnectedMessage = "The login details for this item have changed (credentials, MFA or a required user action). A user login is required."

// A Reason says which of a code's causes failed a request, where the
// interface fixes the code's message and so cannot say it there: the body's
// optional reason field (docs/api.md#authentication).
type Reason string

// The causes of disconnected.
const (
	TokenRevoked  Reason = "token_revoked"
	TokenExpired  Reason = "token_expired"
	MemberRemoved Reason = "member_removed"
)

// Reasons is every Reason above.
var Reasons = []Reason{TokenRevoked, TokenExpired, MemberRemoved}

// Disconnect returns the disconnected error of a credential refused for
// reason: the interface's code and message, and the reason.
func Disconnect(reason Reason) *Error {
	return &Error{Code: Disconnected, Message: DisconnectedMessage, Reason: reason}
}

// FieldError names one invalid input field or parameter.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error is a failure with a client-facing code and message. Err, if set, is
// the internal cause: logged, never shown.
type Error struct {
	Code    Code
	Message string
	Fields  []FieldError
	// Reason, if set, says which of the code's causes this is.
	Reason Reason
	Err    error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an error with code and message.
func New(c Code, format string, args ...any) *Error {
	return &Error{Code: c, Message: fmt.Sprintf(format, args...)}
}

// Invalid returns a validation_failed error naming one field.
func Invalid(field, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	return &Error{
		Code:    ValidationFailed,
		Message: field + ": " + msg,
		Fields:  []FieldError{{Field: field, Message: msg}},
	}
}

// Validation collects field errors so a client learns of all of them at once.
type Validation struct{ fields []FieldError }

// Add records that field is invalid.
func (v *Validation) Add(field, format string, args ...any) {
	v.fields = append(v.fields, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

// Err returns nil when nothing was added, else one validation_failed error.
func (v *Validation) Err() error {
	if len(v.fields) == 0 {
		return nil
	}
	msg := v.fields[0].Field + ": " + v.fields[0].Message
	if n := len(v.fields) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more)", n)
	}
	return &Error{Code: ValidationFailed, Message: msg, Fields: v.fields}
}

// NotFoundf returns a not_found error for a kind of record.
func NotFoundf(kind string) *Error {
	return &Error{Code: NotFound, Message: kind + " not found"}
}

// ResponseTooLarge is payload_too_large for an answer that would pass
// bound, the bound on a response's bytes (--max-response-mb): ask says how
// to ask for less.
func ResponseTooLarge(bound int, ask string) *Error {
	return &Error{Code: PayloadTooLarge, Message: fmt.Sprintf("the response would be larger than %s, the most a response may hold; %s", sizeText(bound), ask)}
}

// sizeText spells n bytes for a message: in MiB when whole, else in bytes.
func sizeText(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// A Classifier gives the errors of the storage below the core (ent's and
// the database drivers') their code: it returns nil for an error it does not
// know. internal/database provides it, so that this package depends on
// neither ent nor a driver.
type Classifier func(error) *Error

// storage is the Classifier From consults, set by SetStorageClassifier.
var storage atomic.Pointer[Classifier]

// SetStorageClassifier makes From classify storage errors with c.
// internal/database.Open calls it: storage errors only exist once a database
// is open, and opening one is what teaches From to read them.
func SetStorageClassifier(c Classifier) { storage.Store(&c) }

// From turns any error into an *Error: an *Error keeps its code; then the
// storage classifier (SetStorageClassifier) gives ent's errors and the
// database faults a retry can overcome their codes; context cancellation is
// unavailable; anything else is internal, with the cause kept for the log.
func From(err error) *Error {
	if err == nil {
		return nil
	}
	var ae *Error
	if errors.As(err, &ae) {
		return ae
	}
	if classify := storage.Load(); classify != nil {
		if ae := (*classify)(err); ae != nil {
			return ae
		}
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return &Error{Code: Unavailable, Message: "the request could not be completed in time", Err: err}
	}
	return &Error{Code: Internal, Message: "internal error", Err: err}
}

// CodeOf returns the code err would be answered with ("" for nil).
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	return From(err).Code
}

// Map is From for return positions: nil stays a nil error (never a typed nil
// *Error inside a non-nil interface).
func Map(err error) error {
	if err == nil {
		return nil
	}
	return From(err)
}

// Renamed is err with the fields it names spelled as names maps them, its
// message's leading field too: a face that spells a parameter otherwise
// than the core names it (REST's after is GraphQL's afterVersion). Any
// other error is returned as it is.
func Renamed(err error, names map[string]string) error {
	var e *Error
	if !errors.As(err, &e) || len(e.Fields) == 0 {
		return err
	}
	out := *e
	out.Fields = make([]FieldError, len(e.Fields))
	for i, f := range e.Fields {
		if n, ok := names[f.Field]; ok {
			f.Field = n
		}
		out.Fields[i] = f
	}
	if lead := e.Fields[0].Field; strings.HasPrefix(e.Message, lead+": ") {
		out.Message = out.Fields[0].Field + strings.TrimPrefix(e.Message, lead)
	}
	return &out
}
