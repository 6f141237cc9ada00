package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/jsontext"
	"github.com/procsvc/procsvc/internal/metrics"
	"github.com/procsvc/procsvc/internal/middleware"
)

// Middleware is the HTTP middleware of /graphql's requests, each given the
// writer of GraphQL-shaped errors for its own refusals.
type Middleware struct {
	// Requests wraps GET and POST requests: authentication, the rate
	// limit, and whatever else an ordinary request goes through.
	Requests func(middleware.ErrorWriter) func(http.Handler) http.Handler
	// Streams wraps Server-Sent Events requests: authentication and the
	// rate limit, nothing that buffers or replays a response.
	Streams func(middleware.ErrorWriter) func(http.Handler) http.Handler
}

// NewHandler returns the whole of /graphql over HTTP: the transport guard,
// then mw's middleware, then the executor of NewServer. With live it also
// serves subscriptions: WebSockets (which authenticate in connection_init,
// so they skip mw) and Server-Sent Events (through mw.Streams).
func NewHandler(r *Resolver, log *slog.Logger, m *metrics.Metrics, mw Middleware, live *Live) http.Handler {
	writeErr := graphqlError(log)
	exec := NewServer(r, log, m, live)
	g := guard{writeErr: writeErr, requests: guardGraphQL(writeErr, mw.Requests(writeErr)(exec))}
	if live != nil {
		g.streams = guardGraphQL(writeErr, mw.Streams(writeErr)(exec))
		g.sockets = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := checkOrigin(r, live.opts.Origins); err != nil {
				writeErr(w, r, err)
				return
			}
			middleware.Info(r.Context()).Route = webSocketRoute
			exec.ServeHTTP(w, r)
		})
	}
	return g
}

// extensions are a GraphQL error's extensions for body: the code, request id
// and fields of docs/design.md §6's body.
func extensions(body middleware.ErrorBody) map[string]any {
	ext := map[string]any{"code": string(body.Code), "requestId": body.RequestID}
	if len(body.Fields) > 0 {
		ext["fields"] = body.Fields
	}
	return ext
}

// graphqlError answers err in GraphQL's response shape, with docs/design.md
// §6's code and request id in extensions, for failures before the executor
// runs (authentication, transport).
func graphqlError(log *slog.Logger) middleware.ErrorWriter {
	return func(w http.ResponseWriter, r *http.Request, err error) {
		body := middleware.Body(r.Context(), log, err)
		// The request was not executed, so the body has no data key
		// (GraphQL over HTTP).
		middleware.WriteErrorJSON(w, body.Code, map[string]any{
			"errors": []map[string]any{{"message": body.Message, "extensions": extensions(body)}},
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

// guard routes /graphql's requests: WebSocket upgrades to sockets, POSTs
// accepting text/event-stream to streams, the rest to requests (streams
// and requests behind guardGraphQL). Without live updates (nil sockets and
// streams) every request is an ordinary one.
type guard struct {
	writeErr                   middleware.ErrorWriter
	requests, streams, sockets http.Handler
}

func (g guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case g.sockets != nil && isWebSocket(r):
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", "GET")
			g.writeErr(w, r, apperr.New(apperr.MethodNotAllowed, "a WebSocket is opened with GET"))
			return
		}
		g.sockets.ServeHTTP(w, r)
	case g.streams != nil && wantsEventStream(r):
		g.streams.ServeHTTP(w, r)
	default:
		g.requests.ServeHTTP(w, r)
	}
}

// guardGraphQL enforces the transport rules gqlgen would otherwise answer in
// its own shapes: methods, content type, body size and a well-formed JSON
// object body.
func guardGraphQL(writeErr middleware.ErrorWriter, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			if err := checkGraphQLGet(r); err != nil {
				if apperr.CodeOf(err) == apperr.MethodNotAllowed {
					w.Header().Set("Allow", "POST")
				}
				writeErr(w, r, err)
				return
			}
			// A persisted query's operation is only known to gqlgen, whose
			// GET transport refuses a mutation with a bare 406: answer
			// that in docs/design.md §6's shape too.
			next.ServeHTTP(&getRefusal{statusMapper: statusMapper{ResponseWriter: w}, refuse: func() {
				w.Header().Set("Allow", "POST")
				writeErr(w, r, apperr.New(apperr.MethodNotAllowed, "GET runs queries only; send mutation operations with POST"))
			}}, r)
			return
		case http.MethodPost:
		default:
			w.Header().Set("Allow", "GET, POST")
			writeErr(w, r, apperr.New(apperr.MethodNotAllowed, "/graphql accepts GET and POST"))
			return
		}
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" {
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
		next.ServeHTTP(&statusMapper{ResponseWriter: w}, r)
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
	return checkText(trimmed, req.Query)
}

// checkText refuses text that is not valid Unicode (bytes that are not
// UTF-8, unpaired surrogate escapes such as "\ud800") in a request's JSON
// (variables above all) or in its document's string literals: decoding
// would silently turn it into U+FFFD. Errors: validation_failed naming the
// input field, as gqlgen's own coercion errors name it.
func checkText(body []byte, query string) error {
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

// statusMapper answers gqlgen's 422 (a document that does not parse or
// validate, or an operation over a limit) with 400, as docs/api.md says;
// the body already carries the code. Every 4xx gqlgen answers is for a
// request it did not execute, whose body gets no data key (GraphQL over
// HTTP).
type statusMapper struct {
	http.ResponseWriter
	notExecuted bool
}

func (s *statusMapper) WriteHeader(code int) {
	if code == http.StatusUnprocessableEntity {
		code = http.StatusBadRequest
	}
	s.notExecuted = code >= 400 && code < 500
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusMapper) Write(b []byte) (int, error) {
	if !s.notExecuted {
		return s.ResponseWriter.Write(b)
	}
	if _, err := s.ResponseWriter.Write(withoutData(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (s *statusMapper) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// withoutData drops the data key of a GraphQL response body that gqlgen
// writes (in one piece) for a request it did not execute. Anything else is
// returned as it is.
func withoutData(b []byte) []byte {
	var body map[string]json.RawMessage
	if err := json.Unmarshal(b, &body); err != nil {
		return b
	}
	if _, ok := body["data"]; !ok {
		return b
	}
	delete(body, "data")
	out, err := json.Marshal(body)
	if err != nil {
		return b
	}
	return out
}

// getRefusal is statusMapper for GET requests that also turns gqlgen's 406
// (a GET whose operation is not a query) into refuse's answer, dropping
// gqlgen's own body.
type getRefusal struct {
	statusMapper
	refuse  func()
	refused bool
}

func (g *getRefusal) WriteHeader(code int) {
	if code == http.StatusNotAcceptable {
		g.refused = true
		g.refuse()
		return
	}
	g.statusMapper.WriteHeader(code)
}

func (g *getRefusal) Write(b []byte) (int, error) {
	if g.refused {
		return len(b), nil
	}
	return g.statusMapper.Write(b)
}

// checkGraphQLGet validates a GET request's parameters the way the POST body
// is validated, and refuses mutations, which GET must not run.
func checkGraphQLGet(r *http.Request) error {
	// gqlgen parses the query string strictly and answers a failure in its
	// own shape; refuse what it would refuse first.
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return apperr.New(apperr.BadRequest, "the query string cannot be parsed")
	}
	for _, name := range []string{"variables", "extensions"} {
		if v := q.Get(name); v != "" {
			var obj map[string]any
			if err := json.Unmarshal([]byte(v), &obj); err != nil {
				return apperr.Invalid(name, "must be a JSON object")
			}
			if err := checkText([]byte(v), ""); err != nil {
				return err
			}
		}
	}
	query := q.Get("query")
	if err := checkText(nil, query); err != nil {
		return err
	}
	if query == "" {
		if q.Get("extensions") == "" {
			return apperr.New(apperr.BadRequest, "a GET request needs a query parameter")
		}
		return nil
	}
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: query}, MaxTokens)
	if err != nil {
		// The executor reports syntax errors in full, and refuses
		// documents over the token limit.
		return nil
	}
	op := doc.Operations.ForName(q.Get("operationName"))
	if op == nil && len(doc.Operations) == 1 {
		op = doc.Operations[0]
	}
	if op != nil && op.Operation != ast.Query {
		return apperr.New(apperr.MethodNotAllowed, "GET runs queries only; send %s operations with POST", op.Operation)
	}
	return nil
}
