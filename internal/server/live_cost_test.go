package server_test

// What live updates cost a replica: reads only of what subscriptions
// select, memory within --live-cache-mb whatever the events carry, and
// one rendering per event for every subscriber of the same operation.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/graph/live"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// addComments adds n comments of size characters to procedure id.
func addComments(t *testing.T, s *liveServer, token, id string, n, size int) {
	t.Helper()
	text := strings.Repeat("c", size)
	for range n {
		gql(t, s, token, `mutation($id: ID!, $text: String!) { addComment(input: {procedureId: $id, text: $text}) { id } }`,
			map[string]any{"id": id, "text": text})
	}
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestLiveMemoryIsBounded: a procedure carrying 2 MB of comments, renamed
// over and over under two subscribers. One selects only `kind`: its events
// read nothing. The other selects the comments: what the replica keeps for
// live updates stays within its bound, however many events go by. (Before
// the bound, 256 events' reads were kept whatever their size: 200 comments
// of 20 000 characters pinned a gigabyte.)
func TestLiveMemoryIsBounded(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			db, dsn := openDB(t, dialect)
			const bound = 4 << 20
			s := startLive(t, db, liveConfig{dsn: dsn, live: live.Options{CacheBytes: bound}})
			ws := s.NewWorkspace(t, "Heavy", "HVY")
			id := createProcedure(t, s, ws, ws.MemberToken, "Heavy", "")
			addComments(t, s, ws.MemberToken, id, 100, 20_000)

			t.Run("NothingReadForKindAlone", func(t *testing.T) {
				renames := func(n int, prefix string) int64 {
					before := db.Statements()
					for i := range n {
						renameProcedure(t, s, ws.MemberToken, id, fmt.Sprintf("%s %d", prefix, i))
					}
					return db.Statements() - before
				}
				alone := renames(3, "Alone")
				settle(t, s, db, dialect, ws.ID, ws.MemberToken, id)
				st, status, body := postSSE(t, s, ws.ViewToken, `subscription { procedureEvents { kind workspaceVersion } }`, nil)
				if status != http.StatusOK {
					t.Fatalf("subscribe: %d %s", status, body)
				}
				ready(t, s, 1)
				watched := renames(3, "Watched")
				for range 3 {
					if e := decodeEvent(t, st.next()); e.Kind != "UPDATED" || e.Procedure != nil {
						t.Fatalf("event: %+v", e)
					}
				}
				if watched != alone {
					t.Fatalf("3 renames cost %d statements with a subscriber selecting kind, %d without: its events read", watched, alone)
				}
				st.resp.Body.Close()
				ready(t, s, 0)
			})

			t.Run("HeldWithinTheBound", func(t *testing.T) {
				settle(t, s, db, dialect, ws.ID, ws.MemberToken, id)
				st, status, body := postSSE(t, s, ws.ViewToken, `subscription { procedureEvents { kind procedure { name comments(last: 100) { nodes { text } } } } }`, nil)
				if status != http.StatusOK {
					t.Fatalf("subscribe: %d %s", status, body)
				}
				ready(t, s, 1)
				base := heapInUse()
				const events = 48 // 96 MB of comments read and rendered
				for i := range events {
					name := fmt.Sprintf("Heavy %d", i)
					renameProcedure(t, s, ws.MemberToken, id, name)
					if e := decodeEvent(t, st.next()); e.Procedure == nil || e.Procedure.Name != name || len(e.Procedure.Comments.Nodes) != 100 {
						t.Fatalf("event %d: %+v", i, e.Kind)
					}
					if held := s.Live.Stats().CachedBytes; held > bound {
						t.Fatalf("after %d events the live caches hold %d bytes, over their bound of %d", i+1, held, bound)
					}
				}
				grown := int64(heapInUse()) - int64(base)
				t.Logf("heap grew %d kB over %d events of 2 MB; the caches hold %d kB", grown>>10, events, s.Live.Stats().CachedBytes>>10)
				// The bound, the event in flight and the test's own copies:
				// far below what keeping each event's read would hold.
				if grown > 5*bound+16<<20 {
					t.Fatalf("the heap grew %d MB over %d events", grown>>20, events)
				}
			})
		})
	}
}

// TestLiveRendersOncePerOperation: every subscriber of the same operation
// (document, variables, role) is sent the same rendering; the executor
// renders each event once per such group, not once per subscriber.
func TestLiveRendersOncePerOperation(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			db, dsn := openDB(t, dialect)
			s := startLive(t, db, liveConfig{dsn: dsn, live: live.Options{MaxPerToken: 40}})
			ws := s.NewWorkspace(t, "Shared", "SHR")
			// The creation's event must reach the hub before anyone
			// subscribes (on PostgreSQL it comes back through LISTEN,
			// asynchronously): a subscriber opened first would get it.
			heard := s.Hub.Subscribe(uuid.MustParse(ws.ID))
			id := createProcedure(t, s, ws, ws.MemberToken, "Shared", "")
			select {
			case <-heard.Events():
			case <-time.After(waitFor):
				t.Fatal("the creation was never published")
			}
			heard.Close()
			type sub struct {
				token string
				vars  map[string]any
			}
			todo := map[string]any{"f": map[string]any{"state": "TODO"}}
			subs := []sub{}
			for range 20 {
				subs = append(subs, sub{ws.ViewToken, nil}) // group 1
			}
			for range 5 {
				subs = append(subs, sub{ws.ViewToken, todo}) // group 2: other variables
			}
			for range 3 {
				subs = append(subs, sub{ws.MemberToken, nil}) // group 3: another role
			}
			streams := make([]*sseStream, len(subs))
			for i, sb := range subs {
				st, status, body := postSSE(t, s, sb.token, subscribeEvents, sb.vars)
				if status != http.StatusOK {
					t.Fatalf("subscribe: %d %s", status, body)
				}
				streams[i] = st
			}
			ready(t, s, len(subs))
			if g := s.Live.Stats().Groups; g != 3 {
				t.Fatalf("%d groups, want 3", g)
			}
			before := s.Live.Stats().Rendered
			renameProcedure(t, s, ws.MemberToken, id, "Once")
			var first []byte
			for i, st := range streams {
				b := st.next()
				if e := decodeEvent(t, b); e.Procedure == nil || e.Procedure.Name != "Once" {
					t.Fatalf("subscriber %d: %+v", i, e)
				}
				if i == 0 {
					first = b
				} else if i < 20 && string(b) != string(first) {
					t.Fatalf("subscribers of one operation were sent different bytes:\n%s\n%s", first, b)
				}
			}
			if n := s.Live.Stats().Rendered - before; n != 3 {
				t.Fatalf("one event rendered %d times for 3 groups of %d subscribers", n, len(subs))
			}
			// Operators see the same figures.
			resp, err := s.HTTP.Get(s.URL + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			exposition, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, line := range []string{"procsvc_live_connections 28", "procsvc_live_subscriptions 28", "procsvc_live_groups 3"} {
				if !strings.Contains(string(exposition), "\n"+line+"\n") {
					t.Errorf("/metrics lacks %q", line)
				}
			}
		})
	}
}

// TestLiveOperationsPerWorkspace: a workspace runs at most
// --live-operations-per-workspace distinct subscription operations on a
// replica: each costs a rendering of every event, so one more is refused,
// while another subscriber of a running operation is not.
func TestLiveOperationsPerWorkspace(t *testing.T) {
	db, dsn := openDB(t, "sqlite")
	s := startLive(t, db, liveConfig{dsn: dsn, live: live.Options{OperationsPerWorkspace: 2}})
	ws := s.NewWorkspace(t, "Operations", "OPS")
	other := s.NewWorkspace(t, "Elsewhere", "ELS")
	open := func(token string, vars map[string]any) (int, string) {
		st, status, body := postSSE(t, s, token, subscribeEvents, vars)
		if st != nil {
			t.Cleanup(func() { st.resp.Body.Close() })
		}
		return status, string(body)
	}
	for i, vars := range []map[string]any{nil, {"f": map[string]any{"state": "TODO"}}, nil} {
		if status, body := open(ws.ViewToken, vars); status != http.StatusOK {
			t.Fatalf("subscription %d: %d %s", i, status, body)
		}
	}
	if status, body := open(ws.ViewToken, map[string]any{"f": map[string]any{"state": "WAITING"}}); status != http.StatusTooManyRequests || !strings.Contains(body, `"rate_limited"`) {
		t.Fatalf("a third operation: %d %s", status, body)
	}
	if status, body := open(other.ViewToken, map[string]any{"f": map[string]any{"state": "WAITING"}}); status != http.StatusOK {
		t.Fatalf("another workspace: %d %s", status, body)
	}
}

// TestLiveEventsAreBounded: an event whose rendering passes the bound on a
// response is delivered as one payload_too_large error in its place, on
// both transports, and the subscription goes on.
func TestLiveEventsAreBounded(t *testing.T) {
	db, dsn := openDB(t, "sqlite")
	s := startLive(t, db, liveConfig{dsn: dsn, maxResponse: 64 << 10})
	ws := s.NewWorkspace(t, "Bounded", "BND")
	const query = `subscription { procedureEvents { kind procedureId procedure { name content } } }`
	c := openWS(t, s, ws.ViewToken)
	c.subscribe("1", query, nil)
	st, status, body := postSSE(t, s, ws.ViewToken, query, nil)
	if status != http.StatusOK {
		t.Fatalf("subscribe: %d %s", status, body)
	}
	ready(t, s, 2)
	big := createProcedure(t, s, ws, ws.MemberToken, "Big", strings.Repeat("x", 100_000))
	small := createProcedure(t, s, ws, ws.MemberToken, "Small", "short")
	for _, payload := range [][]byte{c.recv().Payload, st.next()} {
		if !strings.Contains(string(payload), `"payload_too_large"`) || strings.Contains(string(payload), "xxxx") {
			t.Fatalf("an event over the bound: %.300s", payload)
		}
	}
	for _, e := range []eventT{c.next("1"), decodeEvent(t, st.next())} {
		if *e.ProcedureID != small || e.Procedure.Name != "Small" {
			t.Fatalf("the event after it: %+v (the big one was %s)", e, big)
		}
	}
}

// flushCounter is a connection's ResponseWriter that counts its flushes:
// each is one write to the socket.
type flushCounter struct {
	mu      sync.Mutex
	header  http.Header
	body    bytes.Buffer
	flushes int
	// flushed is how much of body had been flushed at the last Flush: a
	// write is not on the wire until its flush.
	flushed int
}

func (f *flushCounter) Header() http.Header { return f.header }
func (f *flushCounter) WriteHeader(int)     {}
func (f *flushCounter) Write(b []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.body.Write(b)
}
func (f *flushCounter) Flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flushes++
	f.flushed = f.body.Len()
}

// state is what has been flushed, and how many flushes it took.
func (f *flushCounter) state() (string, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return string(f.body.Bytes()[:f.flushed]), f.flushes
}

// TestLiveStreamWritesArePaced: a Server-Sent Events stream writes at most
// once per --stream-flush-interval; events that come sooner go out
// together, in one write.
func TestLiveStreamWritesArePaced(t *testing.T) {
	for _, tc := range []struct {
		interval time.Duration
		writes   int
	}{
		// The stream's opening, the first event at once, the four others
		// together once the interval is over.
		{3 * time.Second, 3},
		// Without pacing, an event a write (when each is written before
		// the next comes).
		{0, 6},
	} {
		t.Run(tc.interval.String(), func(t *testing.T) {
			db, dsn := openDB(t, "sqlite")
			s := startLive(t, db, liveConfig{dsn: dsn, live: live.Options{FlushInterval: tc.interval}})
			ws := s.NewWorkspace(t, "Paced", "PAC")
			id := createProcedure(t, s, ws, ws.MemberToken, "Paced", "")
			// The handler is served in process, to count its writes.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/graphql",
				bytes.NewReader(mustJSON(map[string]any{"query": `subscription { procedureEvents { kind procedure { name } } }`})))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Accept", "text/event-stream")
			r.Header.Set("Authorization", "Bearer "+ws.ViewToken)
			w := &flushCounter{header: http.Header{}}
			done := make(chan struct{})
			go func() { defer close(done); s.Handler.ServeHTTP(w, r) }()
			ready(t, s, 1)
			written := func(n int) {
				waitUntil(t, fmt.Sprintf("%d events are written", n), func() bool {
					body, _ := w.state()
					return strings.Count(body, "event: next") == n
				})
			}
			for i := range 5 {
				renameProcedure(t, s, ws.MemberToken, id, fmt.Sprintf("Paced %d", i))
				// Each event written before the next is sent: without
				// pacing, a write each; with it, the first at once and the
				// others held for the interval.
				if tc.interval == 0 || i == 0 {
					written(i + 1)
				}
			}
			written(5)
			if body, flushes := w.state(); flushes != tc.writes {
				t.Fatalf("%d writes for the opening and 5 events, want %d:\n%s", flushes, tc.writes, body)
			}
			cancel()
			<-done
		})
	}
}

// TestLiveAccessChangeChecksEachTokenOnce: an access change makes every
// subscription check its credential again, but a token is looked up once
// for all of its subscriptions, not once each.
func TestLiveAccessChangeChecksEachTokenOnce(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			db, dsn := openDB(t, dialect)
			s := startLive(t, db, liveConfig{dsn: dsn})
			ws := s.NewWorkspace(t, "Checks", "CHK")
			id := createProcedure(t, s, ws, ws.MemberToken, "Checked", "")
			// An access change (a token made and revoked) then a marker:
			// a subscriber sees the marker once it has handled the change.
			var previous string
			change := func(name string, streams []*sseStream) int64 {
				before := db.Statements()
				r := s.GraphQL(t, ws.AdminToken, `mutation($in: CreateTokenInput!) { createToken(input: $in) { token { id } } }`,
					map[string]any{"in": map[string]any{"memberId": ws.MemberID, "name": name}})
				var out struct {
					CreateToken struct{ Token struct{ ID string } } `json:"createToken"`
				}
				r.Decode(t, &out)
				gql(t, s, ws.AdminToken, `mutation($id: ID!) { revokeToken(id: $id) { id } }`, map[string]any{"id": out.CreateToken.Token.ID})
				renameProcedure(t, s, ws.MemberToken, id, name)
				for _, st := range streams {
					e := decodeEvent(t, st.next())
					// On PostgreSQL events arrive through LISTEN, so the
					// previous marker's may still reach a subscription that
					// began after it was committed.
					if e.Procedure != nil && e.Procedure.Name == previous {
						e = decodeEvent(t, st.next())
					}
					if e.Procedure == nil || e.Procedure.Name != name {
						t.Fatalf("marker: %+v", e)
					}
				}
				previous = name
				return db.Statements() - before
			}
			alone := change("alone", nil)
			streams := make([]*sseStream, 10)
			for i := range streams {
				st, status, body := postSSE(t, s, ws.ViewToken, `subscription { procedureEvents { kind procedure { name } } }`, nil)
				if status != http.StatusOK {
					t.Fatalf("subscribe: %d %s", status, body)
				}
				streams[i] = st
			}
			ready(t, s, len(streams))
			watched := change("watched", streams)
			// The marker's one read, the token's one check (and at most a
			// use recorded): not ten checks.
			if extra := watched - alone; extra > 4 {
				t.Fatalf("an access change and a marker cost %d statements more with 10 subscriptions of one token", extra)
			}
		})
	}
}
