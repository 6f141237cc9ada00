package live

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/coder/websocket"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/auth"
	"github.com/procsvc/procsvc/internal/middleware"
	"github.com/procsvc/procsvc/internal/textclip"
	"github.com/procsvc/procsvc/internal/viewer"
)

// The WebSocket close codes procsvc uses (docs/api.md, "WebSocket close
// codes"): graphql-transport-ws's own, which the older graphql-ws protocol
// gets too, and the standard 1000, 1001 and 1011.
const (
	CloseNormal          = 1000
	CloseGoingAway       = 1001
	CloseInternal        = 1011
	CloseBadMessage      = 4400
	CloseUnauthorized    = 4401
	CloseForbidden       = 4403
	CloseInitTimeout     = 4408
	CloseDuplicateID     = 4409
	CloseTooManyRequests = 4429
)

// The WebSocket subprotocols: graphql-transport-ws (the graphql-ws
// library's), and the older graphql-ws (Apollo's
// subscriptions-transport-ws), also assumed when a client names none.
const (
	protocolTransportWS = "graphql-transport-ws"
	protocolLegacy      = "graphql-ws"
)

// maxOperationID bounds an operation id, in bytes.
const maxOperationID = 128

// webSocket is the WebSocket transport, both subprotocols, over
// coder/websocket. Every write, one at a time, is bounded by
// Options.WriteTimeout (waiting for the one before included); every
// goroutine a socket starts ends
// before its handler returns; a panic in an operation ends that operation
// with an internal error, anywhere else the socket (1011).
type webSocket struct{ transport }

var _ graphql.Transport = webSocket{}

func (t webSocket) Supports(r *http.Request) bool { return IsWebSocket(r) }

func (t webSocket) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	l := t.live
	if !t.connect(w, r) {
		return
	}
	defer l.dismiss()
	// Until connection_init authenticates it, a socket is anonymous: one
	// client address holds only a few such (each for initTimeout at most),
	// lest anonymous sockets take every live connection.
	release, err := l.waitInit(r.Context())
	if err != nil {
		t.writeErr(w, r, err)
		return
	}
	defer release()
	// Accepted through a writer whose hijacked connection coalesces the
	// messages a batch writes (websocket_coalesce.go); compression stays
	// off (the library's default), so each message is framed as it is.
	cw := &coalescingWriter{ResponseWriter: w, timeout: l.opts.WriteTimeout}
	conn, err := websocket.Accept(cw, r, &websocket.AcceptOptions{
		Subprotocols:   []string{protocolTransportWS, protocolLegacy},
		OriginPatterns: l.opts.Origins,
	})
	if err != nil {
		return // Accept answered the request
	}
	conn.SetReadLimit(middleware.MaxBodyBytes)
	ctx, cancel := context.WithCancel(markStream(r.Context()))
	c := &socket{
		live: l, exec: exec, conn: conn, out: cw.out, req: r, ctx: ctx, cancel: cancel, initialisedHook: release,
		legacy: conn.Subprotocol() != protocolTransportWS,
		ops:    map[string]*operation{},
	}
	c.serve()
}

// socket is one WebSocket connection.
type socket struct {
	live *Live
	exec graphql.GraphExecutor
	conn *websocket.Conn
	// out is conn's connection as the library writes to it: a batch of
	// messages corks it, to go out in one write.
	out    *coalescer
	req    *http.Request
	legacy bool
	// ctx ends when the socket shuts down; every operation's context
	// derives from it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed sync.Once
	// closing is closed once the close handshake shut started is over
	// (nil when shut never ran); set inside closed.
	closing chan struct{}

	// writes is the context writes are bounded by: its deadline is the
	// write timeout from when it was made, and a new one is made once less
	// than half is left, so each write has at least half the timeout (a
	// context and its timer per write cost a tenth of a delivery). The one
	// before stays valid for the writes under way, and is cancelled when
	// the next replaces it (by then expired) or the socket closes.
	writesMu                   sync.Mutex
	writes                     context.Context
	writesDeadline             time.Time
	cancelWrites, cancelBefore context.CancelFunc

	// Set by connection_init, in the reading goroutine, before any
	// operation starts.
	initialised atomic.Bool
	// initialisedHook frees the socket's place among anonymous ones.
	initialisedHook func()
	credential      string
	viewer          *viewer.Viewer
	// base is ctx with the connection's viewer and rate limit (each
	// operation is charged under it).
	base context.Context

	mu      sync.Mutex
	ops     map[string]*operation
	running int // queries and mutations
}

// operation is one operation a socket runs, under its client's id.
type operation struct{ cancel context.CancelFunc }

// wsMessage is a message of either subprotocol.
type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

func (c *socket) serve() {
	c.wg.Add(1)
	go c.guard("keep-alive", c.keepAlive)
	initTimer := time.AfterFunc(c.live.opts.InitTimeout, func() {
		if !c.initialised.Load() {
			c.shut(CloseInitTimeout, "Connection initialisation timeout")
		}
	})
	c.guard("reader", c.readLoop)
	initTimer.Stop()
	c.cancel()
	c.wg.Wait()
	// Closed by now, or never to be: a shut racing this (the init timer
	// firing as the client left) either ran first or finds the Once done.
	c.closed.Do(func() {})
	if c.closing != nil {
		<-c.closing
	}
	_ = c.conn.CloseNow()
	c.endWrites()
	if c.initialised.Load() {
		c.live.closeSocket(c.viewer.Credential())
	}
}

// guard runs fn, containing a panic to this socket: logged, and the socket
// closed with 1011.
func (c *socket) guard(what string, fn func()) {
	defer func() {
		if p := recover(); p != nil {
			c.live.opts.Log.ErrorContext(c.ctx, "panic in a WebSocket's "+what, "request_id", middleware.RequestID(c.ctx), "panic", fmt.Sprint(p))
			c.shut(CloseInternal, "internal error")
		}
	}()
	fn()
}

// shut closes the socket with code: every operation ends, and the close
// handshake runs (bounded by coder/websocket's own timeouts) while the
// reader takes the peer's answer.
func (c *socket) shut(code websocket.StatusCode, reason string) {
	c.closed.Do(func() {
		c.cancel()
		reason = closeReason(reason)
		c.closing = make(chan struct{})
		go func() {
			defer close(c.closing)
			_ = c.conn.Close(code, reason)
		}()
	})
}

// readLoop reads and handles the client's messages until the connection
// closes.
func (c *socket) readLoop() {
	for {
		typ, data, err := c.conn.Read(context.Background())
		if err != nil {
			return
		}
		if typ != websocket.MessageText {
			c.shut(CloseBadMessage, "Invalid message: expected a text message")
			continue
		}
		c.handle(data)
	}
}

// write writes msg within the write timeout: a client that stops reading
// is disconnected. Senders write one at a time (coder/websocket's lock,
// waited for within the same timeout), each from its own goroutine: a
// subscription's events go out from the goroutine that took them, with no
// hand-over to a writer.
func (c *socket) write(msg message) error {
	ctx := c.writeContext()
	if msg.next == nil {
		return c.conn.Write(ctx, websocket.MessageText, msg.raw)
	}
	if len(msg.next) > maxPooledMessage {
		// A large rendering is written as it is, in the message's frames,
		// never copied: each subscriber writing it would hold a copy.
		return c.writeNext(ctx, msg)
	}
	// {"id":…,"type":"next","payload":…}: the group's rendering copied
	// into a buffer of this write's, never encoded again.
	buf := messageBuffers.Get().(*[]byte)
	b := append((*buf)[:0], nextOpen...)
	b = append(b, msg.raw...)
	b = append(b, `,"type":"`...)
	b = append(b, msg.nextType...)
	b = append(b, `","payload":`...)
	b = append(b, msg.next...)
	b = append(b, '}')
	err := c.conn.Write(ctx, websocket.MessageText, b)
	if cap(b) <= maxPooledMessage {
		*buf = b
		messageBuffers.Put(buf)
	}
	return err
}

// writeNext writes a next message through the connection's message
// writer: its parts one after another, the rendering not copied.
func (c *socket) writeNext(ctx context.Context, msg message) error {
	w, err := c.conn.Writer(ctx, websocket.MessageText)
	if err != nil {
		return err
	}
	for _, part := range [][]byte{nextOpen, msg.raw, []byte(`,"type":"`), []byte(msg.nextType), []byte(`","payload":`), msg.next, []byte(`}`)} {
		if _, err := w.Write(part); err != nil {
			_ = w.Close()
			return err
		}
	}
	return w.Close()
}

// writeContext returns the context a write is bounded by (see writes).
func (c *socket) writeContext() context.Context {
	c.writesMu.Lock()
	defer c.writesMu.Unlock()
	timeout := c.live.opts.WriteTimeout
	if now := time.Now(); c.writes == nil || c.writesDeadline.Sub(now) < timeout/2 {
		if c.cancelBefore != nil {
			c.cancelBefore()
		}
		c.cancelBefore = c.cancelWrites
		c.writesDeadline = now.Add(timeout)
		c.writes, c.cancelWrites = context.WithDeadline(context.Background(), c.writesDeadline)
	}
	return c.writes
}

// endWrites cancels the write contexts, once nothing writes.
func (c *socket) endWrites() {
	c.writesMu.Lock()
	defer c.writesMu.Unlock()
	for _, cancel := range []context.CancelFunc{c.cancelBefore, c.cancelWrites} {
		if cancel != nil {
			cancel()
		}
	}
}

// messageBuffers hold next messages while they are written; one over
// maxPooledMessage is left to the collector.
var messageBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

const maxPooledMessage = 64 << 10

// message is one message to write: raw as it is, or (with next set) a
// next message of the operation whose quoted id is raw, carrying the
// rendering next.
type message struct {
	raw      []byte
	next     []byte
	nextType string
}

var nextOpen = []byte(`{"id":`)

// keepAlive pings the client every KeepAlive (a WebSocket ping, which
// browsers answer by themselves, and graphql-ws's "ka" message on that
// protocol) and closes a connection whose pong does not come within the
// interval: a client that went away without closing is found out.
func (c *socket) keepAlive() {
	defer c.wg.Done()
	tick := time.NewTicker(c.live.opts.KeepAlive)
	defer tick.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-tick.C:
		}
		if c.legacy && c.initialised.Load() && !c.send(message{raw: legacyKeepAlive}) {
			return
		}
		ctx, cancel := context.WithTimeout(c.ctx, c.live.opts.KeepAlive)
		err := c.conn.Ping(ctx)
		cancel()
		if err != nil {
			if c.ctx.Err() == nil {
				c.cancel()
				_ = c.conn.CloseNow()
			}
			return
		}
	}
}

var legacyKeepAlive = []byte(`{"type":"ka"}`)

// send writes msg, false once the socket is shutting down or the write
// failed (the connection is then closed: its client stopped reading).
func (c *socket) send(msg message) bool {
	if c.ctx.Err() != nil {
		return false
	}
	if err := c.write(msg); err != nil {
		c.failed()
		return false
	}
	return true
}

// sendNext writes the events of batch as next messages of the operation
// whose quoted id is quoted, in order, in one write to the connection
// (beyond maxCoalesced, in as few as fit): each is a message of its own,
// framed by the library, but a system call is most of what a delivery
// costs. False as send's.
func (c *socket) sendNext(quoted []byte, nextType string, batch []*rendered) bool {
	if c.ctx.Err() != nil {
		return false
	}
	if len(batch) > 1 {
		c.out.cork()
	}
	var err error
	for _, r := range batch {
		if err = c.write(message{raw: quoted, next: r.payload, nextType: nextType}); err != nil {
			break
		}
	}
	if len(batch) > 1 {
		// Uncorked whatever happened: what other senders flushed meanwhile
		// (a close frame, say) must not wait for the next batch.
		if uerr := c.out.uncork(); err == nil {
			err = uerr
		}
	}
	if err != nil {
		c.failed()
		return false
	}
	return true
}

// failed closes the connection after a write failed: its client stopped
// reading, or it is gone.
func (c *socket) failed() {
	c.cancel()
	_ = c.conn.CloseNow()
}

// handle answers one message of the client, as graphql-transport-ws says:
// an unparsable or unknown message closes the socket with 4400, an
// operation before connection_init with 4401, a second connection_init
// with 4429, an operation id already running with 4409.
func (c *socket) handle(data []byte) {
	var m wsMessage
	if err := json.Unmarshal(data, &m); err != nil || m.Type == "" {
		c.shut(CloseBadMessage, "Invalid message: expected a JSON object with a type")
		return
	}
	switch m.Type {
	case "connection_init":
		if c.initialised.Load() {
			c.shut(CloseTooManyRequests, "Too many initialisation requests")
			return
		}
		c.init(m.Payload)
	case "ping":
		if !c.legacy {
			c.send(message{raw: frame("pong", "", m.Payload)})
		}
	case "pong":
	case c.subscribeType():
		if !c.initialised.Load() {
			c.shut(CloseUnauthorized, "Unauthorized")
			return
		}
		c.subscribe(m)
	case c.stopType():
		c.stop(m.ID)
	case "connection_terminate":
		if c.legacy {
			c.shut(CloseNormal, "terminated")
			return
		}
		c.shut(CloseBadMessage, fmt.Sprintf("Invalid message type %q", m.Type))
	default:
		c.shut(CloseBadMessage, fmt.Sprintf("Invalid message type %q", textclip.Bytes(m.Type, 40)))
	}
}

func (c *socket) subscribeType() string {
	if c.legacy {
		return "start"
	}
	return "subscribe"
}

func (c *socket) stopType() string {
	if c.legacy {
		return "stop"
	}
	return "complete"
}

func (c *socket) nextType() string {
	if c.legacy {
		return "data"
	}
	return "next"
}

// maxCloseReason is the most a close reason may take: a close frame's
// payload is at most 125 bytes, 2 of them the code (RFC 6455 §5.5).
const maxCloseReason = 123

// closeReason makes reason a valid close reason: UTF-8, which RFC 6455
// §5.5.1 requires and browsers fail the connection without, within
// maxCloseReason bytes, which coder/websocket refuses to send beyond.
func closeReason(reason string) string {
	return textclip.Prefix(strings.ToValidUTF8(reason, "\uFFFD"), maxCloseReason)
}

// forbidden is the close reason of a socket whose credential err refused:
// its code, and its reason if it has one ("Forbidden: disconnected
// (token_revoked)"), so that a client learns on a WebSocket what the body
// of an HTTP request would say.
func forbidden(err error) string {
	ae := apperr.From(err)
	text := "Forbidden: " + string(ae.Code)
	if ae.Reason != "" {
		text += " (" + string(ae.Reason) + ")"
	}
	return text
}

// init authenticates connection_init: the payload's authorization
// ("Bearer <token>", as browsers cannot set headers on a WebSocket), else
// the upgrade request's Authorization header, in the payload's workspace
// (else the header's, auth.WorkspaceHeader); then charges the
// connection's rate limit and takes one of the token's WebSocket slots.
// A refusal closes the socket: 4403 for the credential, 4429 for the rate
// limit or the token's WebSockets.
func (c *socket) init(payload json.RawMessage) {
	l := c.live
	credential := c.req.Header.Get("Authorization")
	var p map[string]any
	if len(payload) > 0 && !bytes.Equal(payload, []byte("null")) {
		if err := json.Unmarshal(payload, &p); err != nil {
			c.shut(CloseBadMessage, "Invalid message: connection_init's payload must be an object")
			return
		}
	}
	for _, name := range []string{"authorization", "Authorization"} {
		if s, ok := p[name].(string); ok && s != "" {
			credential = s
			break
		}
	}
	// The workspace a person of several acts in, with an identity
	// provider's token (docs/api.md, "Identity provider tokens"): the
	// payload's workspace, else the upgrade request's header. Kept in the
	// connection's context, so that every operation's re-check of the
	// credential acts in the same workspace.
	choice := c.req.Header.Get(auth.WorkspaceHeader)
	if s, ok := p["workspace"].(string); ok && s != "" {
		choice = s
	}
	ctx := auth.WithWorkspaceChoice(c.ctx, choice)
	v, err := l.opts.Authenticate(ctx, credential)
	if err != nil {
		if c.legacy {
			c.writeNow(message{raw: frame("connection_error", "", mustMarshal(l.present(c.ctx, err)))})
		}
		if apperr.CodeOf(err) == apperr.RateLimited {
			c.shut(CloseTooManyRequests, "Too many requests: "+string(apperr.RateLimited))
			return
		}
		c.shut(CloseForbidden, forbidden(err))
		return
	}
	base, err := l.opts.Limiter.Connection(ctx, v)
	if err != nil {
		c.shut(CloseTooManyRequests, "Too many requests: "+string(apperr.RateLimited))
		return
	}
	if err := l.openSocket(v.Credential()); err != nil {
		c.shut(CloseTooManyRequests, "Too many WebSockets for this token")
		return
	}
	c.credential, c.viewer, c.base = credential, v, base
	c.initialised.Store(true)
	c.initialisedHook()
	c.send(message{raw: frame("connection_ack", "", nil)})
	if c.legacy {
		c.send(message{raw: legacyKeepAlive})
	}
}

// writeNow writes msg at once, before the socket closes (a message the
// close must not overtake).
func (c *socket) writeNow(msg message) { _ = c.write(msg) }

// frame is a message of type, for operation id (none when ""), with
// payload (none when nil).
func frame(typ, id string, payload []byte) []byte {
	m := wsMessage{ID: id, Type: typ, Payload: payload}
	return mustMarshal(m)
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(`{"errors":[{"message":"internal error","extensions":{"code":"internal"}}]}`)
	}
	return b
}
