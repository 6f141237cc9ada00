//go:build unix

package server_test

// Clients that stop reading, on real sockets with small receive buffers:
// they cost the server one write deadline each, then nothing. Before each
// write had a deadline, the Server-Sent Events keep-alive goroutine blocked
// behind a stuck event, outlived its handler and flushed a finished
// response once the client reset: a nil dereference that killed the
// process (4 runs of 4, both databases).

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/procsvc/procsvc/graph/live"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// tinyReceiveBuffer is the receive buffer of a stalled client's socket:
// the kernel's smallest, so that the server's writes block soon.
const tinyReceiveBuffer = 4096

// dialTiny connects to addr with a tiny receive buffer.
func dialTiny(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, tinyReceiveBuffer)
		}); err != nil {
			return err
		}
		return serr
	}}
	return d.DialContext(ctx, network, addr)
}

// stalledSSE opens a subscription over Server-Sent Events on a socket with
// a tiny receive buffer, reads the response's headers, and then reads no
// more. reset ends it with a TCP reset.
func stalledSSE(t *testing.T, s *liveServer, token, query string) (reset func()) {
	t.Helper()
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := dialTiny(context.Background(), "tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	body := string(mustJSON(map[string]any{"query": query}))
	fmt.Fprintf(conn, "POST /graphql HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\n"+
		"Authorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s", u.Host, token, len(body), body)
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 512), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("subscribe: %d", resp.StatusCode)
	}
	reset = func() {
		_ = conn.(*net.TCPConn).SetLinger(0)
		_ = conn.Close()
	}
	t.Cleanup(reset)
	return reset
}

// stalledWS opens a subscription over graphql-transport-ws on a socket
// with a tiny receive buffer and then reads nothing, not even pings.
func stalledWS(t *testing.T, s *liveServer, token, query string) (reset func()) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DialContext: dialTiny}}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	c, _, err := websocket.Dial(ctx, wsURL(s), &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}
	w := &wsClient{t: t, c: c}
	w.send(wsMsg{Type: "connection_init", Payload: mustJSON(map[string]any{"authorization": "Bearer " + token})})
	w.subscribe("1", query, nil)
	reset = func() { _ = c.CloseNow() }
	t.Cleanup(reset)
	return reset
}

func TestLiveStalledReadersAreCut(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			db, dsn := openDB(t, dialect)
			for _, transport := range []string{"SSE", "WebSocket"} {
				t.Run(transport, func(t *testing.T) {
					// Keep-alives as often as they come, so that one is always
					// waiting behind a stuck write; a long recheck and buffer,
					// so that only the write deadline can cut a stalled reader.
					s := startLive(t, db, liveConfig{dsn: dsn, buffer: 1000, live: live.Options{
						KeepAlive: 5 * time.Millisecond, WriteTimeout: 300 * time.Millisecond, Recheck: time.Hour, MaxPerToken: 20,
					}})
					if transport == "WebSocket" {
						// A WebSocket whose pings go unanswered is cut by the
						// keep-alive: here only the write deadline may.
						s = startLive(t, db, liveConfig{dsn: dsn, buffer: 1000, live: live.Options{
							KeepAlive: time.Hour, WriteTimeout: 300 * time.Millisecond, Recheck: time.Hour, MaxPerToken: 20,
						}})
					}
					ws := s.NewWorkspace(t, "Stalled "+transport, "STL")
					stalledReadersCut(t, s, ws, transport)
				})
			}
		})
	}
}

func stalledReadersCut(t *testing.T, s *liveServer, ws *apitest.Workspace, transport string) {
	const query = `subscription { procedureEvents { kind procedure { name content } } }`
	id := createProcedure(t, s, ws, ws.MemberToken, "Big", strings.Repeat("x", 190_000))
	resets := make([]func(), 10)
	for i := range resets {
		if transport == "SSE" {
			resets[i] = stalledSSE(t, s, ws.ViewToken, query)
		} else {
			resets[i] = stalledWS(t, s, ws.ViewToken, query)
		}
	}
	ready(t, s, len(resets))
	// Forty events of ~190 kB each: far more than the sockets' buffers.
	var slowest time.Duration
	for i := range 40 {
		start := time.Now()
		renameProcedure(t, s, ws.MemberToken, id, fmt.Sprintf("Big %d", i))
		slowest = max(slowest, time.Since(start))
	}
	t.Logf("slowest of 40 writes with %d stalled readers: %s", len(resets), slowest.Round(time.Millisecond))
	// Each stalled subscription is cut, without its client doing anything:
	// by the write deadline, or by the bound on what it may hold queued.
	// An SSE stream is its connection; a WebSocket whose subscription ended
	// on the queue's bound, with the error frame fitting in the socket's
	// buffers, stays open until its keep-alive (an hour here) or its client
	// ends it, holding no subscription.
	waitUntil(t, "every stalled subscription is cut", func() bool {
		st := s.Live.Stats()
		released := st.Connections == 0 || transport == "WebSocket"
		return s.Hub.Subscribers() == 0 && released && st.Subscriptions == 0 && st.Groups == 0
	})
	for _, reset := range resets {
		reset()
	}
	waitUntil(t, "every stalled connection is released", func() bool { return s.Live.Stats().Connections == 0 })
	// The server lives on and serves a new subscriber (over SSE: the SSE
	// run's 5 ms keep-alive would also be a WebSocket's pong deadline).
	st, status, body := postSSE(t, s, ws.ViewToken, query, nil)
	if status != http.StatusOK {
		t.Fatalf("a new subscriber: %d %s", status, body)
	}
	ready(t, s, 1)
	renameProcedure(t, s, ws.MemberToken, id, "After")
	// On PostgreSQL events reach subscribers through LISTEN, so the
	// notification of a rename committed just before this subscription
	// began may still arrive after it: such late events are allowed, as
	// long as "After" follows them.
	for range 41 {
		e := decodeEvent(t, st.next())
		if e.Kind != "UPDATED" || e.Procedure == nil || !strings.HasPrefix(e.Procedure.Name, "Big ") && e.Procedure.Name != "After" {
			t.Fatalf("a new subscriber after the stalled ones: %+v", e)
		}
		if e.Procedure.Name == "After" {
			return
		}
	}
	t.Fatal("a new subscriber after the stalled ones never received the rename to After")
}

// TestLiveSlowSubscriberBytes: a subscriber that stopped reading holds at
// most --subscription-buffer events and 1 MiB (here 256 kB) of their
// renderings: past it, it is ended as too slow, long before its buffer of
// events is full or a write times out.
func TestLiveSlowSubscriberBytes(t *testing.T) {
	db, dsn := openDB(t, "sqlite")
	s := startLive(t, db, liveConfig{dsn: dsn, buffer: 1000, live: live.Options{
		QueueBytes: 256 << 10, WriteTimeout: time.Minute, KeepAlive: time.Hour, Recheck: time.Hour,
	}})
	ws := s.NewWorkspace(t, "Lagging", "LAG")
	id := createProcedure(t, s, ws, ws.MemberToken, "Big", strings.Repeat("x", 150_000))
	stalledSSE(t, s, ws.ViewToken, `subscription { procedureEvents { kind procedure { content } } }`)
	ready(t, s, 1)
	// 9 MB of events: more than the sockets' buffers take, far fewer events
	// than the buffer of 1 000.
	for i := range 60 {
		renameProcedure(t, s, ws.MemberToken, id, fmt.Sprintf("Big %d", i))
	}
	waitUntil(t, "the lagging subscriber is ended", func() bool { return s.Live.Stats().Subscriptions == 0 })
}

// TestLiveAnonymousSockets: WebSockets that have not sent connection_init
// take at most half the live connections, and 256 per client address:
// past either, the upgrade is refused, and authenticated clients still get
// in.
func TestLiveAnonymousSockets(t *testing.T) {
	db, dsn := openDB(t, "sqlite")
	t.Run("HalfTheConnections", func(t *testing.T) {
		s := startLive(t, db, liveConfig{dsn: dsn, live: live.Options{MaxConnections: 4, InitTimeout: time.Minute}})
		ws := s.NewWorkspace(t, "Anonymous", "ANO")
		var anonymous []*websocket.Conn
		for range 2 {
			c, _, err := dialWS(t, s, nil)
			if err != nil {
				t.Fatal(err)
			}
			anonymous = append(anonymous, c)
		}
		if _, resp, err := dialWS(t, s, nil); err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("a third anonymous socket: %v %v", err, resp)
		}
		if _, status, body := postSSE(t, s, ws.ViewToken, subscribeEvents, nil); status != http.StatusOK {
			t.Fatalf("an authenticated stream: %d %s", status, body)
		}
		// A WebSocket is anonymous until its connection_init: one gets in
		// once an anonymous one leaves.
		_ = anonymous[0].CloseNow()
		waitUntil(t, "the anonymous socket is gone", func() bool { return s.Live.Stats().Connections == 2 })
		openWS(t, s, ws.ViewToken)
	})
	t.Run("PerAddress", func(t *testing.T) {
		s := startLive(t, db, liveConfig{dsn: dsn, live: live.Options{MaxConnections: 1000, InitTimeout: time.Minute}})
		for i := range live.MaxAnonymousSocketsPerAddress {
			if _, _, err := dialWS(t, s, nil); err != nil {
				t.Fatalf("anonymous socket %d: %v", i+1, err)
			}
		}
		_, resp, err := dialWS(t, s, nil)
		if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("one more anonymous socket from the address: %v %v", err, resp)
		}
	})
}
