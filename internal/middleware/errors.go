package middleware

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/procsvc/procsvc/internal/apperr"
)

// statuses maps every code to its HTTP status (docs/design.md §6).
var statuses = map[apperr.Code]int{
	apperr.ValidationFailed:     http.StatusBadRequest,
	apperr.BadRequest:           http.StatusBadRequest,
	apperr.Disconnected:         http.StatusBadRequest,
	apperr.Unauthenticated:      http.StatusUnauthorized,
	apperr.Forbidden:            http.StatusForbidden,
	apperr.NotFound:             http.StatusNotFound,
	apperr.MethodNotAllowed:     http.StatusMethodNotAllowed,
	apperr.Conflict:             http.StatusConflict,
	apperr.PreconditionFailed:   http.StatusPreconditionFailed,
	apperr.PayloadTooLarge:      http.StatusRequestEntityTooLarge,
	apperr.UnsupportedMediaType: http.StatusUnsupportedMediaType,
	apperr.RateLimited:          http.StatusTooManyRequests,
	apperr.Internal:             http.StatusInternalServerError,
	apperr.GenerationFailed:     http.StatusBadGateway,
	apperr.Unavailable:          http.StatusServiceUnavailable,
}

// HTTPStatus returns the status that answers code: the one table from code to
// status, for both faces.
func HTTPStatus(c apperr.Code) int {
	if s, ok := statuses[c]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// ErrorBody is docs/design.md §6's error body. REST answers it as is;
// GraphQL carries the same code, request id and fields in an error's
// extensions.
type ErrorBody struct {
	Code      apperr.Code         `json:"code"`
	Message   string              `json:"message"`
	RequestID string              `json:"requestId"`
	Fields    []apperr.FieldError `json:"fields,omitempty"`
	// Reason says which cause of the code failed the request, for a code
	// whose message the interface fixes (disconnected: token_revoked,
	// token_expired, member_removed).
	Reason apperr.Reason `json:"reason,omitempty"`
}

// Body returns the client-facing body of err, logging internal errors (with
// the request id) so that their detail is kept but never shown. Every error
// answer of both faces is built here.
func Body(ctx context.Context, log *slog.Logger, err error) ErrorBody {
	ae := apperr.From(err)
	body := ErrorBody{Code: ae.Code, Message: ae.Message, RequestID: RequestID(ctx), Fields: ae.Fields, Reason: ae.Reason}
	if ae.Code == apperr.Internal || ae.Code == apperr.Unavailable {
		log.ErrorContext(ctx, "request failed", "request_id", body.RequestID, "code", ae.Code, "error", err.Error())
	}
	if ae.Code == apperr.Internal {
		body.Message = "internal error"
		body.Fields = nil
		body.Reason = ""
	}
	return body
}

// ErrorWriter answers an error in the face's own shape (REST body or GraphQL
// errors array).
type ErrorWriter func(w http.ResponseWriter, r *http.Request, err error)

// WriteError answers err with docs/design.md §6's body: REST's ErrorWriter.
func WriteError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	body := Body(r.Context(), log, err)
	WriteErrorJSON(w, body.Code, body)
}

// WriteErrorJSON answers an error of code with v, its body in the face's
// shape: the code's status, and the headers an error of code carries on
// both faces (the challenge of a 401; when to retry a 503 or a 429).
func WriteErrorJSON(w http.ResponseWriter, code apperr.Code, v any) {
	switch code {
	case apperr.Unauthenticated:
		w.Header().Set("WWW-Authenticate", `Bearer realm="procsvc"`)
	case apperr.Unavailable, apperr.RateLimited:
		// The rate limiter sets its own: when the bucket holds enough.
		if w.Header().Get("Retry-After") == "" {
			w.Header().Set("Retry-After", "1")
		}
	}
	WriteJSON(w, HTTPStatus(code), v)
}

// WriteJSON writes v as a JSON response. The error is the encoder's, for a
// caller that answers it (the status is already sent).
func WriteJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// WriteJSONBody writes body, a JSON value its caller encoded itself, as a
// response exactly as WriteJSON would have written that value.
func WriteJSONBody(w http.ResponseWriter, status int, body []byte) error {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	// json.Encoder ends every value with a newline.
	_, err := w.Write(append(body, '\n'))
	return err
}
