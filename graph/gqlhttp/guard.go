package gqlhttp

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/procsvc/procsvc/graph"
	"github.com/procsvc/procsvc/graph/gqlrequest"
	"github.com/procsvc/procsvc/graph/live"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/consistency"
	"github.com/procsvc/procsvc/internal/metrics"
	"github.com/procsvc/procsvc/internal/middleware"
	"github.com/procsvc/procsvc/internal/textclip"
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
// then mw's middleware, then the executor of NewExecutor, which keeps its
// documents in docs. With live it also serves subscriptions: WebSockets
// (which authenticate in connection_init, so they skip mw) and Server-Sent
// Events (through mw.Streams).
func NewHandler(r *graph.Resolver, log *slog.Logger, m *metrics.Metrics, mw Middleware, lv *live.Live, docs *Documents) http.Handler {
	writeErr := graphqlError(log)
	exec := NewExecutor(r, log, m, lv, docs)
	g := &guard{writeErr: writeErr, documents: docs.Parsed(), requests: mw.Requests(writeErr)(exec)}
	g.authenticated = mw.Authenticate(writeErr)(http.HandlerFunc(g.serveAuthenticated))
	if lv != nil {
		g.streams = mw.Streams(writeErr)(exec)
		g.sockets = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := lv.CheckOrigin(r); err != nil {
				writeErr(w, r, err)
				return
			}
			middleware.Info(r.Context()).Route = live.WebSocketRoute
			exec.ServeHTTP(w, r)
		})
	}
	return g
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
//     parameters are read and checked. A POST's request, decoded once, is
//     handed on in the context (gqlrequest.FromContext): its
//     Idempotency-Key fingerprint is made of it.
//  4. A subscription whose client accepts text/event-stream is streamed
//     (streams); every other request, queries and mutations whatever
//     their Accept header, goes through requests and is answered in the
//     negotiated media type (negotiate): JSON, or one Server-Sent Event
//     (live.EventFramer).
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
	if g.sockets != nil && live.IsWebSocket(r) {
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
	req, err := gqlrequest.Decode(raw)
	if err == nil {
		err = g.checkOperationName(r.Context(), req)
	}
	if err != nil {
		g.writeErr(w, r, err)
		return
	}
	// gqlgen's POST transport reads the body again.
	r.Body = io.NopCloser(bytes.NewReader(raw))
	r.ContentLength = int64(len(raw))
	r = r.WithContext(gqlrequest.NewContext(r.Context(), req))
	if g.streams != nil && n.eventStream && g.subscribes(r.Context(), req) {
		// A stream outlives the request deadline; its work is bounded
		// per event instead.
		ctx, cancel := middleware.WithoutDeadline(r.Context())
		defer cancel()
		g.streams.ServeHTTP(&statusMapper{ResponseWriter: w}, r.WithContext(live.WithStreamRequest(ctx)))
		return
	}
	if g.onlyQueries(r.Context(), req) {
		r = r.WithContext(consistency.RouteToStandby(r.Context()))
	}
	if n.media != mediaEventStream {
		g.requests.ServeHTTP(&statusMapper{ResponseWriter: w}, withAccept(r, n.media))
		return
	}
	// The response is made (and an Idempotency-Key's replay stored) as
	// JSON, then framed.
	framer := &live.EventFramer{ResponseWriter: w}
	g.requests.ServeHTTP(&statusMapper{ResponseWriter: framer}, withAccept(r, mediaJSON))
	framer.End()
}

// serveGet serves a GET request: queries only, answered as JSON.
func (g *guard) serveGet(w http.ResponseWriter, r *http.Request, n negotiation) {
	req, err := g.checkGet(r)
	if err != nil {
		if apperr.CodeOf(err) == apperr.MethodNotAllowed {
			w.Header().Set("Allow", "POST")
		}
		g.writeErr(w, r, err)
		return
	}
	r = r.WithContext(gqlrequest.NewContext(r.Context(), req))
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

// onlyQueries reports whether req runs a query: its reads may then go to
// a standby (internal/consistency). A document that says neither
// "mutation" nor "subscription" runs none, without a parse; one whose
// operation only the executor knows (a persisted query) counts as a write.
func (g *guard) onlyQueries(ctx context.Context, req *gqlrequest.Request) bool {
	if req.Query == "" {
		return false
	}
	if !strings.Contains(req.Query, "mutation") && !strings.Contains(req.Query, "subscription") {
		return true
	}
	return g.operation(ctx, req) == ast.Query
}

// subscribes reports whether req runs a subscription. A document that
// does not say "subscription" cannot run one. A document that does not
// parse, or whose operation is only known to the executor (a persisted
// query sent by hash alone), is not streamed: the executor refuses or runs
// it as usual.
func (g *guard) subscribes(ctx context.Context, req *gqlrequest.Request) bool {
	return strings.Contains(req.Query, "subscription") && g.operation(ctx, req) == ast.Subscription
}

// operation is the kind of operation req runs: "" when its document does
// not parse or names no such operation.
func (g *guard) operation(ctx context.Context, req *gqlrequest.Request) ast.Operation {
	doc := g.document(ctx, req.Query)
	if doc == nil {
		return ""
	}
	if op := doc.Operations.ForName(req.OperationName); op != nil {
		return op.Operation
	}
	return ""
}

// maxNamedOperations is how many of a document's operations a refusal of
// its operationName lists.
const maxNamedOperations = 10

// checkOperationName refuses a request that does not say which of its
// document's operations to run, naming them: gqlgen answered a document of
// two operations without operationName with "operation  not found", which
// tells a newcomer neither what is missing nor what to write. A document of
// fewer than two operation keywords holds one operation at most, and is not
// looked at (a persisted query, sent by hash, neither).
func (g *guard) checkOperationName(ctx context.Context, req *gqlrequest.Request) error {
	if req.Query == "" || req.OperationName == "" && strings.Count(req.Query, "query")+strings.Count(req.Query, "mutation")+strings.Count(req.Query, "subscription") < 2 {
		return nil
	}
	doc := g.document(ctx, req.Query)
	if doc == nil || len(doc.Operations) == 0 || req.OperationName == "" && len(doc.Operations) == 1 ||
		req.OperationName != "" && doc.Operations.ForName(req.OperationName) != nil {
		return nil
	}
	names := make([]string, 0, min(len(doc.Operations), maxNamedOperations))
	for _, op := range doc.Operations[:min(len(doc.Operations), maxNamedOperations)] {
		names = append(names, cmp.Or(op.Name, "(an unnamed operation)"))
	}
	held := strings.Join(names, ", ")
	if more := len(doc.Operations) - len(names); more > 0 {
		held += fmt.Sprintf(" and %d more", more)
	}
	if req.OperationName == "" {
		return apperr.New(apperr.ValidationFailed, "the document holds %d operations (%s): say which to run with operationName", len(doc.Operations), held)
	}
	return apperr.New(apperr.ValidationFailed, "the document has no operation named %q: it holds %s", textclip.Prefix(req.OperationName, 64), held)
}

// document returns query's document, to learn which operation a request
// runs: the executor's, when it parsed and validated query before, else
// parsed here within MaxTokens; nil when it does not parse (the executor
// reports why, or refuses a document over the token limit).
func (g *guard) document(ctx context.Context, query string) *ast.QueryDocument {
	if doc, ok := g.documents.Get(ctx, query); ok {
		return doc
	}
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: query}, MaxTokens)
	if err != nil {
		return nil
	}
	return doc
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

// checkGet decodes and validates a GET request's parameters the way the
// POST body is (gqlrequest.FromQuery), and refuses mutations, which GET
// must not run. It returns the decoded request, which the executor runs.
func (g *guard) checkGet(r *http.Request) (*gqlrequest.Request, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, apperr.New(apperr.BadRequest, "the query string cannot be parsed")
	}
	req, err := gqlrequest.FromQuery(q)
	if err != nil || req.Query == "" {
		return req, err
	}
	if err := g.checkOperationName(r.Context(), req); err != nil {
		return nil, err
	}
	doc := g.document(r.Context(), req.Query)
	if doc == nil {
		return req, nil
	}
	op := doc.Operations.ForName(req.OperationName)
	if op == nil && len(doc.Operations) == 1 {
		op = doc.Operations[0]
	}
	if op != nil && op.Operation != ast.Query {
		return nil, apperr.New(apperr.MethodNotAllowed, "GET runs queries only; send %s operations with POST", op.Operation)
	}
	return req, nil
}
