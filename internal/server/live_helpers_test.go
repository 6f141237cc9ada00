package server_test

// Helpers of the live-update tests: a server with its own hub (and, on
// PostgreSQL, its own listener), a graphql-transport-ws client, a
// Server-Sent Events client, and the writes that cause events.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/google/uuid"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/procsvc/procsvc/graph/live"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/auth"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/events"
	"github.com/procsvc/procsvc/internal/ratelimit"
	"github.com/procsvc/procsvc/internal/server"
)

// waitFor bounds every wait for something that must happen; the latency
// assertions are tighter and stated where they are made.
const waitFor = 10 * time.Second

// liveServer is one replica: a handler with its own hub over db.
type liveServer struct {
	*apitest.Server
	Hub  *events.Hub
	Live *live.Live
	// Handler is what the server serves, for tests that call it in
	// process.
	Handler http.Handler
}

type liveConfig struct {
	buffer int
	live   live.Options
	// dsn, on PostgreSQL, is what the replica LISTENs through.
	dsn string
	// maxResponse bounds each response and event (0: the default).
	maxResponse int
	// rate is each token's rate limit a second (0: 1 000), and burst its
	// burst (0: as many).
	rate  float64
	burst int
	// clock is the rate limit's (nil: the time).
	clock func() time.Time
	// auth configures authentication (identity providers' tokens).
	auth []auth.Option
}

// startLive serves db with a hub fed by the dialect's announcer: on
// PostgreSQL through a listener of its own, as each replica has.
func startLive(t testing.TB, db *database.DB, cfg liveConfig) *liveServer {
	t.Helper()
	hub := events.NewHub(events.HubOptions{Buffer: cfg.buffer})
	if cfg.live.Buffer == 0 {
		cfg.live.Buffer = cfg.buffer
	}
	svc := core.New(db.Client, core.WithAnnouncer(server.Announcer(db, hub)), core.WithLockPolicy(core.LockPolicyFor(db.Dialect)))
	if db.Dialect == "postgres" {
		l, err := events.Listen(context.Background(), cfg.dsn, hub, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// The rate limit is on, as by default in production: its writer
	// wrapper must let the streams through (it once swallowed SSE flushes).
	if cfg.rate == 0 {
		cfg.rate = 1000
	}
	var opts []ratelimit.Option
	if cfg.clock != nil {
		opts = append(opts, ratelimit.WithClock(cfg.clock))
	}
	if cfg.burst == 0 {
		cfg.burst = int(cfg.rate)
	}
	limiter, err := ratelimit.New(ratelimit.Config{Limit: ratelimit.Limit{Rate: cfg.rate, Burst: cfg.burst}}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	h := server.NewHandler(server.Deps{DB: db, Service: svc, Log: log, ResponseCacheBytes: 16 << 20,
		Hub: hub, Live: cfg.live, RateLimit: limiter, MaxResponseBytes: cfg.maxResponse, Auth: cfg.auth})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	// Before the server closes (cleanups run last first): ends the streams.
	t.Cleanup(hub.Close)
	return &liveServer{Server: &apitest.Server{URL: ts.URL, DB: db, Service: svc, HTTP: ts.Client()}, Hub: hub, Live: h.Live, Handler: h}
}

// openDB opens a fresh migrated database of dialect, with its URL (on
// PostgreSQL; another replica opens it with openReplica).
func openDB(t testing.TB, dialect string) (*database.DB, string) {
	t.Helper()
	if dialect == "sqlite" {
		return dbtest.Open(t, dialect), ""
	}
	dsn := dbtest.CreatePostgres(t)
	db := openReplica(t, dsn)
	if err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db, dsn
}

// openReplica opens the PostgreSQL database at dsn as another replica's
// pool.
func openReplica(t testing.TB, dsn string) *database.DB {
	t.Helper()
	db, err := database.Open(context.Background(), dsn, database.Options{Prepare: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// eventFields selects an event with every edge of its procedure.
const eventFields = `kind procedureId workspaceVersion procedure { id name state projectId
	category { id name } doer { id name } project { id name } comments { nodes { text author { id name } } } }`

const subscribeEvents = `subscription($f: ProcedureEventFilter) { procedureEvents(filter: $f) { ` + eventFields + ` } }`

type namedT struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type eventT struct {
	Kind             string  `json:"kind"`
	ProcedureID      *string `json:"procedureId"`
	WorkspaceVersion int     `json:"workspaceVersion"`
	Procedure        *struct {
		ID        string  `json:"id"`
		Name      string  `json:"name"`
		State     string  `json:"state"`
		ProjectID string  `json:"projectId"`
		Category  *namedT `json:"category"`
		Doer      *namedT `json:"doer"`
		Project   namedT  `json:"project"`
		Comments  struct {
			Nodes []struct {
				Text   string `json:"text"`
				Author namedT `json:"author"`
			} `json:"nodes"`
		} `json:"comments"`
	} `json:"procedure"`
}

// ---------------------------------------------------------------------------
// graphql-transport-ws.

type wsMsg struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// wsClient reads its socket on a goroutine of its own, answering pings,
// until the socket closes; closeErr then says how.
type wsClient struct {
	t        *testing.T
	c        *websocket.Conn
	msgs     chan wsMsg
	closed   chan struct{}
	closeErr error
}

func wsURL(s *liveServer) string { return "ws" + strings.TrimPrefix(s.URL, "http") + "/graphql" }

// dialWS opens a graphql-transport-ws socket (header on the upgrade).
func dialWS(t *testing.T, s *liveServer, header http.Header) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, wsURL(s), &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: header})
	if err == nil {
		c.SetReadLimit(1 << 24)
		t.Cleanup(func() { _ = c.CloseNow() })
	}
	return c, resp, err
}

// connectWS opens a socket and sends connection_init with token in its
// payload; it does not wait for the acknowledgement.
func connectWS(t *testing.T, s *liveServer, token string) *wsClient {
	t.Helper()
	return connectWSWith(t, s, map[string]any{"authorization": "Bearer " + token})
}

// connectWSWith is connectWS with connection_init's payload given.
func connectWSWith(t *testing.T, s *liveServer, payload map[string]any) *wsClient {
	t.Helper()
	c, _, err := dialWS(t, s, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	w := &wsClient{t: t, c: c, msgs: make(chan wsMsg, 4096), closed: make(chan struct{})}
	go w.read()
	w.send(wsMsg{Type: "connection_init", Payload: mustJSON(payload)})
	return w
}

// openWS is connectWS, acknowledged.
func openWS(t *testing.T, s *liveServer, token string) *wsClient {
	t.Helper()
	w := connectWS(t, s, token)
	if m := w.recv(); m.Type != "connection_ack" {
		t.Fatalf("got %s %s, want connection_ack", m.Type, m.Payload)
	}
	return w
}

func (w *wsClient) read() {
	defer close(w.closed)
	defer close(w.msgs)
	for {
		var m wsMsg
		if err := wsjson.Read(context.Background(), w.c, &m); err != nil {
			w.closeErr = err
			return
		}
		if m.Type == "ping" {
			_ = wsjson.Write(context.Background(), w.c, wsMsg{Type: "pong"})
			continue
		}
		w.msgs <- m
	}
}

func (w *wsClient) send(m wsMsg) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := wsjson.Write(ctx, w.c, m); err != nil {
		w.t.Fatalf("send %s: %v", m.Type, err)
	}
}

func (w *wsClient) subscribe(id, query string, vars map[string]any) {
	w.t.Helper()
	w.send(wsMsg{ID: id, Type: "subscribe", Payload: mustJSON(map[string]any{"query": query, "variables": vars})})
}

// recv returns the next message.
func (w *wsClient) recv() wsMsg {
	w.t.Helper()
	return w.recvWithin(waitFor)
}

// recvWithin is recv waiting up to d, for a message the server holds back
// on purpose (a paced write) before the usual wait.
func (w *wsClient) recvWithin(d time.Duration) wsMsg {
	w.t.Helper()
	select {
	case m, ok := <-w.msgs:
		if !ok {
			w.t.Fatalf("socket closed (%v) while a message was expected", w.closeErr)
		}
		return m
	case <-time.After(d):
		w.t.Fatalf("no message in %v", d)
	}
	return wsMsg{}
}

// next returns the next event of subscription id, failing on anything
// else.
func (w *wsClient) next(id string) eventT {
	w.t.Helper()
	return w.nextWithin(id, waitFor)
}

// nextWithin is next waiting up to d (see recvWithin).
func (w *wsClient) nextWithin(id string, d time.Duration) eventT {
	w.t.Helper()
	m := w.recvWithin(d)
	if m.ID != id || m.Type != "next" {
		w.t.Fatalf("got %s for %q: %s, want next for %q", m.Type, m.ID, m.Payload, id)
	}
	return decodeEvent(w.t, m.Payload)
}

// refused returns the error code subscription id was refused with: an
// error message, or a next message with errors and then complete.
func (w *wsClient) refused(id string) string {
	w.t.Helper()
	m := w.recv()
	if m.ID != id || (m.Type != "error" && m.Type != "next") {
		w.t.Fatalf("got %s for %q: %s, want an error for %q", m.Type, m.ID, m.Payload, id)
	}
	code := errorCode(w.t, m)
	if m.Type == "next" {
		if c := w.recv(); c.ID != id || c.Type != "complete" {
			w.t.Fatalf("got %s for %q after the errors, want complete", c.Type, c.ID)
		}
	}
	return code
}

// waitClosed returns the close code the server closed the socket with.
func (w *wsClient) waitClosed() websocket.StatusCode {
	w.t.Helper()
	for {
		select {
		case _, ok := <-w.msgs:
			if !ok {
				return websocket.CloseStatus(w.closeErr)
			}
		case <-time.After(waitFor):
			w.t.Fatal("the socket was not closed")
		}
	}
}

// closeReason is the reason the server closed the socket with, once
// waitClosed has returned.
func (w *wsClient) closeReason() string {
	var ce websocket.CloseError
	if !errors.As(w.closeErr, &ce) {
		w.t.Fatalf("not closed by the server: %v", w.closeErr)
	}
	return ce.Reason
}

// errorCode returns the code of an error message's first error.
func errorCode(t *testing.T, m wsMsg) string {
	t.Helper()
	var errs []apitest.GQLError
	if err := json.Unmarshal(m.Payload, &errs); err != nil || len(errs) == 0 {
		// A "next" message carrying errors.
		var resp apitest.GQLResponse
		if err := json.Unmarshal(m.Payload, &resp); err != nil || len(resp.Errors) == 0 {
			t.Fatalf("%s message without errors: %s", m.Type, m.Payload)
		}
		return resp.Code()
	}
	return errs[0].Extensions.Code
}

func decodeEvent(t *testing.T, payload []byte) eventT {
	t.Helper()
	var resp struct {
		Data struct {
			ProcedureEvents eventT `json:"procedureEvents"`
		} `json:"data"`
		Errors []apitest.GQLError `json:"errors"`
	}
	if err := json.Unmarshal(payload, &resp); err != nil {
		t.Fatalf("decode %s: %v", payload, err)
	}
	if len(resp.Errors) > 0 {
		t.Fatalf("event with errors: %s", payload)
	}
	return resp.Data.ProcedureEvents
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// ---------------------------------------------------------------------------
// Server-Sent Events.

// sseStream is an open Server-Sent Events response.
type sseStream struct {
	t      *testing.T
	events chan []byte
	resp   *http.Response
}

// postSSE posts a subscription with Accept: text/event-stream. A response
// other than 200 is returned with its body read, and no stream.
func postSSE(t *testing.T, s *liveServer, token, query string, vars map[string]any) (*sseStream, int, []byte) {
	t.Helper()
	return postSSEWith(t, s, token, nil, query, vars)
}

// postSSEWith is postSSE with extra request headers.
func postSSEWith(t *testing.T, s *liveServer, token string, header http.Header, query string, vars map[string]any) (*sseStream, int, []byte) {
	t.Helper()
	body := mustJSON(map[string]any{"query": query, "variables": vars})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/graphql", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	for name, values := range header {
		req.Header[name] = values
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return nil, resp.StatusCode, b
	}
	st := &sseStream{t: t, events: make(chan []byte, 1024), resp: resp}
	go func() {
		defer close(st.events)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		var event string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && event == "next":
				st.events <- []byte(strings.TrimPrefix(line, "data: "))
			case line == "" && event == "complete":
				return
			}
		}
	}()
	return st, resp.StatusCode, nil
}

// next returns the next event's data (nil once the stream ended).
func (s *sseStream) next() []byte {
	s.t.Helper()
	select {
	case b := <-s.events:
		return b
	case <-time.After(waitFor):
		s.t.Fatal("no Server-Sent Event")
	}
	return nil
}

// ---------------------------------------------------------------------------
// Writes.

func createProcedure(t testing.TB, s *liveServer, ws *apitest.Workspace, token, name, content string) string {
	t.Helper()
	r := s.GraphQL(t, token, `mutation($in: CreateProcedureInput!) { createProcedure(input: $in) { id } }`, map[string]any{"in": map[string]any{
		"name": name, "priority": "MEDIUM", "state": "TODO", "dueAt": "2030-01-01",
		"categoryId": ws.CategoryID, "doerId": ws.MemberID, "projectId": ws.ProjectID, "content": content,
	}})
	var out struct {
		CreateProcedure struct{ ID string } `json:"createProcedure"`
	}
	r.Decode(t, &out)
	return out.CreateProcedure.ID
}

func gql(t testing.TB, s *liveServer, token, query string, vars map[string]any) {
	t.Helper()
	r := s.GraphQL(t, token, query, vars)
	if len(r.Errors) > 0 {
		t.Fatalf("%s: %+v", query, r.Errors)
	}
}

func renameProcedure(t testing.TB, s *liveServer, token, id, name string) {
	t.Helper()
	gql(t, s, token, `mutation($id: ID!, $name: String!) { updateProcedure(id: $id, input: {name: $name}) { id } }`, map[string]any{"id": id, "name": name})
}

// restPut sends PUT path with a JSON body through REST.
func restPut(t *testing.T, s *liveServer, token, path string, body map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, s.URL+path, bytes.NewReader(mustJSON(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("PUT %s: %d %s", path, resp.StatusCode, b)
	}
}

// settle renames procedure id (in workspace workspaceID, as token) and
// waits until the hub hands that write out. On PostgreSQL notifications
// come back through LISTEN, asynchronously but in commit order, so once
// this one is handed out no earlier write's can still reach a subscriber
// opened afterwards and be taken for one of the test's own events.
func settle(t *testing.T, s *liveServer, db *database.DB, dialect, workspaceID, token, id string) {
	t.Helper()
	heard := s.Hub.Subscribe(uuid.MustParse(workspaceID))
	defer heard.Close()
	renameProcedure(t, s, token, id, "Settled")
	q := "SELECT version FROM workspaces WHERE id = ?"
	if dialect == "postgres" {
		q = "SELECT version FROM workspaces WHERE id = $1"
	}
	var version int64
	if err := db.SQL.QueryRowContext(context.Background(), q, workspaceID).Scan(&version); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(waitFor)
	for {
		select {
		case n := <-heard.Events():
			if n.Version >= version {
				return
			}
		case <-deadline:
			t.Fatalf("the write of version %d was never handed out", version)
		}
	}
}
