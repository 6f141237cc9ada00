package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/middleware"
)

// graphqlError answers err in GraphQL's response shape, with DESIGN §6's code
// and request id in extensions, for failures before the executor runs
// (authentication, transport).
func graphqlError(log *slog.Logger) middleware.ErrorWriter {
	return func(w http.ResponseWriter, r *http.Request, err error) {
		body := middleware.Body(r.Context(), log, err)
		ext := map[string]any{"code": body.Code, "requestId": body.RequestID}
		if len(body.Fields) > 0 {
			ext["fields"] = body.Fields
		}
		if body.Code == apperr.Unauthenticated {
			w.Header().Set("WWW-Authenticate", `Bearer realm="procsvc"`)
		}
		middleware.WriteJSON(w, apperr.HTTPStatus(body.Code), map[string]any{
			"errors": []map[string]any{{"message": body.Message, "extensions": ext}},
			"data":   nil,
		})
	}
}

// graphqlRequest is the GraphQL-over-HTTP POST body, typed strictly so that
// a malformed body is refused with a clear message before gqlgen sees it.
type graphqlRequest struct {
	Query         string         `json:"query"`
	OperationName string         `json:"operationName"`
	Variables     map[string]any `json:"variables"`
	Extensions    map[string]any `json:"extensions"`
}

// guardGraphQL enforces the transport rules gqlgen would otherwise answer in
// its own shapes: methods, content type, body size and a well-formed JSON
// object body.
func guardGraphQL(writeErr middleware.ErrorWriter, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			if q := r.URL.Query(); q.Get("query") == "" && q.Get("extensions") == "" {
				writeErr(w, r, apperr.New(apperr.BadRequest, "a GET request needs a query parameter"))
				return
			}
			next.ServeHTTP(w, r)
			return
		case http.MethodPost:
		default:
			w.Header().Set("Allow", "GET, POST")
			writeErr(w, r, apperr.New(apperr.MethodNotAllowed, "/graphql accepts GET and POST"))
			return
		}
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || (mt != "application/json" && mt != "application/graphql-response+json") {
			writeErr(w, r, apperr.New(apperr.UnsupportedMediaType, "send the GraphQL request as Content-Type: application/json"))
			return
		}
		raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, middleware.MaxBodyBytes))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				writeErr(w, r, apperr.New(apperr.PayloadTooLarge, "the request body exceeds %d bytes", middleware.MaxBodyBytes))
				return
			}
			writeErr(w, r, apperr.New(apperr.BadRequest, "the request body could not be read"))
			return
		}
		if err := decodeGraphQLRequest(raw); err != nil {
			writeErr(w, r, err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(raw))
		r.ContentLength = int64(len(raw))
		next.ServeHTTP(w, r)
	})
}

func decodeGraphQLRequest(raw []byte) error {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return apperr.New(apperr.BadRequest, "the request body must be a JSON object with a query")
	}
	var req graphqlRequest
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if err := dec.Decode(&req); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return apperr.New(apperr.BadRequest, "field %q has the wrong type: expected %s", typeErr.Field, typeErr.Type.String())
		}
		return apperr.New(apperr.BadRequest, "the request body is not valid JSON")
	}
	if dec.More() {
		return apperr.New(apperr.BadRequest, "the request body must hold exactly one JSON object")
	}
	if req.Query == "" && req.Extensions["persistedQuery"] == nil {
		return apperr.New(apperr.BadRequest, "the request has no query")
	}
	return nil
}
