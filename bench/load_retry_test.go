package bench_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/server"
	"github.com/procsvc/procsvc/internal/viewer"
)

// slowWrites injects the two faults a client timeout stands for, each on
// every third Idempotency-Key's first request:
//
//   - a lost answer: the write runs to completion on the server, and its
//     answer is withheld until the client gives up (the case a retry
//     without a key would duplicate);
//   - a slow answer: the write runs, but its answer (and so the recording of
//     its outcome) is held until the client gave up and its retry was
//     answered, which is therefore a 409 "still in progress".
type slowWrites struct {
	next          http.Handler
	mu            sync.Mutex
	seen          map[string]bool
	held          map[string]chan struct{}
	n             int
	lost, delayed atomic.Int64
	// released counts faulty writes whose outcome released their key
	// instead of being stored (a 5xx or an unavailable error, which a loaded
	// machine can produce): their retries run afresh rather than replay.
	released atomic.Int64
}

// releases reports whether a response with status and body leaves its
// Idempotency-Key free (internal/idempotency stores neither 5xx, 429 nor
// GraphQL answers carrying those errors).
func releases(status int, body []byte) bool {
	return status >= 500 || status == http.StatusTooManyRequests ||
		bytes.Contains(body, []byte(`"code":"unavailable"`)) || bytes.Contains(body, []byte(`"code":"rate_limited"`))
}

func (l *slowWrites) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	var lose bool
	var hold, retryOfHeld chan struct{}
	if key != "" {
		l.mu.Lock()
		if !l.seen[key] {
			l.seen[key] = true
			l.n++
			switch l.n % 3 {
			case 0:
				lose = true
			case 1:
				hold = make(chan struct{})
				l.held[key] = hold
			}
		} else if ch, ok := l.held[key]; ok {
			retryOfHeld = ch
			delete(l.held, key)
		}
		l.mu.Unlock()
	}
	// The faulty requests' writes run to completion whatever the client
	// does: on a loaded machine a write can outlast the client's timeout,
	// and cancelling it would roll it back and release its key (so its
	// retry would run afresh instead of replaying), which is not the fault
	// these requests stand for.
	switch {
	case lose:
		l.lost.Add(1)
		rec := httptest.NewRecorder()
		l.next.ServeHTTP(rec, r.WithContext(context.WithoutCancel(r.Context())))
		if releases(rec.Code, rec.Body.Bytes()) {
			l.released.Add(1)
		}
		<-r.Context().Done() // the client timed out
	case hold != nil:
		l.delayed.Add(1)
		hw := &heldWriter{ResponseWriter: w, wait: func() {
			<-r.Context().Done() // the client timed out
			<-hold               // and its retry was answered
		}}
		l.next.ServeHTTP(hw, r.WithContext(context.WithoutCancel(r.Context())))
		if releases(hw.status, hw.body.Bytes()) {
			l.released.Add(1)
		}
	case retryOfHeld != nil:
		l.next.ServeHTTP(w, r)
		close(retryOfHeld)
	default:
		l.next.ServeHTTP(w, r)
	}
}

// heldWriter blocks the response's start until wait returns, and keeps
// its status and body.
type heldWriter struct {
	http.ResponseWriter
	wait    func()
	started bool
	status  int
	body    bytes.Buffer
}

func (h *heldWriter) WriteHeader(code int) {
	if !h.started {
		h.started = true
		h.status = code
		h.wait()
	}
	h.ResponseWriter.WriteHeader(code)
}

func (h *heldWriter) Write(b []byte) (int, error) {
	if !h.started {
		h.WriteHeader(http.StatusOK)
	}
	h.body.Write(b)
	return h.ResponseWriter.Write(b)
}

// TestLoadToolRetriesWithIdempotencyKeys runs the load tool with a small
// client timeout, retries and Idempotency-Keys, on both databases and both
// APIs, while a third of the writes lose their answer after running and
// another third answer only after their retry was refused as in progress
// (slowWrites; any other request may time out too): every acknowledged
// create is found exactly once, no create (acknowledged or not) twice, and
// the database holds each name the run created once.
func TestLoadToolRetriesWithIdempotencyKeys(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		for _, api := range []string{"rest", "graphql"} {
			t.Run(dialect+"/"+api, func(t *testing.T) {
				db := dbtest.Open(t, dialect)
				seeded, err := bench.Seed(context.Background(), db.Client, "Load", "LOD", bench.Shape{Procedures: 50, Projects: 2, Categories: 2, Members: 2, MaxComments: 1}, 7)
				if err != nil {
					t.Fatal(err)
				}
				faults := &slowWrites{seen: map[string]bool{}, held: map[string]chan struct{}{}, next: server.NewHandler(server.Deps{DB: db, Service: core.New(db.Client),
					Log: slog.New(slog.NewTextHandler(io.Discard, nil)), ResponseCacheBytes: 16 << 20})}
				ts := httptest.NewServer(faults)
				defer ts.Close()
				cfg := bench.LoadConfig{URL: ts.URL, Token: seeded.AdminToken, Clients: 4, Duration: time.Minute,
					MaxRequests: 120, API: api, WriteRatio: 0.6, PageSize: 10,
					IdempotencyKeys: true, Retries: 10, RetryBackoff: 5 * time.Millisecond, RequestTimeout: 250 * time.Millisecond}
				rep, err := bench.Load(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				var out bytes.Buffer
				rep.Print(&out, cfg)
				t.Log(out.String())
				lost, delayed, released := int(faults.lost.Load()), int(faults.delayed.Load()), int(faults.released.Load())
				// A request out of retries ends on its last answer: a
				// timeout, or a 409 while the first attempt still runs.
				for code := range rep.Errors {
					if code != "timeout" && code != "in_progress" {
						t.Fatalf("errors other than exhausted retries: %v", rep.Errors)
					}
				}
				if rep.Requests != 120 || rep.Created == 0 || rep.Deleted == 0 {
					t.Fatalf("writes not exercised: %+v", rep)
				}
				// Every faulty request times out at the client and is
				// retried: exact. Replays and 409s are answers the client
				// must read before its own timeout, which a slow machine
				// (the race detector) does not always give; that they
				// happen is what counts here, and the database check below
				// proves no write ran twice.
				if lost == 0 || delayed == 0 || rep.Timeouts < lost+delayed || rep.Retries < lost+delayed ||
					rep.Replays == 0 || rep.InProgress == 0 || rep.Replays+rep.InProgress < (lost+delayed-released)/2 {
					t.Fatalf("%d answers lost and %d delayed (%d of them released their key), but %d timeouts, %d retries, %d replays, %d in progress",
						lost, delayed, released, rep.Timeouts, rep.Retries, rep.Replays, rep.InProgress)
				}
				t.Logf("injected: %d lost answers, %d delayed answers; %d of them released their key", lost, delayed, released)
				if !rep.Verified || rep.Duplicates != 0 || !strings.Contains(out.String(), "duplicates=0 verification=OK") {
					t.Fatalf("verification failed:\n%s", out.String())
				}
				// The database agrees: every name the run created is
				// there once.
				ps, err := db.Client.Procedure.Query().Where(procedure.NameHasPrefix("load-")).All(viewer.System(context.Background()))
				if err != nil {
					t.Fatal(err)
				}
				names := map[string]int{}
				for _, p := range ps {
					names[p.Name]++
					if names[p.Name] > 1 {
						t.Fatalf("%s created twice", p.Name)
					}
				}
				if live := rep.Created - rep.Deleted; len(names) < live-rep.UnacknowledgedDeletes || len(names) > live+rep.Unacknowledged {
					t.Fatalf("%d procedures in the database; %d created and not deleted, %d creates and %d deletes unacknowledged",
						len(names), live, rep.Unacknowledged, rep.UnacknowledgedDeletes)
				}
			})
		}
	}
}
