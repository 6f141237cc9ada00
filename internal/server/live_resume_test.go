package server_test

// Resumed subscriptions (docs/api.md, "Resuming a subscription"): a
// subscriber that passes afterVersion is replayed every event after it from
// the change log, on whichever replica it reconnects to, then continues
// live, with nothing missed or repeated at the seam.

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent/event"
	"github.com/procsvc/procsvc/graph/live"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/viewer"
)

const resumeEvents = `subscription($f: ProcedureEventFilter, $after: Int) {
	procedureEvents(filter: $f, afterVersion: $after) { kind procedureId workspaceVersion } }`

// procedureEventVersions are the versions of the logged events a
// procedureEvents subscriber is sent, after version: what a resumed
// subscription must deliver, in order.
func procedureEventVersions(t *testing.T, db *database.DB, ws string, after int64) []int64 {
	t.Helper()
	id := uuid.MustParse(ws)
	rows, err := db.Client.Event.Query().Where(event.WorkspaceID(id), event.VersionGT(after), event.ProcedureIDNotNil()).
		Order(event.ByVersion()).All(viewer.System(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.Version
	}
	return out
}

// workspaceVersion is ws's version now.
func workspaceVersion(t *testing.T, db *database.DB, ws string) int64 {
	t.Helper()
	w, err := db.Client.Workspace.Get(viewer.System(context.Background()), uuid.MustParse(ws))
	if err != nil {
		t.Fatal(err)
	}
	return w.Version
}

// receiveVersions reads subscription id's events until one at version
// last, and returns the versions it was sent.
func receiveVersions(t *testing.T, w *wsClient, id string, last int64) []int64 {
	t.Helper()
	var got []int64
	for {
		e := w.next(id)
		if e.Kind == "REFETCH" {
			t.Fatalf("REFETCH after %v; want the events up to %d", got, last)
		}
		got = append(got, int64(e.WorkspaceVersion))
		if int64(e.WorkspaceVersion) >= last {
			return got
		}
	}
}

// secondReplica serves db again, as a replica that starts after the first
// one stopped: its own hub, live updates and (on PostgreSQL) listener.
func secondReplica(t *testing.T, db *database.DB, dsn string) *liveServer {
	t.Helper()
	if dsn != "" {
		db = openReplica(t, dsn)
	}
	return startLive(t, db, liveConfig{dsn: dsn})
}

func TestLiveResumeAcrossReplicas(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		db, dsn := openDB(t, dialect)
		first := startLive(t, db, liveConfig{dsn: dsn})
		ws := first.NewWorkspace(t, "Resume", "RSM")
		id := createProcedure(t, first, ws, ws.MemberToken, "Resumed", "")
		w := openWS(t, first, ws.ViewToken)
		w.subscribe("1", resumeEvents, nil)
		waitUntil(t, "the subscription listens", func() bool { return first.Live.Stats().Subscriptions == 1 })
		renameProcedure(t, first, ws.MemberToken, id, "seen")
		seen := int64(w.next("1").WorkspaceVersion)

		// The replica goes away; writes go on meanwhile, of every kind a
		// subscriber is sent, and some it is not.
		first.Hub.Close()
		renameProcedure(t, first, ws.MemberToken, id, "missed 1")
		gql(t, first, ws.MemberToken, `mutation($id: ID!) { addComment(input: {procedureId: $id, text: "missed 2"}) { id } }`, map[string]any{"id": id})
		gql(t, first, ws.MemberToken, `mutation { createCategory(input: {name: "not a procedure event"}) { id } }`, nil)
		gql(t, first, ws.MemberToken, `mutation($id: ID!) { moveProcedure(id: $id, state: COMPLETED) { id } }`, map[string]any{"id": id})
		missed := procedureEventVersions(t, db, ws.ID, seen)
		if len(missed) != 3 {
			t.Fatalf("log after %d: %v; want the 3 procedure events written since", seen, missed)
		}

		second := secondReplica(t, db, dsn)
		r := openWS(t, second, ws.ViewToken)
		r.subscribe("2", resumeEvents, map[string]any{"after": seen})
		replayed := receiveVersions(t, r, "2", missed[len(missed)-1])
		if fmt.Sprint(replayed) != fmt.Sprint(missed) {
			t.Fatalf("resumed after %d: sent %v; want %v", seen, replayed, missed)
		}
		// A subscriber resuming from another version shares the group:
		// the version is the subscriber's, not the operation's.
		r.subscribe("3", resumeEvents, map[string]any{"after": missed[1]})
		if got := receiveVersions(t, r, "3", missed[2]); fmt.Sprint(got) != fmt.Sprint(missed[2:]) {
			t.Fatalf("resumed after %d: sent %v; want %v", missed[1], got, missed[2:])
		}
		if st := second.Live.Stats(); st.Groups != 1 || st.Subscriptions != 2 {
			t.Fatalf("two subscribers resuming from different versions: %d groups, %d subscriptions; want 1 and 2", st.Groups, st.Subscriptions)
		}
		// Then live, on the new replica, from the next write on.
		renameProcedure(t, second, ws.MemberToken, id, "live")
		now := workspaceVersion(t, db, ws.ID)
		heard := map[string]bool{}
		for range 2 {
			m := r.recv()
			if e := decodeEvent(t, m.Payload); m.Type != "next" || e.Kind != "UPDATED" || int64(e.WorkspaceVersion) != now {
				t.Fatalf("after the replay, %s %s: %+v; want the live UPDATED at the workspace's version %d", m.Type, m.ID, e, now)
			}
			heard[m.ID] = true
		}
		if !heard["2"] || !heard["3"] {
			t.Fatalf("the live event reached %v; want subscriptions 2 and 3", heard)
		}
	})
}

// TestLiveResumeSeam: a subscription resumed while writes commit at full
// speed receives every event after its version exactly once, in order:
// those committed before it read the log from the log, the others live.
func TestLiveResumeSeam(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		db, dsn := openDB(t, dialect)
		s := startLive(t, db, liveConfig{dsn: dsn, buffer: 4096, live: live.Options{Buffer: 4096}})
		ws := s.NewWorkspace(t, "Seam", "SEAM")
		id := createProcedure(t, s, ws, ws.MemberToken, "Seam", "")
		from := workspaceVersion(t, db, ws.ID)

		ctx, stop := context.WithCancel(context.Background())
		var writes sync.WaitGroup
		writes.Add(1)
		go func() {
			defer writes.Done()
			for i := 0; ctx.Err() == nil; i++ {
				if r := s.GraphQL(t, ws.MemberToken, `mutation($id: ID!, $n: String!) { updateProcedure(id: $id, input: {name: $n}) { id } }`,
					map[string]any{"id": id, "n": fmt.Sprintf("write %d", i)}); len(r.Errors) > 0 {
					t.Errorf("write %d: %+v", i, r.Errors)
					return
				}
			}
		}()
		// Subscribers resume at several points of the stream of writes.
		var clients []*wsClient
		for i := range 4 {
			for workspaceVersion(t, db, ws.ID) < from+int64(5*(i+1)) {
				time.Sleep(time.Millisecond)
			}
			c := openWS(t, s, ws.ViewToken)
			c.subscribe("s", resumeEvents, map[string]any{"after": from})
			clients = append(clients, c)
		}
		for workspaceVersion(t, db, ws.ID) < from+40 {
			time.Sleep(time.Millisecond)
		}
		stop()
		writes.Wait()
		want := procedureEventVersions(t, db, ws.ID, from)
		for i, c := range clients {
			if got := receiveVersions(t, c, "s", want[len(want)-1]); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("subscriber %d sent %v; want every version after %d once, in order: %v", i, got, from, want)
			}
		}
	})
}

// TestLiveResumeRefetch: a version the log can no longer replay — older
// than its retention, or further behind than ReplayLimit — is answered
// with one REFETCH, then live events.
func TestLiveResumeRefetch(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		db, dsn := openDB(t, dialect)
		s := startLive(t, db, liveConfig{dsn: dsn, live: live.Options{ReplayLimit: 3}})
		ws := s.NewWorkspace(t, "Refetch", "RFT")
		id := createProcedure(t, s, ws, ws.MemberToken, "Refetch", "")
		start := workspaceVersion(t, db, ws.ID)
		for i := range 4 {
			renameProcedure(t, s, ws.MemberToken, id, fmt.Sprint("rename ", i))
		}
		expectRefetchThenLive := func(name string, after int64) {
			t.Helper()
			c := openWS(t, s, ws.ViewToken)
			c.subscribe("r", resumeEvents, map[string]any{"after": after})
			if e := c.next("r"); e.Kind != "REFETCH" {
				t.Fatalf("%s: first event %+v; want REFETCH", name, e)
			}
			renameProcedure(t, s, ws.MemberToken, id, name)
			if e := c.next("r"); e.Kind != "UPDATED" {
				t.Fatalf("%s: after the REFETCH %+v; want the live UPDATED", name, e)
			}
		}
		// 4 events behind, 3 replayed at most.
		expectRefetchThenLive("too far behind", start)
		// 3 behind: replayed.
		logged := procedureEventVersions(t, db, ws.ID, 0)
		c := openWS(t, s, ws.ViewToken)
		c.subscribe("r", resumeEvents, map[string]any{"after": logged[len(logged)-4]})
		if got, want := receiveVersions(t, c, "r", logged[len(logged)-1]), logged[len(logged)-3:]; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("3 behind: sent %v; want %v", got, want)
		}
		// Retention pruned what followed the version.
		if _, err := s.Service.PruneEvents(context.Background(), time.Now().Add(time.Hour), 2); err != nil {
			t.Fatal(err)
		}
		expectRefetchThenLive("pruned", logged[len(logged)-1]-1)
	})
}

// TestLiveResumeRefused: a version that is negative, or ahead of the
// workspace, is refused validation_failed.
func TestLiveResumeRefused(t *testing.T) {
	db := dbtest.Open(t, "sqlite")
	s := startLive(t, db, liveConfig{})
	ws := s.NewWorkspace(t, "Refused", "RFS")
	w := openWS(t, s, ws.ViewToken)
	for i, after := range []int64{-1, workspaceVersion(t, db, ws.ID) + 1} {
		id := fmt.Sprint(i)
		w.subscribe(id, resumeEvents, map[string]any{"after": after})
		if code := w.refused(id); code != "validation_failed" {
			t.Fatalf("afterVersion %d: refused %s; want validation_failed", after, code)
		}
	}
}

// TestLiveResumeVariableOrLiteral: afterVersion given as a variable or as
// an inline literal resumes alike — the same events replayed, the same
// refusal of a negative version — and a variable the document also uses
// elsewhere keeps subscribers with different values apart (it changes
// what they are sent), while one used by afterVersion alone does not.
func TestLiveResumeVariableOrLiteral(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		db, dsn := openDB(t, dialect)
		s := startLive(t, db, liveConfig{dsn: dsn})
		ws := s.NewWorkspace(t, "Literal", "LIT")
		id := createProcedure(t, s, ws, ws.MemberToken, "Literal", "")
		from := workspaceVersion(t, db, ws.ID)
		for i := range 3 {
			renameProcedure(t, s, ws.MemberToken, id, fmt.Sprint("rename ", i))
		}
		want := procedureEventVersions(t, db, ws.ID, from)
		last := want[len(want)-1]
		literal := func(after int64) string {
			return fmt.Sprintf(`subscription { procedureEvents(afterVersion: %d) { kind procedureId workspaceVersion } }`, after)
		}

		// Each subscriber on a socket of its own: one socket's events of
		// several subscriptions interleave.
		subscribe := func(id, query string, vars map[string]any) *wsClient {
			c := openWS(t, s, ws.ViewToken)
			c.subscribe(id, query, vars)
			return c
		}
		expect := func(c *wsClient, id string, after int64, want []int64) {
			t.Helper()
			if got := receiveVersions(t, c, id, last); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%s, afterVersion %d: sent %v; want %v", id, after, got, want)
			}
		}
		expect(subscribe("variable", resumeEvents, map[string]any{"after": from}), "variable", from, want)
		expect(subscribe("literal", literal(from), nil), "literal", from, want)
		expect(subscribe("variable-later", resumeEvents, map[string]any{"after": want[1]}), "variable-later", want[1], want[2:])
		expect(subscribe("literal-later", literal(want[1]), nil), "literal-later", want[1], want[2:])
		// The two variable subscribers share one group; each literal is a
		// document of its own.
		if st := s.Live.Stats(); st.Groups != 3 {
			t.Fatalf("resumers by variable (2) and by literal (2): %d groups; want 3", st.Groups)
		}

		// The variable also pages the procedure's comments: subscribers
		// with different values are sent different things.
		const twice = `subscription($after: Int) { procedureEvents(afterVersion: $after) {
			kind procedureId workspaceVersion procedure { comments(first: $after) { totalCount } } } }`
		expect(subscribe("twice", twice, map[string]any{"after": from}), "twice", from, want)
		expect(subscribe("twice-later", twice, map[string]any{"after": want[1]}), "twice-later", want[1], want[2:])
		if st := s.Live.Stats(); st.Groups != 5 {
			t.Fatalf("two subscribers whose afterVersion variable also pages comments: %d groups in all; want 5 (one each)", st.Groups)
		}

		w := openWS(t, s, ws.ViewToken)
		for _, c := range []struct {
			name, query string
			vars        map[string]any
		}{
			{"variable", resumeEvents, map[string]any{"after": -1}},
			{"literal", literal(-1), nil},
		} {
			w.subscribe("negative-"+c.name, c.query, c.vars)
			if code := w.refused("negative-" + c.name); code != "validation_failed" {
				t.Fatalf("afterVersion -1 as a %s: refused %s; want validation_failed", c.name, code)
			}
		}
	})
}

// eachDialect runs fn on each database the tests have.
func eachDialect(t *testing.T, fn func(t *testing.T, dialect string)) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) { fn(t, dialect) })
	}
}
