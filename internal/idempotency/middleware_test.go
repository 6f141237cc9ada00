package idempotency_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/internal/auth"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/idempotency"
	"github.com/procsvc/procsvc/internal/middleware"
	"github.com/procsvc/procsvc/internal/viewer"
)

// keyedServer serves handler behind the middleware, as a viewer of a
// workspace of its own, and counts the handler's executions.
type keyedServer struct {
	*httptest.Server
	store  *idempotency.Store
	viewer *viewer.Viewer
	runs   atomic.Int32
}

// newKeyedServer serves handler behind the middleware of a store with opts
// (none: the defaults).
func newKeyedServer(t *testing.T, db *database.DB, handler http.HandlerFunc, opts ...idempotency.Options) *keyedServer {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var o idempotency.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	o.Log = log
	// As the server wires it: GraphQL POSTs are deferred to the executor
	// (their fingerprint is their body here), and no answer holding a
	// secret is kept.
	o.Deferred = func(r *http.Request) ([]byte, bool) {
		if r.URL.Path != "/graphql" || r.Method != http.MethodPost {
			return nil, false
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		return body, true
	}
	o.HoldsSecret = auth.HoldsSecret
	store := idempotency.New(db.Client, o)
	writeErr := func(w http.ResponseWriter, r *http.Request, err error) { middleware.WriteError(w, r, log, err) }
	v := &viewer.Viewer{WorkspaceID: uuid.New(), MemberID: uuid.New(), Role: viewer.RoleMember}
	ks := &keyedServer{store: store, viewer: v}
	keyed := store.Middleware(writeErr)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !claimAsTheExecutor(r) {
			return
		}
		ks.runs.Add(1)
		handler(w, r)
	}))
	ks.Server = httptest.NewServer(middleware.WithRequestID(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				middleware.WriteError(w, r, log, context.Canceled)
			}
		}()
		keyed.ServeHTTP(w, r.WithContext(viewer.NewContext(r.Context(), v)))
	})))
	t.Cleanup(ks.Close)
	return ks
}

// claimAsTheExecutor claims a GraphQL request's deferred key as the
// executor does for a mutation, and reports whether the handler may run
// (elsewhere, there is nothing to claim).
func claimAsTheExecutor(r *http.Request) bool {
	return idempotency.ClaimDeferred(r.Context(), func() bool { return false }) == nil
}

func (ks *keyedServer) post(t *testing.T, path, body, key string) answer {
	t.Helper()
	req, err := http.NewRequest("POST", ks.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(idempotency.Header, key)
	resp, err := ks.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: raw}
}

// TestWhatIsRecorded: 4xx answers are recorded and replayed; 5xx (500,
// 502, 503) and 429 answers, GraphQL responses carrying such codes or a
// persisted-query miss, and panics release the key, so that the retry
// executes.
func TestWhatIsRecorded(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		for _, c := range []struct {
			name, path string
			status     int
			body       string
			recorded   bool
		}{
			{"200", "/procedures", 200, `{"id":"x"}`, true},
			{"400", "/procedures", 400, `{"code":"validation_failed"}`, true},
			{"404", "/procedures", 404, `{"code":"not_found"}`, true},
			{"409", "/procedures", 409, `{"code":"conflict"}`, true},
			{"412", "/procedures", 412, `{"code":"precondition_failed"}`, true},
			{"429", "/procedures", 429, `{"code":"rate_limited"}`, false},
			{"500", "/procedures", 500, `{"code":"internal"}`, false},
			{"502", "/procedures", 502, `{"code":"generation_failed"}`, false},
			{"503", "/procedures", 503, `{"code":"unavailable"}`, false},
			{"graphql data", "/graphql", 200, `{"data":{"createProcedure":{"id":"x"}}}`, true},
			{"graphql conflict", "/graphql", 200, `{"errors":[{"message":"m","extensions":{"code":"conflict"}}],"data":null}`, true},
			{"graphql unavailable", "/graphql", 200, `{"errors":[{"message":"m","extensions":{"code":"unavailable"}}],"data":null}`, false},
			{"graphql generation failed", "/graphql", 200, `{"errors":[{"message":"m","extensions":{"code":"generation_failed"}}],"data":null}`, false},
			{"graphql rate limited", "/graphql", 200, `{"errors":[{"message":"m","extensions":{"code":"rate_limited"}}],"data":null}`, false},
			{"graphql persisted query miss", "/graphql", 200, `{"errors":[{"message":"PersistedQueryNotFound","extensions":{"code":"PERSISTED_QUERY_NOT_FOUND"}}],"data":null}`, false},
			{"graphql unavailable after a committed root field", "/graphql", 200, `{"errors":[{"message":"m","path":["b"],"extensions":{"code":"unavailable"}}],"data":{"a":{"id":"x"},"b":null}}`, true},
			{"graphql unavailable below a root field", "/graphql", 200, `{"errors":[{"message":"m","path":["a","project"],"extensions":{"code":"unavailable"}}],"data":{"a":null}}`, true},
			{"graphql unavailable in every root field", "/graphql", 200, `{"errors":[{"message":"m","path":["a"],"extensions":{"code":"unavailable"}},{"message":"m","path":["b"],"extensions":{"code":"unavailable"}}],"data":{"a":null,"b":null}}`, false},
			{"graphql not executed", "/graphql", 400, `{"errors":[{"message":"m","extensions":{"code":"validation_failed"}}]}`, true},
		} {
			t.Run(c.name, func(t *testing.T) {
				ks := newKeyedServer(t, db, func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					w.Header().Set("ETag", `"e1"`)
					w.WriteHeader(c.status)
					_, _ = io.WriteString(w, c.body)
				})
				body := `{"query":"mutation { createProcedure { id } }"}`
				first := ks.post(t, c.path, body, "k")
				again := ks.post(t, c.path, body, "k")
				if first.status != c.status || string(first.body) != c.body || first.replayed() {
					t.Fatalf("first: %d %s", first.status, first.body)
				}
				if c.recorded {
					wantSameResponse(t, first, again)
					if ks.runs.Load() != 1 {
						t.Fatalf("%d runs, want 1", ks.runs.Load())
					}
				} else if again.replayed() || ks.runs.Load() != 2 {
					t.Fatalf("not released: replayed %v, %d runs", again.replayed(), ks.runs.Load())
				}
			})
		}
		t.Run("panic", func(t *testing.T) {
			ks := newKeyedServer(t, db, func(w http.ResponseWriter, r *http.Request) { panic("boom") })
			ks.post(t, "/procedures", `{}`, "p")
			ks.post(t, "/procedures", `{}`, "p")
			if ks.runs.Load() != 2 {
				t.Fatalf("a panic kept its key: %d runs", ks.runs.Load())
			}
		})
	})
}

// TestKeyedRequestOutlivesItsClient: a keyed request keeps running when its
// client goes away (a client-side timeout), so that its outcome is
// recorded and the client's retry replays it instead of finding a write cut
// off half way. The handler waits until the server has seen the client go
// (the request's own context ends), then checks its context is still live.
func TestKeyedRequestOutlivesItsClient(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		started, clientGone := make(chan struct{}), make(chan struct{})
		var gone sync.Once
		var handlerErr atomic.Value
		ks := &keyedServer{}
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		store := idempotency.New(db.Client, idempotency.Options{Log: log})
		writeErr := func(w http.ResponseWriter, r *http.Request, err error) { middleware.WriteError(w, r, log, err) }
		v := &viewer.Viewer{WorkspaceID: uuid.New(), MemberID: uuid.New(), Role: viewer.RoleMember}
		keyed := store.Middleware(writeErr)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// Reading the body to its end lets the server notice the
			// client leaving (with or without the middleware).
			_, _ = io.Copy(io.Discard, r.Body)
			run := ks.runs.Add(1)
			if run == 1 {
				close(started)
				<-clientGone
				handlerErr.Store(errString(r.Context().Err()))
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"done":%d}`, run)
		}))
		finished := make(chan struct{}, 2)
		ks.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() { finished <- struct{}{} }()
			go func() {
				<-r.Context().Done()
				gone.Do(func() { close(clientGone) })
			}()
			keyed.ServeHTTP(w, r.WithContext(viewer.NewContext(r.Context(), v)))
		}))
		defer ks.Close()
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "POST", ks.URL+"/procedures", strings.NewReader(`{"name":"x"}`))
		req.Header.Set(idempotency.Header, "gone")
		errc := make(chan error, 1)
		go func() {
			resp, err := ks.Client().Do(req)
			if err == nil {
				resp.Body.Close()
			}
			errc <- err
		}()
		// Cancel once the handler runs: the client gives up.
		select {
		case <-started:
		case err := <-errc:
			t.Fatalf("the request ended before the handler ran: %v", err)
		}
		cancel()
		if err := <-errc; err == nil {
			t.Fatal("the cancelled request got an answer")
		}
		<-finished
		if got := handlerErr.Load().(string); got != "" {
			t.Fatalf("the keyed request's context ended with its client: %s", got)
		}
		again := ks.post(t, "/procedures", `{"name":"x"}`, "gone")
		if !again.replayed() || !bytes.Equal(again.body, []byte(`{"done":1}`)) || ks.runs.Load() != 1 {
			t.Fatalf("the retry did not replay the first execution: %v %s (%d runs)", again.header, again.body, ks.runs.Load())
		}
	})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
