package respcache_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/internal/respcache"
	"github.com/procsvc/procsvc/internal/viewer"
)

// TestIdenticalMissesAreComputedOnce: after a write, many clients miss on
// the same page at once; the first computes it and the others wait for its
// response instead of each running the same queries. Requests that differ
// (another member, another version) never share.
func TestIdenticalMissesAreComputedOnce(t *testing.T) {
	ws, member, other := uuid.New(), uuid.New(), uuid.New()
	release, started := make(chan struct{}), make(chan struct{})
	var calls atomic.Int64
	c := respcache.New(1<<20, 0)
	h := c.Middleware(nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if n == 1 {
			close(started)
			<-release // the first response takes a while
		}
		respcache.MarkCacheable(r.Context(), "test")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"page":1}`))
	}))
	request := func(m uuid.UUID, version int64) *http.Request {
		v := &viewer.Viewer{WorkspaceID: ws, MemberID: m, Role: viewer.RoleMember, WorkspaceVersion: version, VersionKnown: true}
		return httptest.NewRequest(http.MethodGet, "/procedures?limit=50", nil).WithContext(viewer.NewContext(context.Background(), v))
	}
	const waiters = 6
	var wg sync.WaitGroup
	got := make([]*httptest.ResponseRecorder, waiters+1)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = httptest.NewRecorder()
			h.ServeHTTP(got[i], request(member, 7))
		}()
		if i == 0 {
			<-started
		}
	}
	waitingFor(t, c, waiters)
	// Different requests do not wait on it.
	for _, r := range []*http.Request{request(other, 7), request(member, 8)} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != http.StatusOK || rec.Header().Get("X-Cache") != "" {
			t.Fatalf("a different request: %d X-Cache=%q", rec.Code, rec.Header().Get("X-Cache"))
		}
	}
	close(release)
	wg.Wait()
	if n := calls.Load(); n != 3 {
		t.Fatalf("handler ran %d times, want 3 (one shared page, two different requests)", n)
	}
	shared := 0
	for _, rec := range got {
		if rec.Code != http.StatusOK || rec.Body.String() != `{"page":1}` {
			t.Fatalf("answer %d %q", rec.Code, rec.Body.String())
		}
		if rec.Header().Get("X-Cache") == "shared" {
			shared++
		}
	}
	if shared != waiters {
		t.Fatalf("%d answers shared, want %d", shared, waiters)
	}
}

// TestUncacheableResponsesAreNotShared: when the first response cannot be
// cached (an error), each waiting request computes its own.
func TestUncacheableResponsesAreNotShared(t *testing.T) {
	v := &viewer.Viewer{WorkspaceID: uuid.New(), MemberID: uuid.New(), Role: viewer.RoleMember, WorkspaceVersion: 1, VersionKnown: true}
	release, started := make(chan struct{}), make(chan struct{})
	var calls atomic.Int64
	c := respcache.New(1<<20, 0)
	h := c.Middleware(nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			close(started)
			<-release
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		respcache.MarkCacheable(r.Context(), "test")
		_, _ = w.Write([]byte("ok"))
	}))
	req := func() *http.Request {
		return httptest.NewRequest(http.MethodGet, "/x", nil).WithContext(viewer.NewContext(context.Background(), v))
	}
	first := httptest.NewRecorder()
	second := httptest.NewRecorder()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); h.ServeHTTP(first, req()) }()
	<-started
	wg.Add(1)
	go func() { defer wg.Done(); h.ServeHTTP(second, req()) }()
	waitingFor(t, c, 1)
	close(release)
	wg.Wait()
	if first.Code != http.StatusServiceUnavailable || second.Code != http.StatusOK || second.Body.String() != "ok" {
		t.Fatalf("first %d, second %d %q", first.Code, second.Code, second.Body.String())
	}
}

// TestOlderVersionsAreDropped: once a workspace's response of a newer
// version is stored, its older versions' responses (which no new request
// can read) are dropped at once; a response computed at an older version
// after that is not stored; other workspaces keep theirs.
func TestOlderVersionsAreDropped(t *testing.T) {
	c := respcache.New(1<<20, 0)
	h := c.Middleware(nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		respcache.MarkCacheable(r.Context(), "test")
		_, _ = w.Write([]byte(r.URL.Path))
	}))
	ws, other, member := uuid.New(), uuid.New(), uuid.New()
	get := func(workspace uuid.UUID, version int64, path string) string {
		v := &viewer.Viewer{WorkspaceID: workspace, MemberID: member, Role: viewer.RoleMember, WorkspaceVersion: version, VersionKnown: true}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil).WithContext(viewer.NewContext(context.Background(), v)))
		return rec.Header().Get("X-Cache")
	}
	for _, p := range []string{"/a", "/b", "/c"} {
		get(ws, 1, p)
	}
	get(other, 1, "/a")
	if n := c.Len(); n != 4 {
		t.Fatalf("%d entries, want 4", n)
	}
	get(ws, 2, "/a") // a write happened: version 2
	if n := c.Len(); n != 2 {
		t.Fatalf("%d entries after version 2, want 2 (ws@2 /a, other@1 /a)", n)
	}
	get(ws, 1, "/b") // a request that read version 1 before the write
	if n := c.Len(); n != 2 {
		t.Fatalf("a version-1 response was stored after version 2: %d entries", n)
	}
	if got := get(ws, 2, "/a"); got != "hit" {
		t.Fatalf("version 2 /a: X-Cache %q, want hit", got)
	}
	if got := get(other, 1, "/a"); got != "hit" {
		t.Fatalf("other workspace: X-Cache %q, want hit", got)
	}
}

// waitingFor polls until n requests wait on another's response: the cache
// has no event to tell a test so, and a waiter must be registered before
// the first response is released for the test to mean anything.
func waitingFor(t *testing.T, c *respcache.Cache, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for c.Waiting() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests waiting, want %d", c.Waiting(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestWorkspaceShare: a workspace reading ten thousand distinct pages
// holds at most its share of the cache and drops its own oldest responses,
// never another workspace's: the other's are still served from the cache.
// (One least-recently-used list for every workspace let such a reader evict
// every other tenant's responses.)
func TestWorkspaceShare(t *testing.T) {
	const total, share = 1 << 20, 256 << 10
	c := respcache.New(total, share)
	page := bytes.Repeat([]byte("x"), 10_000)
	h := c.Middleware(nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		respcache.MarkCacheable(r.Context(), "test")
		_, _ = w.Write(page)
	}))
	member := uuid.New()
	get := func(workspace uuid.UUID, path string) string {
		v := &viewer.Viewer{WorkspaceID: workspace, MemberID: member, Role: viewer.RoleMember, WorkspaceVersion: 1, VersionKnown: true}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil).WithContext(viewer.NewContext(context.Background(), v)))
		return rec.Header().Get("X-Cache")
	}
	quiet, flood := uuid.New(), uuid.New()
	for i := range 10 {
		get(quiet, fmt.Sprintf("/quiet/%d", i))
	}
	for i := range 10_000 {
		get(flood, fmt.Sprintf("/flood/%d", i))
		if all, of := c.Held(flood); of > share || all > total {
			t.Fatalf("after %d pages the flooding workspace holds %d bytes (share %d), the cache %d (total %d)", i+1, of, share, all, total)
		}
	}
	for i := range 10 {
		if got := get(quiet, fmt.Sprintf("/quiet/%d", i)); got != "hit" {
			t.Fatalf("the quiet workspace's page %d after the flood: X-Cache %q, want hit", i, got)
		}
	}
	// The flooding workspace keeps its newest pages.
	if got := get(flood, "/flood/9999"); got != "hit" {
		t.Fatalf("the flood's newest page: X-Cache %q, want hit", got)
	}
}
