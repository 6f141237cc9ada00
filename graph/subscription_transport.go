package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	coderws "github.com/coder/websocket"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/middleware"
	"github.com/procsvc/procsvc/internal/viewer"
)

// The WebSocket close codes procsvc uses, beyond gqlgen's own (1000 normal,
// 1002 protocol error): graphql-transport-ws's 4403 for a credential
// refused at connection_init or later revoked, 4429 for a connection
// refused by the rate limit, and 1001 when the server shuts down.
const (
	CloseForbidden       = 4403
	CloseTooManyRequests = 4429
	CloseGoingAway       = 1001
)

// webSocketRoute labels a WebSocket's request in logs and metrics.
const webSocketRoute = "graphql:websocket"

// initTimeout bounds the wait for connection_init.
const initTimeout = 10 * time.Second

// IsStream reports whether r opens a long-lived stream of /graphql: a
// WebSocket upgrade, or a request for Server-Sent Events. Such requests
// outlive any request deadline; their work is bounded per event instead.
func IsStream(r *http.Request) bool { return isWebSocket(r) || wantsEventStream(r) }

func isWebSocket(r *http.Request) bool {
	return headerHasToken(r.Header, "Connection", "upgrade") && headerHasToken(r.Header, "Upgrade", "websocket")
}

func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

func wantsEventStream(r *http.Request) bool {
	if r.Method != http.MethodPost {
		return false
	}
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "text/event-stream" {
				return true
			}
		}
	}
	return false
}

// checkOrigin admits a WebSocket opened by a web page only from the
// server's own host or a host matching one of patterns; clients that are
// not browsers send no Origin and are admitted. Credentials are never
// ambient (no cookies: a token in connection_init or the Authorization
// header), so a foreign page could only use a token it already holds; the
// check still keeps other sites from driving a user's browser against the
// API. Errors: forbidden.
func checkOrigin(r *http.Request, patterns []string) error {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return apperr.New(apperr.Forbidden, "the Origin header is not a URL")
	}
	if strings.EqualFold(u.Host, r.Host) {
		return nil
	}
	for _, p := range patterns {
		if ok, _ := path.Match(strings.ToLower(p), strings.ToLower(u.Host)); ok {
			return nil
		}
	}
	return apperr.New(apperr.Forbidden, "WebSockets from %s are not allowed (see --websocket-origins)", u.Host)
}

// conn is what a subscription knows of the connection carrying it: the
// credential to re-authenticate, and how to end it with an error.
type conn struct {
	// credential is the Authorization value the connection authenticated
	// with.
	credential string

	mu sync.Mutex
	// ws is the WebSocket (nil for Server-Sent Events).
	ws transport.WebsocketConn
	// sse is the Server-Sent Events request's stream.
	sse *sseState
}

type connKey struct{}

func withConn(ctx context.Context, c *conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// connFrom returns the stream of ctx's operation, nil for a plain HTTP
// request.
func connFrom(ctx context.Context) *conn {
	c, _ := ctx.Value(connKey{}).(*conn)
	return c
}

// started records that the operation's subscription is streaming.
func (c *conn) started() {
	if c.sse != nil {
		c.sse.mu.Lock()
		c.sse.started = true
		c.sse.mu.Unlock()
	}
}

// end ends a subscription with err, on the connection carrying it. A
// credential no longer valid closes a whole WebSocket (4403), as the
// server shutting down does (1001); other errors end just the subscription
// with an error message. On Server-Sent Events the error is the last event.
func (c *conn) end(ctx context.Context, l *Live, err error) {
	c.mu.Lock()
	ws, sse := c.ws, c.sse
	c.mu.Unlock()
	switch {
	case ws != nil:
		switch {
		case err == errClosing:
			_ = ws.WriteClose(CloseGoingAway, "server shutting down")
		case apperr.CodeOf(err) == apperr.Disconnected || apperr.CodeOf(err) == apperr.Unauthenticated:
			_ = ws.WriteClose(CloseForbidden, "Forbidden: "+string(apperr.CodeOf(err)))
		default:
			transport.AddSubscriptionError(ctx, l.present(ctx, err))
		}
	case sse != nil:
		sse.mu.Lock()
		sse.err = l.present(ctx, err)
		sse.mu.Unlock()
	}
}

// wsImplementation accepts WebSockets with coder/websocket (gqlgen's
// default) and hands each to the conn of its request.
type wsImplementation struct{ origins []string }

func (i wsImplementation) Accept(w http.ResponseWriter, r *http.Request, opts transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	impl := transport.CoderWebsocketImplementation{AcceptOptions: coderws.AcceptOptions{OriginPatterns: i.origins}}
	ws, err := impl.Accept(w, r, opts)
	if err != nil {
		return nil, err
	}
	if c := connFrom(r.Context()); c != nil {
		c.mu.Lock()
		c.ws = ws
		c.mu.Unlock()
	}
	return ws, nil
}

// websocket is the graphql-transport-ws transport (and the older graphql-ws
// protocol, for old clients).
func (l *Live) websocket() transport.Websocket {
	return transport.Websocket{
		Implementation:        wsImplementation{origins: l.opts.Origins},
		InitFunc:              l.initWebSocket,
		InitTimeout:           initTimeout,
		KeepAlivePingInterval: l.opts.KeepAlive,
		PingPongInterval:      l.opts.KeepAlive,
		PayloadReadLimit:      ptr(int64(middleware.MaxBodyBytes)),
	}
}

func ptr[T any](v T) *T { return &v }

// initWebSocket authenticates connection_init: the payload's authorization
// ("Bearer <token>", as browsers cannot set headers), else the upgrade
// request's Authorization header; then charges the connection's rate
// limit. A refusal closes the socket: 4403 for the credential, 4429 for
// the rate limit.
func (l *Live) initWebSocket(ctx context.Context, p transport.InitPayload) (context.Context, *transport.InitPayload, error) {
	c := connFrom(ctx)
	credential := p.Authorization()
	if credential == "" && c != nil {
		credential = c.credential
	}
	v, err := l.opts.Authenticate(ctx, credential)
	if err != nil {
		return refuse(ctx, CloseForbidden, "Forbidden: "+string(apperr.CodeOf(err))), nil, err
	}
	ctx, err = l.opts.Limiter.Connection(ctx, v)
	if err != nil {
		return refuse(ctx, CloseTooManyRequests, "Too many requests: "+string(apperr.RateLimited)), nil, err
	}
	if c != nil {
		c.credential = credential
	}
	return viewer.NewContext(ctx, v), nil, nil
}

func refuse(ctx context.Context, code int, reason string) context.Context {
	return transport.AppendCloseReason(transport.WithWebsocketCloseCode(ctx, code), reason)
}

// aroundWebSocketOperation re-authenticates every operation a WebSocket
// carries, as every HTTP request is: a token revoked since connection_init
// runs nothing more, and its connection is closed (4403).
func (l *Live) aroundWebSocketOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	c := connFrom(ctx)
	if c == nil || c.sse != nil {
		return next(ctx)
	}
	v, err := l.reauthenticate(ctx, c)
	if err != nil {
		c.end(ctx, l, err)
		return graphql.OneShot(&graphql.Response{Errors: gqlerror.List{l.present(ctx, err)}})
	}
	return next(viewer.NewContext(ctx, v))
}

// freshLoaders returns ctx with dataloaders of its own: each delivered
// event is rendered with nothing cached from an earlier one.
func (l *Live) freshLoaders(ctx context.Context) context.Context {
	fresh := ctx
	l.opts.Loaders(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { fresh = r.Context() })).
		ServeHTTP(nil, (&http.Request{}).WithContext(ctx))
	return fresh
}

// sseState is one Server-Sent Events request's subscription.
type sseState struct {
	mu      sync.Mutex
	started bool
	err     *gqlerror.Error
}

// sse is the Server-Sent Events transport (GraphQL over SSE, "distinct
// connections" mode): a POST with Accept: text/event-stream. Unlike
// gqlgen's, it answers a request refused before its stream starts (the
// document, the filter, the subscription cap) with an ordinary error body
// and status, and lifts the server's read and write timeouts off the
// stream.
type sse struct{ live *Live }

var _ graphql.Transport = sse{}

func (t sse) Supports(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return wantsEventStream(r) && err == nil && mt == "application/json"
}

func (t sse) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	start := graphql.Now()
	state := &sseState{}
	ctx := withConn(r.Context(), &conn{credential: r.Header.Get("Authorization"), sse: state})
	params := &graphql.RawParams{Headers: r.Header}
	// The transport guard has read and checked the body.
	if err := json.NewDecoder(r.Body).Decode(params); err != nil {
		writeErrors(w, exec.DispatchError(ctx, gqlerror.List{{Message: "the request body is not valid JSON", Extensions: map[string]any{"code": string(apperr.BadRequest)}}}))
		return
	}
	params.ReadTime = graphql.TraceTiming{Start: start, End: graphql.Now()}
	oc, errs := exec.CreateOperationContext(ctx, params)
	if errs != nil {
		writeErrors(w, exec.DispatchError(graphql.WithOperationContext(ctx, oc), errs))
		return
	}
	ctx = graphql.WithOperationContext(ctx, oc)
	responses, ctx := exec.DispatchOperation(ctx, oc)
	state.mu.Lock()
	started := state.started
	state.mu.Unlock()
	if oc.Operation.Operation == ast.Subscription && !started {
		// Refused before a stream began: the response is its errors.
		if resp := responses(ctx); resp != nil && len(resp.Errors) > 0 {
			writeErrors(w, resp)
			return
		}
	}

	rc := http.NewResponseController(w)
	// The stream outlives the server's read and write timeouts, which are
	// meant for ordinary requests; keep-alive comments keep it moving.
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	var mu sync.Mutex
	write := func(s string) bool {
		mu.Lock()
		defer mu.Unlock()
		if _, err := io.WriteString(w, s); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write(":\n\n") {
		return
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(t.live.opts.KeepAlive)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				write(": ping\n\n")
			}
		}
	}()
	for {
		resp := responses(ctx)
		if resp == nil {
			break
		}
		if !write(sseEvent(resp)) {
			return
		}
	}
	state.mu.Lock()
	endErr := state.err
	state.mu.Unlock()
	if endErr != nil {
		write(sseEvent(&graphql.Response{Errors: gqlerror.List{endErr}}))
	}
	write("event: complete\ndata:\n\n")
}

func sseEvent(resp *graphql.Response) string {
	b, err := json.Marshal(resp)
	if err != nil {
		b = []byte(`{"errors":[{"message":"internal error","extensions":{"code":"internal"}}]}`)
	}
	return fmt.Sprintf("event: next\ndata: %s\n\n", b)
}

// writeErrors answers a request refused before it executed: its errors
// (already presented, with their codes) and the status of the first one's
// code, as POST answers it.
func writeErrors(w http.ResponseWriter, resp *graphql.Response) {
	code := apperr.ValidationFailed
	if len(resp.Errors) > 0 {
		if c, ok := resp.Errors[0].Extensions["code"].(string); ok && apperr.Known(apperr.Code(c)) {
			code = apperr.Code(c)
		}
	}
	middleware.WriteErrorJSON(w, code, map[string]any{"errors": resp.Errors})
}
