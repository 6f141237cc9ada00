package server_test

// Live updates end to end (docs/api.md, "Live updates"): real sockets and
// streams against the real handler, on every dialect; on PostgreSQL also
// across two replicas sharing one database.

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/graph"
	"github.com/procsvc/procsvc/graph/gqlhttp"
	"github.com/procsvc/procsvc/graph/live"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/auth"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/events"
	"github.com/procsvc/procsvc/internal/loader"
	"github.com/procsvc/procsvc/internal/metrics"
	"github.com/procsvc/procsvc/internal/middleware"
	"github.com/procsvc/procsvc/internal/server"
	"github.com/procsvc/procsvc/internal/viewer"
)

// deliveryBound is how soon an event must arrive after its write returned.
const deliveryBound = time.Second

// within fails t unless the event came within deliveryBound of since, and
// logs the latency seen.
func within(t *testing.T, what string, since time.Time) {
	t.Helper()
	d := time.Since(since)
	t.Logf("%s delivered in %s", what, d.Round(100*time.Microsecond))
	if d > deliveryBound {
		t.Fatalf("%s took %s, more than %s", what, d, deliveryBound)
	}
}

func TestLiveUpdates(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			db, dsn := openDB(t, dialect)
			// Each case has a server (a hub) of its own, so that it can
			// tell when its subscriptions are open (ready).
			cfg := liveConfig{dsn: dsn, live: live.Options{MaxPerToken: 3}}
			setup := startLive(t, db, cfg)
			ws := setup.NewWorkspace(t, "Live", "LIV")
			other := setup.NewWorkspace(t, "Other", "OTH")

			t.Run("OK", func(t *testing.T) {
				s := startLive(t, db, cfg)
				// A VIEWER may subscribe; every kind arrives with the
				// procedure and its edges as read now.
				c := openWS(t, s, ws.ViewToken)
				c.subscribe("1", subscribeEvents, nil)
				ready(t, s, 1)
				start := time.Now()
				id := createProcedure(t, s, ws, ws.MemberToken, "Onboard", "steps")
				e := c.next("1")
				within(t, "CREATED", start)
				if e.Kind != "CREATED" || *e.ProcedureID != id || e.Procedure == nil || e.Procedure.Name != "Onboard" ||
					e.Procedure.Category == nil || e.Procedure.Category.ID != ws.CategoryID || e.Procedure.Doer == nil ||
					e.Procedure.Doer.ID != ws.MemberID || e.Procedure.Project.ID != ws.ProjectID || len(e.Procedure.Comments.Nodes) != 0 {
					t.Fatalf("CREATED event: %+v", e)
				}
				version := e.WorkspaceVersion

				// The category renamed between two events: the second
				// shows the new name (fresh dataloaders per event).
				gql(t, s, ws.AdminToken, `mutation($id: ID!) { updateCategory(id: $id, input: {name: "Renamed"}) { id } }`, map[string]any{"id": ws.CategoryID})
				start = time.Now()
				renameProcedure(t, s, ws.MemberToken, id, "Onboard v2")
				e = c.next("1")
				within(t, "UPDATED", start)
				if e.Kind != "UPDATED" || e.Procedure.Name != "Onboard v2" || e.Procedure.Category.Name != "Renamed" || e.WorkspaceVersion <= version {
					t.Fatalf("UPDATED event: %+v (previous version %d)", e, version)
				}
				version = e.WorkspaceVersion

				gql(t, s, ws.MemberToken, `mutation($id: ID!) { moveProcedure(id: $id, state: IN_PROGRESS) { id } }`, map[string]any{"id": id})
				if e = c.next("1"); e.Kind != "MOVED" || e.Procedure.State != "IN_PROGRESS" || e.WorkspaceVersion <= version {
					t.Fatalf("MOVED event: %+v", e)
				}
				gql(t, s, ws.MemberToken, `mutation($id: ID!) { addComment(input: {procedureId: $id, text: "looks good"}) { id } }`, map[string]any{"id": id})
				if e = c.next("1"); e.Kind != "COMMENTED" || len(e.Procedure.Comments.Nodes) != 1 || e.Procedure.Comments.Nodes[0].Text != "looks good" ||
					e.Procedure.Comments.Nodes[0].Author.ID != ws.MemberID {
					t.Fatalf("COMMENTED event: %+v", e)
				}
				gql(t, s, ws.MemberToken, `mutation($id: ID!) { deleteProcedure(id: $id) { deletedId } }`, map[string]any{"id": id})
				if e = c.next("1"); e.Kind != "DELETED" || *e.ProcedureID != id || e.Procedure != nil {
					t.Fatalf("DELETED event: %+v", e)
				}
			})

			t.Run("OtherWorkspaceReceivesNothing", func(t *testing.T) {
				s := startLive(t, db, cfg)
				c := openWS(t, s, other.ViewToken)
				c.subscribe("1", subscribeEvents, nil)
				ready(t, s, 1)
				createProcedure(t, s, ws, ws.MemberToken, "Not theirs", "")
				// Events reach a hub in commit order: the other
				// workspace's next event is its own later write.
				marker := createProcedure(t, s, other, other.MemberToken, "Theirs", "")
				if e := c.next("1"); *e.ProcedureID != marker {
					t.Fatalf("the other workspace received %+v", e)
				}
			})

			t.Run("Filter", func(t *testing.T) {
				s := startLive(t, db, cfg)
				second := s.GraphQL(t, ws.AdminToken, `mutation { createProject(input: {name: "Second"}) { id } }`, nil)
				var p struct {
					CreateProject struct{ ID string } `json:"createProject"`
				}
				second.Decode(t, &p)
				c := openWS(t, s, ws.ViewToken)
				c.subscribe("todo", subscribeEvents, map[string]any{"f": map[string]any{"projectId": ws.ProjectID, "state": "TODO"}})
				c.subscribe("second", subscribeEvents, map[string]any{"f": map[string]any{"projectId": p.CreateProject.ID}})
				ready(t, s, 2)

				id := createProcedure(t, s, ws, ws.MemberToken, "Filtered", "")
				if e := c.next("todo"); e.Kind != "CREATED" || *e.ProcedureID != id {
					t.Fatalf("todo filter: %+v", e)
				}
				// Leaving the filter is delivered (before matched).
				gql(t, s, ws.MemberToken, `mutation($id: ID!) { moveProcedure(id: $id, state: COMPLETED) { id } }`, map[string]any{"id": id})
				if e := c.next("todo"); e.Kind != "MOVED" || e.Procedure.State != "COMPLETED" {
					t.Fatalf("leaving the filter: %+v", e)
				}
				// Outside both filters now: a comment is matched on the
				// procedure as read, and not delivered; moving it into
				// the second project is delivered there only.
				gql(t, s, ws.MemberToken, `mutation($id: ID!) { addComment(input: {procedureId: $id, text: "x"}) { id } }`, map[string]any{"id": id})
				restPut(t, s, ws.MemberToken, "/procedures/"+id, map[string]any{"projectId": p.CreateProject.ID})
				if e := c.next("second"); e.Kind != "UPDATED" || e.Procedure.ProjectID != p.CreateProject.ID {
					t.Fatalf("entering the second project: %+v", e)
				}
				marker := createProcedure(t, s, ws, ws.MemberToken, "Marker", "")
				if e := c.next("todo"); *e.ProcedureID != marker {
					t.Fatalf("todo filter delivered %+v before the marker", e)
				}
				c.subscribe("bad", subscribeEvents, map[string]any{"f": map[string]any{"projectId": "nope"}})
				if code := c.refused("bad"); code != "validation_failed" {
					t.Fatalf("bad filter: %s", code)
				}
			})

			t.Run("BadTokenRefused", func(t *testing.T) {
				s := startLive(t, db, cfg)
				for name, token := range map[string]string{"Unknown": "pms_" + strings.Repeat("x", 43), "Malformed": "short"} {
					t.Run(name, func(t *testing.T) {
						c := connectWS(t, s, token)
						if code := c.waitClosed(); code != live.CloseForbidden {
							t.Fatalf("closed with %d, want %d", code, live.CloseForbidden)
						}
						if reason := c.closeReason(); reason != "Forbidden: unauthenticated" {
							t.Fatalf("close reason %q", reason)
						}
					})
				}
				t.Run("HeaderOnUpgrade", func(t *testing.T) {
					conn, _, err := dialWS(t, s, http.Header{"Authorization": {"Bearer " + ws.ViewToken}})
					if err != nil {
						t.Fatal(err)
					}
					c := &wsClient{t: t, c: conn, msgs: make(chan wsMsg, 16), closed: make(chan struct{})}
					go c.read()
					c.send(wsMsg{Type: "connection_init"})
					if m := c.recv(); m.Type != "connection_ack" {
						t.Fatalf("got %s, want connection_ack", m.Type)
					}
				})
				t.Run("ForeignOrigin", func(t *testing.T) {
					_, resp, err := dialWS(t, s, http.Header{"Origin": {"https://evil.example"}})
					if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
						t.Fatalf("dial from a foreign origin: %v, %v", err, resp)
					}
				})
				t.Run("SSE", func(t *testing.T) {
					if _, status, body := postSSE(t, s, "", subscribeEvents, nil); status != http.StatusUnauthorized || !strings.Contains(string(body), `"unauthenticated"`) {
						t.Fatalf("SSE without a token: %d %s", status, body)
					}
				})
			})

			t.Run("CapPerToken", func(t *testing.T) {
				s := startLive(t, db, cfg)
				cap := s.NewWorkspace(t, "Cap", "CAP")
				c := openWS(t, s, cap.ViewToken)
				for _, id := range []string{"1", "2", "3"} {
					c.subscribe(id, subscribeEvents, nil)
				}
				ready(t, s, 3)
				// The fourth of the token's subscriptions, on another
				// connection or over SSE, is refused.
				createProcedure(t, s, cap, cap.MemberToken, "Started", "")
				for range 3 {
					if m := c.recv(); m.Type != "next" {
						t.Fatalf("got %s %s", m.Type, m.Payload)
					}
				}
				d := openWS(t, s, cap.ViewToken)
				d.subscribe("4", subscribeEvents, nil)
				if code := d.refused("4"); code != "rate_limited" {
					t.Fatalf("fourth subscription: %s", code)
				}
				if _, status, body := postSSE(t, s, cap.ViewToken, subscribeEvents, nil); status != http.StatusTooManyRequests || !strings.Contains(string(body), `"rate_limited"`) {
					t.Fatalf("fourth subscription over SSE: %d %s", status, body)
				}
				// Completing one frees its slot.
				open := s.Live.Stats().Subscriptions
				c.send(wsMsg{ID: "1", Type: "complete"})
				ready(t, s, open-1)
				d.subscribe("5", subscribeEvents, nil)
				ready(t, s, open)
				id := createProcedure(t, s, cap, cap.MemberToken, "Again", "")
				if e := d.next("5"); *e.ProcedureID != id {
					t.Fatalf("fifth subscription: %+v", e)
				}
			})

			t.Run("Limits", func(t *testing.T) {
				s := startLive(t, db, cfg)
				c := openWS(t, s, ws.ViewToken)
				// Over the complexity limit: 250 aliased comment lists.
				var aliases strings.Builder
				for i := range 250 {
					fmt.Fprintf(&aliases, "c%d: comments { nodes { id } } ", i)
				}
				c.subscribe("costly", `subscription { procedureEvents { procedure { `+aliases.String()+`} } }`, nil)
				if code := c.refused("costly"); code != "validation_failed" {
					t.Fatalf("too complex: %s", code)
				}
				r := s.GraphQL(t, ws.ViewToken, subscribeEvents, nil)
				if r.Status != http.StatusBadRequest && r.Code() != "bad_request" {
					t.Fatalf("subscription over POST: %d %+v", r.Status, r.Errors)
				}
			})

			t.Run("SSE", func(t *testing.T) {
				s := startLive(t, db, cfg)
				st, status, body := postSSE(t, s, ws.ViewToken, subscribeEvents, map[string]any{"f": map[string]any{"state": "WAITING"}})
				if status != http.StatusOK {
					t.Fatalf("SSE: %d %s", status, body)
				}
				ready(t, s, 1)
				if ct := st.resp.Header.Get("Content-Type"); ct != "text/event-stream" {
					t.Fatalf("Content-Type %q", ct)
				}
				start := time.Now()
				id := createProcedure(t, s, ws, ws.MemberToken, "Streamed", "")
				gql(t, s, ws.MemberToken, `mutation($id: ID!) { moveProcedure(id: $id, state: WAITING) { id } }`, map[string]any{"id": id})
				e := decodeEvent(t, st.next())
				within(t, "SSE MOVED", start)
				if e.Kind != "MOVED" || e.Procedure.State != "WAITING" || e.Procedure.Doer.ID != ws.MemberID {
					t.Fatalf("SSE event: %+v", e)
				}
				if _, status, body := postSSE(t, s, ws.ViewToken, `subscription { procedureEvents { nope } }`, nil); status != http.StatusBadRequest || !strings.Contains(string(body), `"validation_failed"`) || strings.Contains(string(body), `"data"`) {
					t.Fatalf("SSE with an invalid document: %d %s", status, body)
				}
			})

			t.Run("RevokedTokenCut", func(t *testing.T) {
				s := startLive(t, db, cfg)
				lose := s.NewWorkspace(t, "Revoked", "REV")
				c := openWS(t, s, lose.ViewToken)
				c.subscribe("1", subscribeEvents, nil)
				st, _, _ := postSSE(t, s, lose.ViewToken, subscribeEvents, nil)
				ready(t, s, 2)
				createProcedure(t, s, lose, lose.MemberToken, "Before", "")
				c.next("1")
				st.next()
				tokens := s.GraphQL(t, lose.AdminToken, `{ tokens { id name } }`, nil)
				var list struct {
					Tokens []struct{ ID, Name string } `json:"tokens"`
				}
				tokens.Decode(t, &list)
				var viewerToken string
				for _, tk := range list.Tokens {
					if tk.Name == "VIEWER" {
						viewerToken = tk.ID
					}
				}
				start := time.Now()
				gql(t, s, lose.AdminToken, `mutation($id: ID!) { revokeToken(id: $id) { id } }`, map[string]any{"id": viewerToken})
				if code := c.waitClosed(); code != live.CloseForbidden {
					t.Fatalf("closed with %d, want %d", code, live.CloseForbidden)
				}
				if reason := c.closeReason(); reason != "Forbidden: disconnected (token_revoked)" {
					t.Fatalf("close reason %q", reason)
				}
				t.Logf("WebSocket of a revoked token closed in %s", time.Since(start).Round(time.Millisecond))
				var last []byte
				for b := st.next(); b != nil; b = st.next() {
					last = b
				}
				if !strings.Contains(string(last), `"disconnected"`) {
					t.Fatalf("SSE's last event: %s", last)
				}
			})

			t.Run("RemovedMemberCut", func(t *testing.T) {
				s := startLive(t, db, cfg)
				lose := s.NewWorkspace(t, "Removed", "REM")
				c := openWS(t, s, lose.MemberToken)
				c.subscribe("1", subscribeEvents, nil)
				ready(t, s, 1)
				createProcedure(t, s, lose, lose.AdminToken, "Before", "")
				c.next("1")
				gql(t, s, lose.AdminToken, `mutation($id: ID!) { removeMember(id: $id) { id } }`, map[string]any{"id": lose.MemberID})
				if code := c.waitClosed(); code != live.CloseForbidden {
					t.Fatalf("closed with %d, want %d", code, live.CloseForbidden)
				}
				if reason := c.closeReason(); reason != "Forbidden: disconnected (member_removed)" {
					t.Fatalf("close reason %q", reason)
				}
			})
		})
	}
}

// TestLiveRecheck: a token revoked without any notification (here behind
// the server's back) is still cut, by the periodic re-check.
func TestLiveRecheck(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			db, dsn := openDB(t, dialect)
			s := startLive(t, db, liveConfig{dsn: dsn, live: live.Options{Recheck: 200 * time.Millisecond}})
			ws := s.NewWorkspace(t, "Recheck", "REC")
			c := openWS(t, s, ws.ViewToken)
			c.subscribe("1", subscribeEvents, nil)
			ready(t, s, 1)
			createProcedure(t, s, ws, ws.MemberToken, "Before", "")
			c.next("1")
			start := time.Now()
			if _, err := db.SQL.ExecContext(context.Background(), "UPDATE tokens SET revoked_at = created_at WHERE member_id = "+placeholder(dialect), ws.ViewerID); err != nil {
				t.Fatal(err)
			}
			if code := c.waitClosed(); code != live.CloseForbidden {
				t.Fatalf("closed with %d, want %d", code, live.CloseForbidden)
			}
			if reason := c.closeReason(); reason != "Forbidden: disconnected (token_revoked)" {
				t.Fatalf("close reason %q", reason)
			}
			t.Logf("cut %s after an unannounced revocation (re-check every 200ms)", time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestLiveStalledSubscriber: a subscriber that never reads does not slow
// writers; it falls behind its buffer and its subscription is closed with
// an error (it is to resubscribe and refetch).
func TestLiveStalledSubscriber(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			db, dsn := openDB(t, dialect)
			s := startLive(t, db, liveConfig{dsn: dsn, buffer: 4})
			ws := s.NewWorkspace(t, "Stall", "STL")
			conn, _, err := dialWS(t, s, nil)
			if err != nil {
				t.Fatal(err)
			}
			stalled := &wsClient{t: t, c: conn}
			stalled.send(wsMsg{Type: "connection_init", Payload: mustJSON(map[string]any{"authorization": "Bearer " + ws.ViewToken})})
			stalled.subscribe("1", `subscription { procedureEvents { kind procedure { name content } } }`, nil)
			ready(t, s, 1)

			// Events of ~150 kB each: the socket's buffers fill after a
			// few dozen, and the hub's buffer of 4 right after.
			id := createProcedure(t, s, ws, ws.MemberToken, "Big", strings.Repeat("x", 150_000))
			var worst time.Duration
			const writes = 120
			for i := range writes {
				start := time.Now()
				renameProcedure(t, s, ws.MemberToken, id, "Big "+string(rune('a'+i%26)))
				worst = max(worst, time.Since(start))
			}
			t.Logf("slowest of %d writes with a stalled subscriber: %s", writes, worst.Round(time.Millisecond))
			if worst > 2*time.Second {
				t.Fatalf("a write took %s with a stalled subscriber", worst)
			}
			ready(t, s, 0)

			// Reading at last: the events sent before, then the error.
			stalled.msgs, stalled.closed = make(chan wsMsg, 4096), make(chan struct{})
			go stalled.read()
			received := 0
			for {
				var m wsMsg
				select {
				case m = <-stalled.msgs:
				case <-time.After(waitFor):
					t.Fatal("no error message")
				}
				if m.Type == "next" {
					received++
					continue
				}
				if m.Type == "connection_ack" {
					continue
				}
				if m.Type != "error" || errorCode(t, m) != "unavailable" {
					t.Fatalf("got %s %s, want an unavailable error", m.Type, m.Payload)
				}
				break
			}
			t.Logf("the stalled subscriber got %d of %d events, then its error", received, writes+1)
			if received >= writes+1 {
				t.Fatal("no event was dropped")
			}
		})
	}
}

// ready waits until s has n subscriptions open: the server starts one
// after it has read its subscribe message, and a write committed before
// would not reach it.
func ready(t *testing.T, s *liveServer, n int) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("%d subscriptions are open", n), func() bool { return s.Live.Stats().Subscriptions == n })
}

// waitUntil polls cond, which the test cannot be told of, until it holds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		<-tick.C
	}
}

// TestLiveAcrossReplicas: two replicas, each with its own hub and
// listener, over one PostgreSQL database.
func TestLiveAcrossReplicas(t *testing.T) {
	dbtest.NeedPostgres(t)
	dbA, dsn := openDB(t, "postgres")
	a := startLive(t, dbA, liveConfig{dsn: dsn})
	b := startLive(t, openReplica(t, dsn), liveConfig{dsn: dsn})
	ws := a.NewWorkspace(t, "Replicas", "REP")
	other := a.NewWorkspace(t, "Elsewhere", "ELS")

	c := openWS(t, a, ws.ViewToken)
	c.subscribe("1", subscribeEvents, nil)
	o := openWS(t, b, other.ViewToken)
	o.subscribe("1", subscribeEvents, nil)
	ready(t, a, 1)
	ready(t, b, 1)
	id := createProcedure(t, b, ws, ws.MemberToken, "Shared", "")
	if e := c.next("1"); e.Kind != "CREATED" || *e.ProcedureID != id {
		t.Fatalf("create on B: %+v", e)
	}

	start := time.Now()
	restPut(t, b, ws.MemberToken, "/procedures/"+id, map[string]any{"name": "Renamed on B"})
	e := c.next("1")
	within(t, "REST update on B to a subscriber on A", start)
	if e.Kind != "UPDATED" || e.Procedure.Name != "Renamed on B" || e.Procedure.Project.ID != ws.ProjectID {
		t.Fatalf("update from B: %+v", e)
	}
	start = time.Now()
	gql(t, a, ws.MemberToken, `mutation($id: ID!) { moveProcedure(id: $id, state: COMPLETED) { id } }`, map[string]any{"id": id})
	e = c.next("1")
	within(t, "GraphQL move on A to a subscriber on A", start)
	if e.Kind != "MOVED" || e.Procedure.State != "COMPLETED" {
		t.Fatalf("move on A: %+v", e)
	}
	marker := createProcedure(t, a, other, other.MemberToken, "Theirs", "")
	if e := o.next("1"); *e.ProcedureID != marker {
		t.Fatalf("the other workspace received %+v", e)
	}

	// The listeners lose their connections (a failover): once back, the
	// subscribers are told to refetch.
	dbtest.TerminateBackends(t, dsn)
	if e := c.next("1"); e.Kind != "REFETCH" || e.ProcedureID != nil || e.WorkspaceVersion <= 0 {
		t.Fatalf("after the listener reconnected: %+v", e)
	}
}

func placeholder(dialect string) string {
	if dialect == "postgres" {
		return "$1"
	}
	return "?"
}

// TestLiveReadsOncePerEvent: an event's procedure and edges are read once
// per replica, whatever the number of subscribers; reading them per
// subscriber made 1 000 subscribers cost thousands of statements a write
// and starve the writers of connections.
func TestLiveReadsOncePerEvent(t *testing.T) {
	db, dsn := openDB(t, "sqlite")
	s := startLive(t, db, liveConfig{dsn: dsn})
	ws := s.NewWorkspace(t, "Shared", "SHR")
	id := createProcedure(t, s, ws, ws.MemberToken, "Shared", "")
	open := 0
	statementsFor := func(subscribers int, name string) int64 {
		t.Helper()
		streams := make([]*sseStream, subscribers)
		for i := range streams {
			st, status, body := postSSE(t, s, ws.ViewToken, subscribeEvents, nil)
			if status != http.StatusOK {
				t.Fatalf("subscribe: %d %s", status, body)
			}
			streams[i] = st
		}
		open += subscribers
		ready(t, s, open)
		// The write and every delivery: the write costs the same each
		// time, and deliveries may start before its answer is back.
		before := db.Statements()
		renameProcedure(t, s, ws.MemberToken, id, name)
		for _, st := range streams {
			if e := decodeEvent(t, st.next()); e.Procedure.Name != name || e.Procedure.Project.ID != ws.ProjectID {
				t.Fatalf("event: %+v", e)
			}
		}
		return db.Statements() - before
	}
	one, many := statementsFor(1, "first"), statementsFor(12, "second")
	t.Logf("statements for a write and its delivery: 1 new subscriber %d, 12 more %d", one, many)
	if many > one+2 {
		t.Fatalf("12 subscribers cost %d statements against %d for one: reads are not shared", many, one)
	}
}

// TestLiveTokenExpiryCuts: a subscription ends when its token expires, not
// at the next periodic re-check.
func TestLiveTokenExpiryCuts(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			db, dsn := openDB(t, dialect)
			s := startLive(t, db, liveConfig{dsn: dsn, live: live.Options{Recheck: time.Hour}})
			ws := s.NewWorkspace(t, "Expiring", "EXP")
			// Time enough to open both subscriptions on a loaded machine.
			expiresAt := time.Now().Add(3 * time.Second).UTC()
			r := s.GraphQL(t, ws.AdminToken, `mutation($in: CreateTokenInput!) { createToken(input: $in) { secret } }`,
				map[string]any{"in": map[string]any{"memberId": ws.ViewerID, "name": "short", "expiresAt": expiresAt.Format(time.RFC3339Nano)}})
			var out struct {
				CreateToken struct{ Secret string } `json:"createToken"`
			}
			r.Decode(t, &out)
			c := openWS(t, s, out.CreateToken.Secret)
			c.subscribe("1", subscribeEvents, nil)
			st, status, body := postSSE(t, s, out.CreateToken.Secret, subscribeEvents, nil)
			if status != http.StatusOK {
				t.Fatalf("SSE: %d %s", status, body)
			}
			ready(t, s, 2)
			if code := c.waitClosed(); code != live.CloseForbidden {
				t.Fatalf("closed with %d, want %d", code, live.CloseForbidden)
			}
			if reason := c.closeReason(); reason != "Forbidden: disconnected (token_expired)" {
				t.Fatalf("close reason %q", reason)
			}
			var last []byte
			for b := st.next(); b != nil; b = st.next() {
				last = b
			}
			if !strings.Contains(string(last), `"disconnected"`) || !strings.Contains(string(last), `"reason":"token_expired"`) {
				t.Fatalf("SSE's last event: %s", last)
			}
			late := time.Since(expiresAt)
			t.Logf("cut %s after the token expired", late.Round(time.Millisecond))
			if late < 0 || late > deliveryBound {
				t.Fatalf("cut %s after the token expired", late)
			}
		})
	}
}

// TestLiveAccessLostAsItOpens: a member removed after its request was
// authenticated but before its subscription started listening is refused,
// not streamed to: the subscription checks its credential again once it
// listens (the removal's own event came before anyone listened).
func TestLiveAccessLostAsItOpens(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			db, dsn := openDB(t, dialect)
			setup := startLive(t, db, liveConfig{dsn: dsn})
			ws := setup.NewWorkspace(t, "Racing", "RAC")
			hub := events.NewHub(events.HubOptions{})
			t.Cleanup(hub.Close)
			svc := core.New(db.Client, core.WithAnnouncer(server.Announcer(db, hub)), core.WithLockPolicy(core.LockPolicyFor(db.Dialect)))
			if db.Dialect == "postgres" {
				l, err := events.Listen(context.Background(), dsn, hub, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = l.Close() })
			}
			authn := auth.New(db)
			source := loader.New(db)
			admin, err := authn.Authenticate(context.Background(), "Bearer "+ws.AdminToken)
			if err != nil {
				t.Fatal(err)
			}
			log := slog.New(slog.DiscardHandler)
			writeErr := func(w http.ResponseWriter, r *http.Request, err error) { middleware.WriteError(w, r, log, err) }
			// Authenticated, then the member is removed, then the stream.
			authenticate := func(middleware.ErrorWriter) func(http.Handler) http.Handler {
				return middleware.Authenticate(authn, writeErr)
			}
			authenticated := func(remove bool) func(middleware.ErrorWriter) func(http.Handler) http.Handler {
				return func(middleware.ErrorWriter) func(http.Handler) http.Handler {
					return func(next http.Handler) http.Handler {
						return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
							if remove {
								if _, err := svc.RemoveMember(viewer.NewContext(r.Context(), admin), ws.MemberID); err != nil {
									t.Error(err)
								}
							}
							source.Middleware(next).ServeHTTP(w, r)
						})
					}
				}
			}
			lv := live.New(live.Options{Hub: hub, Authenticate: authn.Authenticate, Loaders: source.Into})
			h := gqlhttp.NewHandler(graph.NewResolver(svc), log, metrics.New(db.SQL),
				gqlhttp.Middleware{Authenticate: authenticate, Requests: authenticated(false), Streams: authenticated(true)}, lv, gqlhttp.NewDocuments(0, 0))
			ts := httptest.NewServer(middleware.WithRequestID(h))
			t.Cleanup(ts.Close)
			s := &liveServer{Server: &apitest.Server{URL: ts.URL, DB: db, Service: svc, HTTP: ts.Client()}, Hub: hub, Live: lv}
			if _, status, body := postSSE(t, s, ws.MemberToken, subscribeEvents, nil); status != http.StatusBadRequest || !strings.Contains(string(body), `"disconnected"`) {
				t.Fatalf("a subscription of a member removed as it opened: %d %s", status, body)
			}
			if st := lv.Stats(); st.Subscriptions != 0 || st.Groups != 0 || hub.Subscribers() != 0 {
				t.Fatalf("the refused subscription holds %+v, %d hub subscriptions", st, hub.Subscribers())
			}
		})
	}
}
