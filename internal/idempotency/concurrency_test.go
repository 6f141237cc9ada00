package idempotency_test

// Keys under concurrency and over time: duplicates in flight, abandoned
// keys, restarts, workspaces, expiry, and failed executions (the harness is
// in api_test.go).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent/category"
	"github.com/procsvc/procsvc/ent/idempotencykey"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/idempotency"
	"github.com/procsvc/procsvc/internal/viewer"
)

// TestConcurrentDuplicatesExecuteOnce: 20 identical keyed creates at once
// make one procedure; each of the others is either a replay of its
// response or 409 conflict "still in progress" with Retry-After.
func TestConcurrentDuplicatesExecuteOnce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		for _, face := range []string{"rest", "graphql"} {
			name := "concurrent-" + face + "."
			path, body := "/procedures", e.procBody(name)
			if face == "graphql" {
				path, body = "/graphql", gqlBody(createMutation, e.createVars(name))
			}
			const n = 20
			answers := make([]answer, n)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					answers[i] = send(t, e.s, "POST", path, e.ws.MemberToken, body, "same-"+face)
				}()
			}
			close(start)
			wg.Wait()
			var executed []answer
			replays, inProgress := 0, 0
			for _, a := range answers {
				switch {
				case a.status == 200 && !a.replayed():
					executed = append(executed, a)
				case a.status == 200:
					replays++
				case a.status == http.StatusConflict:
					if face == "rest" {
						wantKeyError(t, a, http.StatusConflict, "conflict", "still in progress")
					} else {
						wantGraphQLKeyError(t, a, http.StatusConflict, "conflict", "still in progress")
					}
					if a.header.Get("Retry-After") == "" {
						t.Fatalf("in-progress 409 without Retry-After")
					}
					inProgress++
				default:
					t.Fatalf("unexpected answer %d %s", a.status, a.body)
				}
			}
			if len(executed) != 1 {
				t.Fatalf("%s: %d executions, want 1", face, len(executed))
			}
			for _, a := range answers {
				if a.status == 200 && !bytes.Equal(a.body, executed[0].body) {
					t.Fatalf("a replay differs from the execution")
				}
			}
			if got := procedures(t, db, name); got != 1 {
				t.Fatalf("%s: %d procedures, want 1", face, got)
			}
			t.Logf("%s: 1 execution, %d replays, %d in progress", face, replays, inProgress)
			wantSameResponse(t, executed[0], send(t, e.s, "POST", path, e.ws.MemberToken, body, "same-"+face))
		}
	})
}

// viewerOf is the viewer a token of ws's member acts as.
func viewerOf(ws *apitest.Workspace) *viewer.Viewer {
	return &viewer.Viewer{WorkspaceID: uuid.MustParse(ws.ID), MemberID: uuid.MustParse(ws.MemberID), Role: viewer.RoleMember}
}

// claimAs claims key for the member's request, as a request in progress on
// another replica would.
func claimAs(t *testing.T, db *database.DB, ws *apitest.Workspace, method, path string, body []byte, key string) *idempotency.Claim {
	t.Helper()
	v := viewerOf(ws)
	fp := idempotency.Fingerprint(v, method, path, body)
	claim, replay, err := idempotency.New(db.Client, idempotency.Options{}).Claim(viewer.NewContext(context.Background(), v), key, fp)
	if err != nil || replay != nil || claim == nil {
		t.Fatalf("claim: %v %v", replay, err)
	}
	return claim
}

// TestInProgressAndAbandonedKeys: while the first request with a key runs
// (here: claimed through the store, as by another replica), the same
// request is 409 "still in progress" and runs nothing; once that claim is
// older than the lock timeout (the holder died), the next request takes
// it over and runs; the late holder can no longer record its outcome.
func TestInProgressAndAbandonedKeys(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		body := e.procBody("abandoned.")
		claim := claimAs(t, db, e.ws, "POST", "/procedures", body, "held")
		a := send(t, e.s, "POST", "/procedures", e.ws.MemberToken, body, "held")
		wantKeyError(t, a, http.StatusConflict, "conflict", "a request with this Idempotency-Key is still in progress")
		if a.header.Get("Retry-After") == "" {
			t.Fatal("no Retry-After")
		}
		if n := procedures(t, db, "abandoned."); n != 0 {
			t.Fatalf("%d procedures while the key was held", n)
		}
		// The holder died a lock timeout ago.
		ctx := viewer.System(context.Background())
		if _, err := db.Client.IdempotencyKey.Update().Where(idempotencykey.Key("held")).
			SetLockedAt(time.Now().UTC().Add(-idempotency.DefaultLockTimeout - time.Second)).Save(ctx); err != nil {
			t.Fatal(err)
		}
		taken := send(t, e.s, "POST", "/procedures", e.ws.MemberToken, body, "held")
		if taken.status != 200 || taken.replayed() {
			t.Fatalf("takeover: %d %s", taken.status, taken.body)
		}
		wantSameResponse(t, taken, send(t, e.s, "POST", "/procedures", e.ws.MemberToken, body, "held"))
		if kept, err := claim.Complete(viewer.NewContext(context.Background(), viewerOf(e.ws)), idempotency.Response{Status: 500}); err != nil || kept {
			t.Fatalf("the abandoned claim still recorded its outcome: %v %v", kept, err)
		}
		wantSameResponse(t, taken, send(t, e.s, "POST", "/procedures", e.ws.MemberToken, body, "held"))
		if n := procedures(t, db, "abandoned."); n != 1 {
			t.Fatalf("%d procedures, want 1", n)
		}
		// A claim released by its holder frees the key at once.
		body2 := e.procBody("released.")
		claim = claimAs(t, db, e.ws, "POST", "/procedures", body2, "released")
		if kept, err := claim.Release(viewer.NewContext(context.Background(), viewerOf(e.ws))); err != nil || !kept {
			t.Fatalf("release: %v %v", kept, err)
		}
		if a := send(t, e.s, "POST", "/procedures", e.ws.MemberToken, body2, "released"); a.status != 200 || a.replayed() {
			t.Fatalf("after release: %d %s", a.status, a.body)
		}
	})
}

// TestKeysSurviveARestart: a key recorded by one server is replayed by
// another over the same database (a restart, or another replica).
func TestKeysSurviveARestart(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		body := e.procBody("restart.")
		first := send(t, e.s, "POST", "/procedures", e.ws.MemberToken, body, "restart-1")
		gbody := gqlBody(createMutation, e.createVars("restart-gql."))
		gfirst := send(t, e.s, "POST", "/graphql", e.ws.MemberToken, gbody, "restart-2")
		if first.status != 200 || gfirst.status != 200 {
			t.Fatalf("first: %d %s / %d %s", first.status, first.body, gfirst.status, gfirst.body)
		}
		other := apitest.Start(t, db)
		wantSameResponse(t, first, send(t, other, "POST", "/procedures", e.ws.MemberToken, body, "restart-1"))
		wantSameResponse(t, gfirst, send(t, other, "POST", "/graphql", e.ws.MemberToken, gbody, "restart-2"))
		if n := procedures(t, db, "restart.") + procedures(t, db, "restart-gql."); n != 2 {
			t.Fatalf("%d procedures, want 2", n)
		}
	})
}

// TestKeysBelongToTheirWorkspace: a key used in workspace A never matches
// a request of workspace B, even for an identical request: B's runs.
func TestKeysBelongToTheirWorkspace(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		b := e.s.NewWorkspace(t, "Other", "OTH")
		body := []byte(`{"name":"tenant."}`)
		first := send(t, e.s, "POST", "/categories", e.ws.AdminToken, body, "shared")
		second := send(t, e.s, "POST", "/categories", b.AdminToken, body, "shared")
		if first.status != 200 || second.status != 200 || second.replayed() || bytes.Equal(first.body, second.body) {
			t.Fatalf("A: %d %s\nB: %d %v %s", first.status, first.body, second.status, second.header, second.body)
		}
		n, err := db.Client.Category.Query().Where(category.Name("tenant.")).Count(viewer.System(context.Background()))
		if err != nil || n != 2 {
			t.Fatalf("%d categories, want one per workspace (%v)", n, err)
		}
		// Each replays its own.
		wantSameResponse(t, first, send(t, e.s, "POST", "/categories", e.ws.AdminToken, body, "shared"))
		wantSameResponse(t, second, send(t, e.s, "POST", "/categories", b.AdminToken, body, "shared"))
		// A's key with B's different request: B's key is its own, so this
		// is a conflict with B's record, never a replay of A's.
		wantKeyError(t, send(t, e.s, "POST", "/categories", b.AdminToken, []byte(`{"name":"tenant-b."}`), "shared"), http.StatusConflict, "conflict", idempotency.Header)
	})
}

// TestExpiredKeysArePurged: an expired key no longer replays (the request
// runs again), even before it is purged; the purge deletes expired keys in
// batches and keeps live ones; the server's background purger runs at start.
func TestExpiredKeysArePurged(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		sys := viewer.System(context.Background())
		var first answer
		for i := range 5 {
			a := send(t, e.s, "POST", "/categories", e.ws.AdminToken, []byte(fmt.Sprintf(`{"name":"expiring %d"}`, i)), fmt.Sprint("exp-", i))
			if a.status != 200 {
				t.Fatalf("create: %d %s", a.status, a.body)
			}
			if i == 0 {
				first = a
			}
		}
		live := send(t, e.s, "POST", "/procedures", e.ws.MemberToken, e.procBody("live."), "live")
		expire := func() {
			t.Helper()
			if _, err := db.Client.IdempotencyKey.Update().Where(idempotencykey.KeyHasPrefix("exp-")).
				SetExpiresAt(time.Now().UTC().Add(-time.Minute)).Save(sys); err != nil {
				t.Fatal(err)
			}
		}
		expire()
		// Expired but not purged: the request runs again.
		again := send(t, e.s, "POST", "/categories", e.ws.AdminToken, []byte(`{"name":"expiring 0"}`), "exp-0")
		if again.replayed() || bytes.Equal(again.body, first.body) {
			t.Fatalf("an expired key replayed: %d %s", again.status, again.body)
		}
		expire()
		store := idempotency.New(db.Client, idempotency.Options{})
		n, err := store.Purge(context.Background(), 2)
		if err != nil || n != 5 {
			t.Fatalf("purged %d (%v), want 5", n, err)
		}
		if rows := keyRows(t, db); rows != 1 {
			t.Fatalf("%d keys left, want the live one", rows)
		}
		wantSameResponse(t, live, send(t, e.s, "POST", "/procedures", e.ws.MemberToken, e.procBody("live."), "live"))
		// The background purger: it purges when started, then every tick.
		if _, err := db.Client.IdempotencyKey.Update().SetExpiresAt(time.Now().UTC().Add(-time.Second)).Save(sys); err != nil {
			t.Fatal(err)
		}
		purged := make(chan int, 1)
		stop := idempotency.New(db.Client, idempotency.Options{Purged: func(n int, err error) {
			if err != nil {
				t.Errorf("purge: %v", err)
			}
			select {
			case purged <- n:
			default:
			}
		}}).StartPurger(context.Background(), time.Hour)
		got := <-purged
		stop()
		if got != 1 || keyRows(t, db) != 0 {
			t.Fatalf("the purger deleted %d, %d left", got, keyRows(t, db))
		}
		if a := send(t, e.s, "POST", "/procedures", e.ws.MemberToken, e.procBody("live."), "live"); a.status != 200 || a.replayed() {
			t.Fatalf("a purged key replayed: %d %s", a.status, a.body)
		}
		if n := procedures(t, db, "live."); n != 2 {
			t.Fatalf("%d procedures, want 2 (the purged key's request ran again)", n)
		}
	})
}

// flaky fails its first generation, then succeeds.
type flaky struct{ calls atomic.Int32 }

func (f *flaky) Generate(ctx context.Context, req core.GenerateRequest) (string, error) {
	if f.calls.Add(1) == 1 {
		return "", errors.New("the model is down")
	}
	return "# " + req.Name, nil
}

// TestFailedExecutionReleasesTheKey: a keyed create that fails with a 5xx
// (generation_failed, 502) is not recorded: the retry with the same key runs
// and succeeds, on both faces.
func TestFailedExecutionReleasesTheKey(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		var e *env
		for _, face := range []string{"rest", "graphql"} {
			gen := &flaky{}
			if s := apitest.Start(t, db, core.WithGenerator(gen)); e == nil {
				e = &env{s: s, db: db, ws: s.NewWorkspace(t, "Idem", "IDM")}
			} else {
				e.s = s
			}
			name := "generated-" + face + "."
			path := "/procedures"
			var body []byte
			if face == "rest" {
				var in map[string]any
				_ = json.Unmarshal(e.procBody(name), &in)
				in["generateProcedure"] = true
				body, _ = json.Marshal(in)
			} else {
				vars := e.createVars(name)
				vars["in"].(map[string]any)["generateProcedure"] = true
				path, body = "/graphql", gqlBody(createMutation, vars)
			}
			failed := send(t, e.s, "POST", path, e.ws.MemberToken, body, "gen-"+face)
			if !strings.Contains(string(failed.body), "generation_failed") {
				t.Fatalf("%s: the first attempt did not fail: %d %s", face, failed.status, failed.body)
			}
			retried := send(t, e.s, "POST", path, e.ws.MemberToken, body, "gen-"+face)
			if retried.status != 200 || retried.replayed() || strings.Contains(string(retried.body), "errors") {
				t.Fatalf("%s: the retry did not run: %d %s", face, retried.status, retried.body)
			}
			wantSameResponse(t, retried, send(t, e.s, "POST", path, e.ws.MemberToken, body, "gen-"+face))
			if n := procedures(t, db, name); n != 1 || gen.calls.Load() != 2 {
				t.Fatalf("%s: %d procedures, %d generations", face, n, gen.calls.Load())
			}
		}
	})
}
