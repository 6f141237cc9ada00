package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/lru"
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
	// Authenticate resolves the request's credential and puts its viewer
	// in the context. The guard calls it after the checks that cost
	// nothing (method, content type) and before it reads the body.
	Authenticate func(middleware.ErrorWriter) func(http.Handler) http.Handler
	// Requests wraps authenticated queries and mutations (GET and POST,
	// answered as JSON or as one Server-Sent Event): the rate limit,
	// Idempotency-Key, and whatever else an ordinary request goes
	// through.
	Requests func(middleware.ErrorWriter) func(http.Handler) http.Handler
	// Streams wraps authenticated subscriptions streamed as Server-Sent
	// Events: the rate limit, nothing that buffers or replays a response.
	Streams func(middleware.ErrorWriter) func(http.Handler) http.Handler
}

// NewHandler returns the whole of /graphql over HTTP: the transport guard,
// then mw's middleware, then the executor of NewServer. With live it also
// serves subscriptions: WebSockets (which authenticate in connection_init,
// so they skip mw) and Server-Sent Events (through mw.Streams).
func NewHandler(r *Resolver, log *slog.Logger, m *metrics.Metrics, mw Middleware, live *Live) http.Handler {
	writeErr := graphqlError(log)
	documents := lru.New[*ast.QueryDocument](1000)
	exec := NewServer(r, log, m, live, documents)
	g := &guard{writeErr: writeErr, documents: documents, requests: mw.Requests(writeErr)(exec)}
	g.authenticated = mw.Authenticate(writeErr)(http.HandlerFunc(g.serveAuthenticated))
	if live != nil {
		g.streams = mw.Streams(writeErr)(exec)
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

// guard routes /graphql's requests and enforces the transport rules gqlgen
// would otherwise answer in its own shapes, cheapest first, so that a
// request refused early costs little:
//
//  1. WebSocket upgrades go to sockets (they authenticate in
//     connection_init); other methods than GET and POST, and POST bodies
//     that are not application/json, are refused.
//  2. Authentication (Middleware.Authenticate): a request without a usable
//     token is refused before its body is read, whatever the body.
//  3. The body (at most 1 MiB, one JSON object with a query) or the GET
//     parameters are read and checked.
//  4. A subscription whose client accepts text/event-stream is streamed
//     (streams); every other request, queries and mutations whatever
//     their Accept header, goes through requests and is answered in the
//     negotiated media type (negotiate): JSON, or one Server-Sent Event
//     (eventFramer).
//
// Without live updates (nil sockets and streams) nothing is streamed.
type guard struct {
	writeErr middleware.ErrorWriter
	// documents is the executor's cache of parsed and validated
	// documents, which tells most subscriptions apart without a parse.
	documents                  graphql.Cache[*ast.QueryDocument]
	authenticated              http.Handler
	requests, streams, sockets http.Handler
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g.sockets != nil && isWebSocket(r) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", "GET")
			g.writeErr(w, r, apperr.New(apperr.MethodNotAllowed, "a WebSocket is opened with GET"))
			return
		}
		// A WebSocket outlives the request deadline: it ends with its
		// connection or the server.
		ctx, cancel := middleware.WithoutDeadline(r.Context())
		defer cancel()
		g.sockets.ServeHTTP(w, r.WithContext(ctx))
		return
	}
	switch r.Method {
	case http.MethodGet:
	case http.MethodPost:
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" {
			g.writeErr(w, r, apperr.New(apperr.UnsupportedMediaType, "send the GraphQL request as Content-Type: application/json"))
			return
		}
	default:
		w.Header().Set("Allow", "GET, POST")
		g.writeErr(w, r, apperr.New(apperr.MethodNotAllowed, "/graphql accepts GET and POST"))
		return
	}
	g.authenticated.ServeHTTP(w, r)
}

// serveAuthenticated reads and checks an authenticated request, and routes
// it (steps 3 and 4 of guard).
func (g *guard) serveAuthenticated(w http.ResponseWriter, r *http.Request) {
	n := negotiate(r.Header)
	if r.Method == http.MethodGet {
		g.serveGet(w, r, n)
		return
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, middleware.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			g.writeErr(w, r, apperr.New(apperr.PayloadTooLarge, "the request body exceeds %d bytes", middleware.MaxBodyBytes))
			return
		}
		g.writeErr(w, r, apperr.New(apperr.BadRequest, "the request body could not be read"))
		return
	}
	req, err := decodeGraphQLRequest(raw)
	if err != nil {
		g.writeErr(w, r, err)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(raw))
	r.ContentLength = int64(len(raw))
	if g.streams != nil && n.eventStream && g.subscribes(r.Context(), req) {
		// A stream outlives the request deadline; its work is bounded
		// per event instead.
		ctx, cancel := middleware.WithoutDeadline(r.Context())
		defer cancel()
		g.streams.ServeHTTP(&statusMapper{ResponseWriter: w}, r.WithContext(markStreamRequest(ctx)))
		return
	}
	if n.media != mediaEventStream {
		g.requests.ServeHTTP(&statusMapper{ResponseWriter: w}, withAccept(r, n.media))
		return
	}
	// The response is made (and an Idempotency-Key's replay stored) as
	// JSON, then framed.
	framer := &eventFramer{ResponseWriter: w}
	g.requests.ServeHTTP(&statusMapper{ResponseWriter: framer}, withAccept(r, mediaJSON))
	framer.end()
}

// serveGet serves a GET request: queries only, answered as JSON.
func (g *guard) serveGet(w http.ResponseWriter, r *http.Request, n negotiation) {
	if err := checkGraphQLGet(r); err != nil {
		if apperr.CodeOf(err) == apperr.MethodNotAllowed {
			w.Header().Set("Allow", "POST")
		}
		g.writeErr(w, r, err)
		return
	}
	media := n.media
	if media == mediaEventStream {
		media = mediaJSON
	}
	// A persisted query's operation is only known to gqlgen, whose GET
	// transport refuses a mutation with a bare 406: answer that in
	// docs/design.md §6's shape too.
	g.requests.ServeHTTP(&getRefusal{statusMapper: statusMapper{ResponseWriter: w}, refuse: func() {
		w.Header().Set("Allow", "POST")
		g.writeErr(w, r, apperr.New(apperr.MethodNotAllowed, "GET runs queries only; send mutation operations with POST"))
	}}, withAccept(r, media))
}

// subscribes reports whether req runs a subscription. A document the
// executor parsed and validated before is looked up rather than parsed,
// and one that does not say "subscription" cannot run one; the rest is
// parsed once, within MaxTokens. A document that does not parse, or whose
// operation is only known to the executor (a persisted query sent by hash
// alone), is not streamed: the executor refuses or runs it as usual.
func (g *guard) subscribes(ctx context.Context, req graphqlRequest) bool {
	if !strings.Contains(req.Query, "subscription") {
		return false
	}
	doc, ok := g.documents.Get(ctx, req.Query)
	if !ok {
		var err error
		if doc, err = parser.ParseQueryWithTokenLimit(&ast.Source{Input: req.Query}, MaxTokens); err != nil {
			return false
		}
	}
	op := doc.Operations.ForName(req.OperationName)
	return op != nil && op.Operation == ast.Subscription
}

// withAccept returns r as the executor should see it: asking for media
// alone, the outcome of negotiate. gqlgen picks its JSON type from the
// first one Accept lists, q-values aside; the response cache keys on
// Accept too.
func withAccept(r *http.Request, media string) *http.Request {
	if v := r.Header.Values("Accept"); len(v) == 1 && v[0] == media {
		return r
	}
	r2 := r.Clone(r.Context())
	r2.Header.Set("Accept", media)
	return r2
}

// decodeGraphQLRequest decodes and checks a POST body. Errors: bad_request,
// validation_failed (text that is not valid Unicode, see checkText).
func decodeGraphQLRequest(raw []byte) (graphqlRequest, error) {
	var req graphqlRequest
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return req, apperr.New(apperr.BadRequest, "the request body must be a JSON object with a query")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if err := dec.Decode(&req); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return req, apperr.New(apperr.BadRequest, "field %q has the wrong type: expected %s", typeErr.Field, typeErr.Type.String())
		}
		return req, apperr.New(apperr.BadRequest, "the request body is not valid JSON")
	}
	if dec.More() {
		return req, apperr.New(apperr.BadRequest, "the request body must hold exactly one JSON object")
	}
	if req.Query == "" && req.Extensions["persistedQuery"] == nil {
		return req, apperr.New(apperr.BadRequest, "the request has no query")
	}
	return req, checkText(trimmed, req.Query)
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
