package live

import (
	"context"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/99designs/gqlgen/graphql"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/middleware"
)

// Transports returns l's transports for the GraphQL executor: WebSocket
// (both subprotocols) and Server-Sent Events, in the order the executor
// must try them (before POST, which would take a Server-Sent Events
// request too). writeErr answers the refusals they make before an
// operation runs (the live connections at their cap, say).
func (l *Live) Transports(writeErr middleware.ErrorWriter) []graphql.Transport {
	t := transport{live: l, writeErr: writeErr}
	return []graphql.Transport{webSocket{t}, sse{t}}
}

// transport is what both live transports hold: the Live they serve and the
// writer of the refusals they answer before an operation runs.
type transport struct {
	live     *Live
	writeErr middleware.ErrorWriter
}

// connect takes one of the replica's live connections for r, or answers
// the refusal (unavailable) and returns false. The caller calls
// t.live.dismiss once the connection ends.
func (t transport) connect(w http.ResponseWriter, r *http.Request) bool {
	if err := t.live.admit(); err != nil {
		t.writeErr(w, r, err)
		return false
	}
	return true
}

// WebSocketRoute labels a WebSocket's request in logs and metrics: its
// operations run concurrently on one request, whose route is set once.
const WebSocketRoute = "graphql:websocket"

// IsWebSocket reports whether r asks to open a WebSocket.
func IsWebSocket(r *http.Request) bool {
	return headerHasToken(r.Header, "Connection", "upgrade") && headerHasToken(r.Header, "Upgrade", "websocket")
}

// headerHasToken reports whether one of header name's comma-separated
// values is token, ignoring case.
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

// CheckOrigin admits a WebSocket opened by a web page only from the
// server's own host or a host matching one of Options.Origins; clients
// that are not browsers send no Origin and are admitted. Credentials are
// never ambient (no cookies: a token in connection_init or the
// Authorization header), so a foreign page could only use a token it
// already holds; the check still keeps other sites from driving a user's
// browser against the API. Errors: forbidden.
func (l *Live) CheckOrigin(r *http.Request) error {
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
	for _, p := range l.opts.Origins {
		if ok, _ := path.Match(strings.ToLower(p), strings.ToLower(u.Host)); ok {
			return nil
		}
	}
	return apperr.New(apperr.Forbidden, "WebSockets from %s are not allowed (see --websocket-origins)", u.Host)
}

// streamRequestKey marks the context of a request the HTTP face routed to
// be streamed: a subscription whose client accepts text/event-stream.
type streamRequestKey struct{}

// WithStreamRequest marks ctx as a request's that must be streamed as
// Server-Sent Events (the SSE transport takes it): the HTTP face found a
// subscription that the client accepts as an event stream. Nothing else
// is ever streamed.
func WithStreamRequest(ctx context.Context) context.Context {
	return context.WithValue(ctx, streamRequestKey{}, true)
}

func isStreamRequest(r *http.Request) bool {
	marked, _ := r.Context().Value(streamRequestKey{}).(bool)
	return marked
}

// streamMarker marks the context of an operation carried by a long-lived
// connection (a WebSocket, a Server-Sent Events stream).
type streamMarker struct{}

// OnStream reports whether ctx is an operation's carried by a long-lived
// connection (a WebSocket, a Server-Sent Events stream): its viewer is as
// old as the connection, and the route of its request is set once.
func OnStream(ctx context.Context) bool { return ctx.Value(streamMarker{}) != nil }

func markStream(ctx context.Context) context.Context {
	return context.WithValue(ctx, streamMarker{}, true)
}
