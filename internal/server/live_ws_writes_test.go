package server_test

import (
	"fmt"
	"net"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/procsvc/procsvc/graph/live"
	"github.com/procsvc/procsvc/internal/apitest"
)

// connWrites is a listener whose connections count the writes made to
// them: each is one system call on the server's side.
type connWrites struct {
	net.Listener
	mu     sync.Mutex
	writes int
}

func (l *connWrites) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, l: l}, nil
}

func (l *connWrites) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writes
}

type countingConn struct {
	net.Conn
	l *connWrites
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.l.mu.Lock()
	c.l.writes++
	c.l.mu.Unlock()
	return c.Conn.Write(p)
}

// serveCounted serves s's handler again on a listener of its own that
// counts the writes to its connections: the replica's other requests (the
// writes that cause events) are not counted.
func serveCounted(t *testing.T, s *liveServer) (*liveServer, *connWrites) {
	t.Helper()
	ts := httptest.NewUnstartedServer(s.Handler)
	counter := &connWrites{Listener: ts.Listener}
	ts.Listener = counter
	ts.Start()
	t.Cleanup(ts.Close)
	return &liveServer{Server: &apitest.Server{URL: ts.URL, DB: s.DB, Service: s.Service, HTTP: ts.Client()},
		Hub: s.Hub, Live: s.Live, Handler: s.Handler}, counter
}

// TestLiveWebSocketWritesAreCoalesced: a WebSocket subscription writes at
// most once per --stream-flush-interval, as a Server-Sent Events stream
// does; the events that come sooner go out together, each a message of
// its own (whole, in order) but all in one write to the socket. Before,
// every message was a write and a flush of its own (1 000 subscribers: ~1
// 000 system calls per event).
func TestLiveWebSocketWritesAreCoalesced(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		db, dsn := openDB(t, dialect)
		for _, tc := range []struct {
			interval time.Duration
			writes   int
		}{
			// The first event at once, the four others together once the
			// interval is over. The interval is long enough for the four
			// renames (a few tens of milliseconds each) to fall inside it
			// on a machine loaded by a race-detector suite: a slower
			// rename would make a third write, not a lost event.
			{10 * time.Second, 2},
			// Without pacing, an event a write (when each is written
			// before the next comes).
			{0, 5},
		} {
			t.Run(tc.interval.String(), func(t *testing.T) {
				// No keep-alive during the test: only events are written.
				s := startLive(t, db, liveConfig{dsn: dsn, live: live.Options{FlushInterval: tc.interval, KeepAlive: time.Hour}})
				ws := s.NewWorkspace(t, "Coalesced", "COA")
				id := createProcedure(t, s, ws, ws.MemberToken, "Coalesced", "")
				// On PostgreSQL the creation's event comes back through
				// LISTEN and could reach the subscription opened below,
				// taken for the first rename's (the last event then shows
				// the fourth rename: seen under a loaded machine).
				settle(t, s, db, dialect, ws.ID, ws.MemberToken, id)
				counted, counter := serveCounted(t, s)
				c := openWS(t, counted, ws.ViewToken)
				c.subscribe("1", subscribeEvents, nil)
				ready(t, s, 1)
				before := counter.count()
				// Each event is whole and in order (its workspace version
				// above the one before). An event is rendered from the
				// records as they are then: the name it shows may be a
				// later rename's, but the last shows the last.
				received, version, name := 0, 0, ""
				receive := func() {
					t.Helper()
					// Held events come once the interval is over, counted
					// from the write before: the usual wait on top of it
					// (the wait alone, as long as the interval, ran out on
					// a loaded machine before the paced write came).
					e := c.nextWithin("1", tc.interval+waitFor)
					if e.Kind != "UPDATED" || e.Procedure == nil || e.WorkspaceVersion <= version {
						t.Fatalf("event %d: %+v, after version %d", received, e, version)
					}
					received, version, name = received+1, e.WorkspaceVersion, e.Procedure.Name
				}
				for i := range 5 {
					renameProcedure(t, s, ws.MemberToken, id, fmt.Sprintf("Coalesced %d", i))
					// Each event received before the next is sent: without
					// pacing, a write each; with it, the first at once and
					// the others held for the interval.
					if tc.interval == 0 || i == 0 {
						receive()
					}
				}
				for received < 5 {
					receive()
				}
				if name != "Coalesced 4" {
					t.Fatalf("the last event shows %q, want the last rename", name)
				}
				if writes := counter.count() - before; writes != tc.writes {
					t.Fatalf("%d writes for 5 events, want %d", writes, tc.writes)
				}
			})
		}
	})
}
