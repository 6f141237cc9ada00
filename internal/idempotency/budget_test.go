package idempotency_test

// What a workspace's keys keep is bounded: in bytes per workspace (its
// budget, a running total checked in one statement), and refusals are kept
// only when small.

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/procsvc/procsvc/ent/idempotencykey"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/idempotency"
	"github.com/procsvc/procsvc/internal/viewer"
)

// sized is a JSON body of exactly n bytes.
func sized(n int) string {
	const frame = `{"pad":""}`
	return `{"pad":"` + strings.Repeat("x", n-len(frame)) + `"}`
}

// storedBytes is what the store counts against the keyed server's
// workspace, checked against the bytes its keys really keep.
func (ks *keyedServer) storedBytes(t *testing.T, db *database.DB) int64 {
	t.Helper()
	ctx := viewer.NewContext(context.Background(), ks.viewer)
	counted, err := ks.store.StoredBytes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.Client.IdempotencyKey.Query().All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var kept int64
	for _, row := range rows {
		if row.StoredBytes != len(row.Body) {
			t.Fatalf("key %q keeps %d bytes, counts %d", row.Key, len(row.Body), row.StoredBytes)
		}
		kept += int64(row.StoredBytes)
	}
	if counted != kept {
		t.Fatalf("the budget counts %d bytes, the keys keep %d", counted, kept)
	}
	return counted
}

// expire makes key expired, as a day after its use.
func expire(t *testing.T, db *database.DB, key string) {
	t.Helper()
	if _, err := db.Client.IdempotencyKey.Update().Where(idempotencykey.Key(key)).
		SetExpiresAt(time.Now().UTC().Add(-time.Minute)).Save(viewer.System(context.Background())); err != nil {
		t.Fatal(err)
	}
}

// TestWorkspaceBudget: with a budget of 1 000 bytes, two answers of 400
// are kept; the third is sent in full but not kept (its retry is 409, too
// large to keep, and runs nothing), while the first two still replay. An
// expired key gives its bytes back when it is purged or taken over, and
// the next answer fits again. The running total always equals what the
// keys keep.
func TestWorkspaceBudget(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		ks := newKeyedServer(t, db, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(sized(400)))
		}, idempotency.Options{WorkspaceBytes: 1000})
		first := map[string]answer{}
		for _, key := range []string{"a", "b", "c"} {
			first[key] = ks.post(t, "/procedures", `{}`, key)
			if first[key].status != http.StatusOK || len(first[key].body) != 400 {
				t.Fatalf("%s: %d, %d bytes", key, first[key].status, len(first[key].body))
			}
		}
		if got := ks.storedBytes(t, db); got != 800 {
			t.Fatalf("%d bytes counted, want 800", got)
		}
		wantKeyError(t, ks.post(t, "/procedures", `{}`, "c"), http.StatusConflict, "conflict", "too large to keep")
		wantSameResponse(t, first["a"], ks.post(t, "/procedures", `{}`, "a"))
		wantSameResponse(t, first["b"], ks.post(t, "/procedures", `{}`, "b"))
		if n := ks.runs.Load(); n != 3 {
			t.Fatalf("%d runs, want 3", n)
		}

		// Purged: a's bytes come back, and d's answer fits.
		expire(t, db, "a")
		if n, err := ks.store.Purge(context.Background(), 0); err != nil || n != 1 {
			t.Fatalf("purged %d (%v)", n, err)
		}
		if got := ks.storedBytes(t, db); got != 400 {
			t.Fatalf("%d bytes counted after the purge, want 400", got)
		}
		d := ks.post(t, "/procedures", `{}`, "d")
		wantSameResponse(t, d, ks.post(t, "/procedures", `{}`, "d"))

		// Taken over when expired: b runs again, its old bytes given back
		// and its new answer counted.
		expire(t, db, "b")
		if a := ks.post(t, "/procedures", `{}`, "b"); a.status != http.StatusOK || a.replayed() {
			t.Fatalf("expired b: %d %v", a.status, a.header)
		}
		if got := ks.storedBytes(t, db); got != 800 {
			t.Fatalf("%d bytes counted after the takeover, want 800", got)
		}
		if n := ks.runs.Load(); n != 5 {
			t.Fatalf("%d runs, want 5", n)
		}
	})
}

// TestWorkspaceBudgetUnderConcurrency: ten keyed requests at once, each
// answering 300 bytes, against a budget of 1 000: exactly three answers
// are kept, never more, and the running total matches them.
func TestWorkspaceBudgetUnderConcurrency(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		ks := newKeyedServer(t, db, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(sized(300)))
		}, idempotency.Options{WorkspaceBytes: 1000})
		var wg sync.WaitGroup
		for i := range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if a := ks.post(t, "/procedures", `{}`, fmt.Sprint("concurrent-", i)); a.status != http.StatusOK {
					t.Errorf("%d: %d %s", i, a.status, a.body)
				}
			}()
		}
		wg.Wait()
		if got := ks.storedBytes(t, db); got != 900 {
			t.Fatalf("%d bytes counted, want 900", got)
		}
		replays := 0
		for i := range 10 {
			if a := ks.post(t, "/procedures", `{}`, fmt.Sprint("concurrent-", i)); a.replayed() {
				replays++
			} else if a.status != http.StatusConflict {
				t.Fatalf("%d: %d %s", i, a.status, a.body)
			}
		}
		if replays != 3 {
			t.Fatalf("%d replays, want 3", replays)
		}
	})
}

// TestRefusalsAreKeptSmall: a refusal (a 4xx, which wrote nothing) is kept
// for replay when its body is within MaxStoredRefusal; a larger one is not
// kept and frees its key, so its retry runs; a GraphQL answer whose every
// root field was refused counts as a refusal.
func TestRefusalsAreKeptSmall(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		for _, c := range []struct {
			name, path string
			status     int
			body       string
			kept       bool
		}{
			{"small 400", "/procedures", 400, sized(200), true},
			{"small 403", "/procedures", 403, `{"code":"forbidden"}`, true},
			{"400 at the bound", "/procedures", 400, sized(idempotency.MaxStoredRefusal), true},
			{"400 over the bound", "/procedures", 400, sized(idempotency.MaxStoredRefusal + 1), false},
			{"409 over the bound", "/procedures", 409, sized(8 * idempotency.MaxStoredRefusal), false},
			{"200 over the bound", "/procedures", 200, sized(8 * idempotency.MaxStoredRefusal), true},
			{"graphql forbidden", "/graphql", 200, `{"errors":[{"message":"m","path":["a"],"extensions":{"code":"forbidden"}}],"data":{"a":null}}`, true},
			{"graphql forbidden over the bound", "/graphql", 200, `{"errors":[{"message":"` + strings.Repeat("m", idempotency.MaxStoredRefusal) + `","path":["a"],"extensions":{"code":"forbidden"}}],"data":{"a":null}}`, false},
			{"graphql written over the bound", "/graphql", 200, `{"errors":[{"message":"` + strings.Repeat("m", idempotency.MaxStoredRefusal) + `","path":["b"],"extensions":{"code":"forbidden"}}],"data":{"a":{"id":"x"},"b":null}}`, true},
		} {
			t.Run(c.name, func(t *testing.T) {
				ks := newKeyedServer(t, db, func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(c.status)
					_, _ = w.Write([]byte(c.body))
				})
				body := `{"query":"mutation { a }"}`
				first := ks.post(t, c.path, body, "refusal")
				again := ks.post(t, c.path, body, "refusal")
				if c.kept {
					wantSameResponse(t, first, again)
				} else if again.replayed() || ks.runs.Load() != 2 {
					t.Fatalf("kept: replayed %v, %d runs", again.replayed(), ks.runs.Load())
				}
				want := int64(0)
				if c.kept {
					want = int64(len(c.body))
				}
				if got := ks.storedBytes(t, db); got != want {
					t.Fatalf("%d bytes counted, want %d", got, want)
				}
			})
		}
	})
}
