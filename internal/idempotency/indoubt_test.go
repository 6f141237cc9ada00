package idempotency_test

// A keyed write whose commit outcome is unknown (the connection died during
// COMMIT, a read after the commit failed) never runs twice: its key commits
// with it, and the outcome is read back from the key. The faults are
// injected at one given point (dbtest.Faults), with no real outage.

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/ent/category"
	"github.com/procsvc/procsvc/ent/idempotencykey"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/idempotency"
	"github.com/procsvc/procsvc/internal/viewer"
)

// insertsProcedure matches the statement of a transaction that creates a
// procedure.
const insertsProcedure = "INSERT INTO procedures"

// keyedCreate is a keyed create of a procedure named name on face: its
// path and body.
func (e *env) keyedCreate(face, name string) (path string, body []byte) {
	if face == "rest" {
		return "/procedures", e.procBody(name)
	}
	return "/graphql", gqlBody(`mutation C($in: CreateProcedureInput!) { createProcedure(input: $in) { id name shortId category { name } } }`,
		e.createVars(name))
}

// wantUnavailable fails unless a is the unavailable answer of face: a 503
// with Retry-After, or GraphQL's error of that code.
func wantUnavailable(t *testing.T, face string, a answer) {
	t.Helper()
	if face == "rest" {
		if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" || a.err(t).Code != "unavailable" {
			t.Fatalf("want 503 unavailable with Retry-After, got %d %v %s", a.status, a.header, a.body)
		}
		return
	}
	if !strings.Contains(string(a.body), `"code":"unavailable"`) || strings.Contains(string(a.body), `"shortId"`) {
		t.Fatalf("want GraphQL's unavailable error, got %d %s", a.status, a.body)
	}
}

// keyRow is the stored row of key.
func keyRow(t *testing.T, db *database.DB, key string) (state string, commits int, found bool) {
	t.Helper()
	rows, err := db.Client.IdempotencyKey.Query().Where(idempotencykey.Key(key)).All(viewer.System(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		return "", 0, false
	}
	return string(rows[0].State), rows[0].Commits, true
}

// TestInDoubtCommitIsResolvedFromTheKey: a keyed create's COMMIT reaches
// the database and commits, but its answer is lost (the connection dies):
// the write reads its outcome back from its key, answers as committed, and
// its retry replays that answer. When the connection dies before the
// COMMIT is sent, the key shows nothing committed: the write answers
// unavailable, its key is freed, and the retry runs it, once. On both
// faces and both databases.
func TestInDoubtCommitIsResolvedFromTheKey(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		f := dbtest.InjectFaults(t, db)
		for _, face := range []string{"rest", "graphql"} {
			name := "lost-answer-" + face + "."
			path, body := e.keyedCreate(face, name)
			f.LoseCommitAnswer(insertsProcedure)
			first := send(t, e.s, "POST", path, e.ws.MemberToken, body, name)
			if f.Pending() != 0 {
				t.Fatalf("%s: the commit's answer was not lost", face)
			}
			if first.status != http.StatusOK || first.replayed() || !strings.Contains(string(first.body), name) ||
				strings.Contains(string(first.body), `"errors"`) {
				t.Fatalf("%s: a committed write whose answer was lost: %d %s", face, first.status, first.body)
			}
			if first.header.Get("X-Workspace-Version") == "" {
				t.Fatalf("%s: the resolved commit reports no workspace version", face)
			}
			wantSameResponse(t, first, send(t, e.s, "POST", path, e.ws.MemberToken, body, name))
			if n := procedures(t, db, name); n != 1 {
				t.Fatalf("%s: %d procedures, want 1", face, n)
			}
			if state, commits, _ := keyRow(t, db, name); state != "completed" || commits != 1 {
				t.Fatalf("%s: key %s with %d commits, want completed with 1", face, state, commits)
			}

			name = "dropped-commit-" + face + "."
			path, body = e.keyedCreate(face, name)
			f.DropCommit(insertsProcedure)
			dropped := send(t, e.s, "POST", path, e.ws.MemberToken, body, name)
			if f.Pending() != 0 {
				t.Fatalf("%s: the commit was not dropped", face)
			}
			wantUnavailable(t, face, dropped)
			if n := procedures(t, db, name); n != 0 {
				t.Fatalf("%s: %d procedures after a dropped commit", face, n)
			}
			if _, _, found := keyRow(t, db, name); found {
				t.Fatalf("%s: the key of a write that did not commit was not freed", face)
			}
			retried := send(t, e.s, "POST", path, e.ws.MemberToken, body, name)
			if retried.status != http.StatusOK || retried.replayed() || strings.Contains(string(retried.body), `"errors"`) {
				t.Fatalf("%s: the retry did not run: %d %s", face, retried.status, retried.body)
			}
			wantSameResponse(t, retried, send(t, e.s, "POST", path, e.ws.MemberToken, body, name))
			if n := procedures(t, db, name); n != 1 {
				t.Fatalf("%s: %d procedures, want 1", face, n)
			}
		}
	})
}

// TestAnswerLostAfterTheCommit: a keyed create commits, then the read that
// renders its answer fails (answered unavailable). The key is not freed:
// the retry is 409 conflict saying the write committed and its answer was
// lost, and nothing runs again. On both faces and both databases.
func TestAnswerLostAfterTheCommit(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		f := dbtest.InjectFaults(t, db)
		for _, face := range []string{"rest", "graphql"} {
			name := "unrendered-" + face + "."
			path, body := e.keyedCreate(face, name)
			// The answer shows the procedure's category, read once the
			// write has committed.
			f.AfterCommit(insertsProcedure, func() { f.FailStatements("FROM categories", 1) })
			first := send(t, e.s, "POST", path, e.ws.MemberToken, body, name)
			if f.Pending() != 0 {
				t.Fatalf("%s: the read after the commit did not fail", face)
			}
			wantUnavailable(t, face, first)
			if n := procedures(t, db, name); n != 1 {
				t.Fatalf("%s: %d procedures, want the 1 committed", face, n)
			}
			for range 2 {
				again := send(t, e.s, "POST", path, e.ws.MemberToken, body, name)
				if face == "rest" {
					wantKeyError(t, again, http.StatusConflict, "conflict", "the write committed, but a database failure lost its answer; fetch the record instead")
				} else {
					wantGraphQLKeyError(t, again, http.StatusConflict, "conflict", "the write committed, but a database failure lost its answer; fetch the record instead")
				}
			}
			if n := procedures(t, db, name); n != 1 {
				t.Fatalf("%s: %d procedures after the retries, want 1", face, n)
			}
		}
	})
}

// TestKeyInDoubtUntilItsRetryResolvesIt: a keyed write's commit outcome is
// unknown, and its key cannot be read before the write answers (the
// database stays away): the write answers unavailable, and the request's
// later writes do not run. When the key can be read as the outcome is
// recorded, it is resolved then: a write that committed completes it with
// "answer lost" (the retry is 409 conflict and runs nothing), one that did
// not frees it (the retry runs). When it cannot, the key is left in
// progress, in doubt, never freed: its retry is 409 "still in progress"
// until the lock timeout, then resolves it from the database the same way.
func TestKeyInDoubtUntilItsRetryResolvesIt(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		f := dbtest.InjectFaults(t, db)
		svc := core.New(db.Client)
		store := idempotency.New(db.Client, idempotency.Options{})
		v := viewerOf(e.ws)
		vctx := viewer.NewContext(context.Background(), v)
		count := func(name string) int {
			n, err := db.Client.Category.Query().Where(category.Name(name)).Count(viewer.System(context.Background()))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		for _, c := range []struct {
			name                  string
			committed, untilRetry bool
		}{
			{"committed-resolved-on-record", true, false},
			{"dropped-resolved-on-record", false, false},
			{"committed-resolved-by-retry", true, true},
			{"dropped-resolved-by-retry", false, true},
		} {
			key := "doubt-" + c.name
			fp := idempotency.Fingerprint(v, "POST", "/graphql", []byte(key))
			ctx, d := store.Defer(vctx, key, fp)
			if err := idempotency.ClaimDeferred(ctx, func() bool { return false }); err != nil {
				t.Fatalf("%s: claim: %v", c.name, err)
			}
			if c.committed {
				f.LoseCommitAnswer("INSERT INTO categories")
			} else {
				f.DropCommit("INSERT INTO categories")
			}
			f.FailStatements("FROM idempotency_keys", -1)
			// The write resolves for half the time it has left.
			wctx, cancel := context.WithTimeout(ctx, time.Second)
			_, err := svc.CreateCategory(wctx, key)
			cancel()
			if apperr.CodeOf(err) != apperr.Unavailable {
				t.Fatalf("%s: the write answered %v, want unavailable", c.name, err)
			}
			// The mutation's next root field writes nothing once one's
			// outcome is unknown.
			if _, err := svc.CreateCategory(ctx, key+"-next"); apperr.CodeOf(err) != apperr.Unavailable {
				t.Fatalf("%s: a later write of the request answered %v, want unavailable", c.name, err)
			}
			if !c.untilRetry {
				f.Heal()
			}
			answer, _ := json.Marshal(map[string]any{"errors": []any{map[string]any{"message": "unavailable", "path": []string{"createCategory"},
				"extensions": map[string]string{"code": "unavailable"}}}, "data": nil})
			d.Finish(ctx, idempotency.Response{Status: http.StatusOK, ContentType: "application/json", Body: answer})
			f.Heal()
			if c.untilRetry {
				commits := 0
				if c.committed {
					commits = 1
				}
				if state, n, found := keyRow(t, db, key); !found || state != "in_progress" || n != commits {
					t.Fatalf("%s: key %v %s with %d commits, want it in progress with %d", c.name, found, state, n, commits)
				}
				if _, _, err := store.Claim(vctx, key, fp); !idempotency.IsInProgress(err) {
					t.Fatalf("%s: a retry before the lock timeout: %v, want in progress", c.name, err)
				}
				// The lock timeout passes.
				if _, err := db.Client.IdempotencyKey.Update().Where(idempotencykey.Key(key)).
					SetLockedAt(time.Now().UTC().Add(-idempotency.DefaultLockTimeout - time.Second)).Save(viewer.System(context.Background())); err != nil {
					t.Fatal(err)
				}
			}
			claim, replay, err := store.Claim(vctx, key, fp)
			if c.committed {
				if claim != nil || replay != nil || apperr.CodeOf(err) != apperr.Conflict ||
					!strings.Contains(err.Error(), "the write committed, but a database failure lost its answer") {
					t.Fatalf("%s: the retry: %v %v %v, want conflict, answer lost", c.name, claim, replay, err)
				}
			} else if claim == nil || err != nil {
				t.Fatalf("%s: the retry did not get the key: %v %v", c.name, replay, err)
			}
			want := 0
			if c.committed {
				want = 1
			}
			if n, next := count(key), count(key+"-next"); n != want || next != 0 {
				t.Fatalf("%s: %d categories, %d of the later write, want %d and 0", c.name, n, next, want)
			}
		}
	})
}

// TestKeyedWriteStatements: a keyed write sends 4 statements more than the
// same write unkeyed, on both faces and both databases: the key's claim
// (INSERT), its count in the write's own transaction (UPDATE: the key
// commits with the write), and the recorded answer, charged to the
// workspace's budget (two UPDATEs in one transaction). An unkeyed write
// sends nothing for keys.
func TestKeyedWriteStatements(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		// The workspace's first kept answer creates its budget row, the
		// token's first request records its use, the first procedure
		// sets up what the next ones update.
		send(t, e.s, "POST", "/procedures", e.ws.MemberToken, e.procBody("warm."), "warm")
		for _, face := range []string{"rest", "graphql"} {
			statements := func(name, key string) int64 {
				path, body := e.keyedCreate(face, name)
				before := db.Statements()
				var a answer
				if key == "" {
					a = send(t, e.s, "POST", path, e.ws.MemberToken, body)
				} else {
					a = send(t, e.s, "POST", path, e.ws.MemberToken, body, key)
				}
				if a.status != http.StatusOK || strings.Contains(string(a.body), `"errors"`) {
					t.Fatalf("%s: %d %s", face, a.status, a.body)
				}
				return db.Statements() - before
			}
			unkeyed := statements("unkeyed-"+face+".", "")
			keyed := statements("keyed-"+face+".", "keyed-"+face)
			if keyed-unkeyed != 4 {
				t.Fatalf("%s: a keyed create sent %d statements, unkeyed %d: want 4 more", face, keyed, unkeyed)
			}
		}
	})
}

// TestCommitOnItsWayIsWaitedFor: on PostgreSQL, a keyed create's COMMIT
// fails on the client while the transaction is still open on the server,
// as when the COMMIT is on its way: reading the outcome from the key waits
// for that transaction to end rather than reading the key as it was, so
// when it then commits the write answers 200, and its retry replays that.
func TestCommitOnItsWayIsWaitedFor(t *testing.T) {
	dbtest.NeedPostgres(t)
	db := dbtest.Open(t, "postgres")
	e := newEnv(t, db)
	f := dbtest.InjectFaults(t, db)
	commit := f.HoldCommit(t, insertsProcedure)
	path, body := e.keyedCreate("rest", "on-its-way.")
	answered := make(chan answer, 1)
	go func() {
		a, err := try(context.Background(), e.s, "POST", path, e.ws.MemberToken, body, "on-its-way")
		if err != nil {
			t.Error(err)
		}
		answered <- a
	}()
	// The outcome's read waits on the key's row, which the open
	// transaction holds.
	waiting := func() bool {
		var n int
		if err := db.SQL.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock' AND query LIKE '%idempotency_keys%FOR SHARE%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	}
	deadline := time.Now().Add(30 * time.Second)
	for !waiting() {
		select {
		case a := <-answered:
			t.Fatalf("answered without waiting for the transaction: %d %s", a.status, a.body)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the outcome's read never waited for the open transaction")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := commit(); err != nil {
		t.Fatal(err)
	}
	first := <-answered
	if first.status != http.StatusOK || first.replayed() || !strings.Contains(string(first.body), "on-its-way.") {
		t.Fatalf("a write that committed once its COMMIT arrived: %d %s", first.status, first.body)
	}
	wantSameResponse(t, first, send(t, e.s, "POST", path, e.ws.MemberToken, body, "on-its-way"))
	if n := procedures(t, db, "on-its-way."); n != 1 {
		t.Fatalf("%d procedures, want 1", n)
	}
}
