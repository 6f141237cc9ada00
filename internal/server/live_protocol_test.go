package server_test

// The WebSocket protocols as their specifications say, and the bounds on
// what one client may hold open (docs/api.md, "Live updates").

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/procsvc/procsvc/graph/live"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// rawWS is a socket the test drives message by message, of subprotocol.
func rawWS(t *testing.T, s *liveServer, subprotocol string) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	var protocols []string
	if subprotocol != "" {
		protocols = []string{subprotocol}
	}
	c, _, err := websocket.Dial(ctx, wsURL(s), &websocket.DialOptions{Subprotocols: protocols})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	w := &wsClient{t: t, c: c, msgs: make(chan wsMsg, 64), closed: make(chan struct{})}
	go w.read()
	return w
}

func (w *wsClient) sendRaw(b string) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := w.c.Write(ctx, websocket.MessageText, []byte(b)); err != nil {
		w.t.Fatalf("send: %v", err)
	}
}

func initPayload(token string) json.RawMessage {
	return mustJSON(map[string]any{"authorization": "Bearer " + token})
}

func TestLiveWebSocketProtocol(t *testing.T) {
	db, dsn := openDB(t, "sqlite")
	s := startLive(t, db, liveConfig{dsn: dsn, live: live.Options{InitTimeout: 200 * time.Millisecond}})
	ws := s.NewWorkspace(t, "Protocol", "PRO")

	closes := []struct {
		name string
		do   func(w *wsClient)
		want websocket.StatusCode
	}{
		{"InvalidJSON", func(w *wsClient) { w.sendRaw(`{"type":`) }, live.CloseBadMessage},
		{"NoType", func(w *wsClient) { w.sendRaw(`{"id":"1"}`) }, live.CloseBadMessage},
		{"UnknownType", func(w *wsClient) { w.sendRaw(`{"type":"start"}`) }, live.CloseBadMessage},
		{"BinaryMessage", func(w *wsClient) {
			_ = w.c.Write(context.Background(), websocket.MessageBinary, []byte(`{"type":"connection_init"}`))
		}, live.CloseBadMessage},
		{"SubscribeBeforeInit", func(w *wsClient) { w.subscribe("1", subscribeEvents, nil) }, live.CloseUnauthorized},
		{"NoInit", func(w *wsClient) {}, live.CloseInitTimeout},
		{"SecondInit", func(w *wsClient) {
			w.send(wsMsg{Type: "connection_init", Payload: initPayload(ws.ViewToken)})
			if m := w.recv(); m.Type != "connection_ack" {
				t.Fatalf("got %s", m.Type)
			}
			w.send(wsMsg{Type: "connection_init", Payload: initPayload(ws.ViewToken)})
		}, live.CloseTooManyRequests},
		{"DuplicateID", func(w *wsClient) {
			w.send(wsMsg{Type: "connection_init", Payload: initPayload(ws.ViewToken)})
			w.recv()
			w.subscribe("same", subscribeEvents, nil)
			w.subscribe("same", subscribeEvents, nil)
		}, live.CloseDuplicateID},
		{"SubscribeWithoutID", func(w *wsClient) {
			w.send(wsMsg{Type: "connection_init", Payload: initPayload(ws.ViewToken)})
			w.recv()
			w.subscribe("", subscribeEvents, nil)
		}, live.CloseBadMessage},
		{"SubscribeWithoutQuery", func(w *wsClient) {
			w.send(wsMsg{Type: "connection_init", Payload: initPayload(ws.ViewToken)})
			w.recv()
			w.send(wsMsg{ID: "1", Type: "subscribe", Payload: mustJSON(map[string]any{"variables": map[string]any{}})})
		}, live.CloseBadMessage},
	}
	for _, tt := range closes {
		t.Run(tt.name, func(t *testing.T) {
			w := rawWS(t, s, "graphql-transport-ws")
			w.t = t
			tt.do(w)
			if code := w.waitClosed(); code != tt.want {
				t.Fatalf("closed with %d, want %d", code, tt.want)
			}
		})
	}

	t.Run("PingPong", func(t *testing.T) {
		w := rawWS(t, s, "graphql-transport-ws")
		w.sendRaw(`{"type":"ping","payload":{"n":1}}`)
		if m := w.recv(); m.Type != "pong" || string(m.Payload) != `{"n":1}` {
			t.Fatalf("got %s %s, want pong echoing the payload", m.Type, m.Payload)
		}
	})

	t.Run("CompletedIDIsFreeAgain", func(t *testing.T) {
		w := openWS(t, s, ws.ViewToken)
		w.subscribe("a", subscribeEvents, nil)
		ready(t, s, 1)
		w.send(wsMsg{ID: "a", Type: "complete"})
		// The id is free once the completed subscription is gone; the
		// write waits for the new one to be live, or its event could
		// precede it.
		ready(t, s, 0)
		w.subscribe("a", subscribeEvents, nil)
		ready(t, s, 1)
		id := createProcedure(t, s, ws, ws.MemberToken, "Again", "")
		if e := w.next("a"); *e.ProcedureID != id {
			t.Fatalf("event: %+v", e)
		}
		w.send(wsMsg{ID: "a", Type: "complete"})
		ready(t, s, 0)
	})

	t.Run("QueryAndMutation", func(t *testing.T) {
		w := openWS(t, s, ws.MemberToken)
		w.send(wsMsg{ID: "q", Type: "subscribe", Payload: mustJSON(map[string]any{"query": `{ viewer { role } }`})})
		if m := w.recv(); m.ID != "q" || m.Type != "next" || !strings.Contains(string(m.Payload), `"MEMBER"`) {
			t.Fatalf("query: %s %s", m.Type, m.Payload)
		}
		if m := w.recv(); m.ID != "q" || m.Type != "complete" {
			t.Fatalf("after the query: %s", m.Type)
		}
		w.send(wsMsg{ID: "m", Type: "subscribe", Payload: mustJSON(map[string]any{"query": `mutation { createCategory(input: {name: "Over the socket"}) { name } }`})})
		if m := w.recv(); m.ID != "m" || m.Type != "next" || !strings.Contains(string(m.Payload), `"Over the socket"`) {
			t.Fatalf("mutation: %s %s", m.Type, m.Payload)
		}
		if m := w.recv(); m.Type != "complete" {
			t.Fatalf("after the mutation: %s", m.Type)
		}
	})

	t.Run("KeyedMutation", func(t *testing.T) {
		// A mutation sent with extensions.idempotencyKey runs once: its
		// retries, over the socket or as an HTTP POST of the same body with
		// the key as Idempotency-Key, get its first answer.
		w := openWS(t, s, ws.MemberToken)
		const mutation = `mutation { createCategory(input: {name: "Keyed over the socket"}) { id name } }`
		payload := mustJSON(map[string]any{"query": mutation, "extensions": map[string]any{"idempotencyKey": "ws-key-1"}})
		var answers []string
		for _, id := range []string{"k1", "k2"} {
			w.send(wsMsg{ID: id, Type: "subscribe", Payload: payload})
			m := w.recv()
			if m.ID != id || m.Type != "next" || !strings.Contains(string(m.Payload), `"Keyed over the socket"`) {
				t.Fatalf("%s: %s %s", id, m.Type, m.Payload)
			}
			if c := w.recv(); c.Type != "complete" {
				t.Fatalf("%s: %s", id, c.Type)
			}
			answers = append(answers, string(m.Payload))
		}
		if answers[0] != answers[1] {
			t.Fatalf("the retry got another answer:\n%s\n%s", answers[0], answers[1])
		}
		// The body as another client spells it: the same request.
		sent := `{ "variables" : {}, "query" : ` + string(mustJSON(mutation)) + ` }`
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/graphql", strings.NewReader(sent))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+ws.MemberToken)
		req.Header.Set("Idempotency-Key", "ws-key-1")
		resp, err := s.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Idempotent-Replayed") != "true" || string(body) != answers[0] {
			t.Fatalf("over HTTP: %d %q %s", resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), body)
		}
		list := s.GraphQL(t, ws.MemberToken, `{ categories(first: 100) { nodes { name } } }`, nil)
		if n := strings.Count(string(list.Data), "Keyed over the socket"); n != 1 {
			t.Fatalf("%d categories made by one keyed mutation sent three times", n)
		}
		// Another mutation under the same key is refused, and runs nothing.
		w.send(wsMsg{ID: "k3", Type: "subscribe", Payload: mustJSON(map[string]any{"query": `mutation { createCategory(input: {name: "Other"}) { id } }`,
			"extensions": map[string]any{"idempotencyKey": "ws-key-1"}})})
		if code := w.refused("k3"); code != "conflict" {
			t.Fatalf("the key with another mutation: %s", code)
		}
	})

	t.Run("Legacy", func(t *testing.T) {
		w := rawWS(t, s, "graphql-ws")
		w.send(wsMsg{Type: "connection_init", Payload: initPayload(ws.ViewToken)})
		if m := w.recv(); m.Type != "connection_ack" {
			t.Fatalf("got %s", m.Type)
		}
		if m := w.recv(); m.Type != "ka" {
			t.Fatalf("got %s, want ka", m.Type)
		}
		w.send(wsMsg{ID: "1", Type: "start", Payload: mustJSON(map[string]any{"query": subscribeEvents})})
		ready(t, s, 1)
		id := createProcedure(t, s, ws, ws.MemberToken, "Legacy", "")
		m := w.recv()
		for m.Type == "ka" {
			m = w.recv()
		}
		if m.Type != "data" || m.ID != "1" || *decodeEvent(t, m.Payload).ProcedureID != id {
			t.Fatalf("got %s %s, want data", m.Type, m.Payload)
		}
		w.send(wsMsg{ID: "1", Type: "stop"})
		ready(t, s, 0)
		w.send(wsMsg{Type: "connection_terminate"})
		if code := w.waitClosed(); code != live.CloseNormal {
			t.Fatalf("closed with %d", code)
		}
	})
}

// TestLiveSilentPeersAreCut: a client that stops answering pings (its
// network gone) is disconnected within the keep-alive, on either protocol:
// graphql-ws has no pong of its own, so WebSocket pings find it out.
func TestLiveSilentPeersAreCut(t *testing.T) {
	db, dsn := openDB(t, "sqlite")
	s := startLive(t, db, liveConfig{dsn: dsn, live: live.Options{KeepAlive: 100 * time.Millisecond}})
	ws := s.NewWorkspace(t, "Silent", "SIL")
	for _, protocol := range []string{"graphql-transport-ws", "graphql-ws"} {
		t.Run(protocol, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()
			c, _, err := websocket.Dial(ctx, wsURL(s), &websocket.DialOptions{Subprotocols: []string{protocol}})
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseNow()
			// Initialise and subscribe, then never read again: pings go
			// unanswered.
			if err := wsjson.Write(ctx, c, wsMsg{Type: "connection_init", Payload: initPayload(ws.ViewToken)}); err != nil {
				t.Fatal(err)
			}
			typ := "subscribe"
			if protocol == "graphql-ws" {
				typ = "start"
			}
			if err := wsjson.Write(ctx, c, wsMsg{ID: "1", Type: typ, Payload: mustJSON(map[string]any{"query": subscribeEvents})}); err != nil {
				t.Fatal(err)
			}
			ready(t, s, 1)
			waitUntil(t, "the silent peer is disconnected", func() bool {
				return s.Live.Stats().Connections == 0 && s.Live.Stats().Subscriptions == 0 && s.Hub.Subscribers() == 0
			})
		})
	}
}

// TestLiveConnectionBounds: a token holds at most --websockets-per-token
// sockets, subscriptions or not, and a replica at most
// --max-live-connections streams of any kind.
func TestLiveConnectionBounds(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			db, dsn := openDB(t, dialect)
			t.Run("WebSocketsPerToken", func(t *testing.T) {
				s := startLive(t, db, liveConfig{dsn: dsn, live: live.Options{WebSocketsPerToken: 2}})
				ws := s.NewWorkspace(t, "Sockets", "SOC")
				a, b := openWS(t, s, ws.ViewToken), openWS(t, s, ws.ViewToken)
				c := connectWS(t, s, ws.ViewToken)
				if code := c.waitClosed(); code != live.CloseTooManyRequests {
					t.Fatalf("third socket closed with %d, want %d", code, live.CloseTooManyRequests)
				}
				// Another token of the workspace has sockets of its own.
				openWS(t, s, ws.MemberToken)
				// Closing one frees its slot.
				_ = a.c.Close(websocket.StatusNormalClosure, "")
				waitUntil(t, "the closed socket is released", func() bool { return s.Live.Stats().Connections == 2 })
				openWS(t, s, ws.ViewToken)
				_ = b
			})
			t.Run("MaxConnections", func(t *testing.T) {
				s := startLive(t, db, liveConfig{dsn: dsn, live: live.Options{MaxConnections: 2}})
				ws := s.NewWorkspace(t, "Full", "FUL")
				openWS(t, s, ws.ViewToken)
				if _, status, body := postSSE(t, s, ws.ViewToken, subscribeEvents, nil); status != http.StatusOK {
					t.Fatalf("second stream: %d %s", status, body)
				}
				ready(t, s, 1)
				_, resp, err := dialWS(t, s, nil)
				if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
					t.Fatalf("third connection: %v %v", err, resp)
				}
				if b, _ := io.ReadAll(resp.Body); !strings.Contains(string(b), `"unavailable"`) {
					t.Fatalf("third connection's body: %s", b)
				}
				if _, status, body := postSSE(t, s, ws.ViewToken, subscribeEvents, nil); status != http.StatusServiceUnavailable || !strings.Contains(string(body), `"unavailable"`) {
					t.Fatalf("a stream past the bound: %d %s", status, body)
				}
			})
		})
	}
}

// TestLiveSkippedRootField: a subscription whose root field @skip or
// @include leaves out subscribes to nothing: refused validation_failed, not
// an internal error.
func TestLiveSkippedRootField(t *testing.T) {
	db, dsn := openDB(t, "sqlite")
	s := startLive(t, db, liveConfig{dsn: dsn})
	ws := s.NewWorkspace(t, "Skipped", "SKP")
	for _, q := range []string{
		`subscription { procedureEvents @skip(if: true) { kind } }`,
		`subscription($on: Boolean!) { procedureEvents @include(if: $on) { kind } }`,
	} {
		vars := map[string]any{"on": false}
		if _, status, body := postSSE(t, s, ws.ViewToken, q, vars); status != http.StatusBadRequest || !strings.Contains(string(body), `"validation_failed"`) {
			t.Fatalf("%s over SSE: %d %s", q, status, body)
		}
		c := openWS(t, s, ws.ViewToken)
		c.subscribe("1", q, vars)
		if code := c.refused("1"); code != "validation_failed" {
			t.Fatalf("%s over a WebSocket: %s", q, code)
		}
	}
	if st := s.Live.Stats(); st.Groups != 0 || st.Subscriptions != 0 {
		t.Fatalf("refused subscriptions hold %+v", st)
	}
}
