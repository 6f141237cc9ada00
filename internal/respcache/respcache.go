// Package respcache caches successful read responses per workspace.
//
// Every write in a workspace bumps the workspace's version in the write's own
// transaction, and every request reads the current version together with its
// token (one statement it pays anyway). A response is stored with the
// version it was computed at, under (workspace, member, role, request). It is
// served to a later request that observed the same version, or a newer one
// when every write in between is known, from the replica's recent writes
// (recent_writes.go: the notifications it heard, not the change log), to
// leave it alone: the response shows only procedures that core recorded
// in its footprint (core.Footprint), and none of those writes touched them
// or the lists they were paged from. Anything else — a version not heard
// of yet, a write the notification does not describe, a response without a
// footprint — is computed afresh. So a response is always exactly what the
// database would answer, and replicas need no coordination beyond the change
// feed they already have. docs/performance.md has the rules and the
// measurements.
package respcache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/memory"
	"github.com/procsvc/procsvc/internal/viewer"
)

// Cache holds response bodies up to a total size, and up to a share of it
// per workspace: a workspace whose responses would pass its share makes
// room by dropping its own oldest, never another workspace's; the replica
// past its total drops the least recently used of all.
type Cache struct {
	mu      sync.Mutex
	entries *lru.Cache[string, *entry]
	// budget accounts the entries' bytes by workspace.
	budget *memory.Budget[uuid.UUID]
	// stored is each workspace's keys in the order they were stored, the
	// order it makes room in (keys since evicted are skipped then).
	stored map[uuid.UUID]*storedKeys
	// inFlight holds the responses being computed, by key: after a write,
	// the clients that miss together on the same page wait for the first
	// one's response instead of each computing it (see serveShared).
	inFlight map[string]*flight
	// current is, per workspace, the newest version stored and the keys
	// of the responses without a footprint stored at it. Once a response
	// of version v is stored, no new request reads an older version on the
	// primary (the version only grows, and every request reads it afresh),
	// so those entries of older versions are dead: they are dropped at once
	// instead of filling the cache until the LRU gets to them, which under
	// steady writes kept it full of garbage. A request read on a lagging
	// standby (internal/consistency) may observe an older version: it is
	// answered by the newer entry (fresh), or computes its own, which is
	// not stored below the newest version without a footprint (store).
	current map[uuid.UUID]*generation
	// recent is the replica's record of recent writes (Observe), locked
	// on its own.
	recent *Writes
	// awaiting counts the requests waiting for a commit's answer now
	// (awaitCommit).
	awaiting atomic.Int64
}

// generation is the keys a workspace's newest version has stored.
type generation struct {
	version int64
	keys    []string
}

// flight is one response being computed; done is closed when it is known,
// e then holds it if it could be cached (nil: every waiter computes its own).
type flight struct {
	done    chan struct{}
	e       *entry
	waiters int // requests waiting on it (guarded by Cache.mu), for tests
}

// storedKeys are a workspace's keys, oldest first; compacted is how many
// were left by the last compaction.
type storedKeys struct {
	keys      []string
	compacted int
}

type entry struct {
	workspace   uuid.UUID
	contentType string
	etag        string
	route       string
	body        []byte
	// version is the workspace version the response is known to be
	// current at: the one its request observed, and later ones as
	// revalidation finds them (guarded by Cache.mu).
	version int64
	// footprint is what the response depends on, nil when it may depend
	// on anything in the workspace.
	footprint *core.Footprint
	// size is what the entry counts against the cache's bytes: its body
	// and its footprint (set when stored).
	size int64
}

// maxEntryBytes skips caching responses larger than this.
const maxEntryBytes = 1 << 20

// maxBodyBytes is the largest request body read into a cache key: the
// server's body limit (middleware.MaxBodyBytes).
const maxBodyBytes = 1 << 20

// readCloser reads from Reader and closes Closer.
type readCloser struct {
	io.Reader
	io.Closer
}

// New returns a cache holding at most maxBytes of responses (bodies and
// footprints), and at most workspaceBytes of one workspace's (0: a quarter
// of maxBytes).
func New(maxBytes, workspaceBytes int64) *Cache {
	if workspaceBytes <= 0 {
		workspaceBytes = max(maxBytes/4, 1)
	}
	c := &Cache{budget: memory.NewBudget[uuid.UUID](maxBytes, min(workspaceBytes, maxBytes)), stored: map[uuid.UUID]*storedKeys{},
		inFlight: map[string]*flight{}, current: map[uuid.UUID]*generation{}, recent: NewWrites()}
	entries, err := lru.NewWithEvict[string, *entry](1<<20, func(_ string, e *entry) {
		c.budget.Release(e.workspace, e.size)
	})
	if err != nil {
		panic(err)
	}
	c.entries = entries
	return c
}

type decisionKey struct{}

// decision says whether the response being produced may be cached.
type decision struct {
	mu          sync.Mutex
	cacheable   bool
	footprinted bool
	route       string
}

// MarkCacheable declares the response of this request a pure read of the
// workspace (a REST GET, a GraphQL query) that may be cached if it succeeds.
func MarkCacheable(ctx context.Context, route string) {
	if d, ok := ctx.Value(decisionKey{}).(*decision); ok {
		d.mu.Lock()
		d.cacheable, d.route = true, route
		d.mu.Unlock()
	}
}

// MarkFootprinted declares that the response shows only procedures read
// through core's Procedure and FindProcedures, with their own fields and
// edges (category, doer, project, comments and their authors): the
// footprint core recorded covers all it depends on, so a later write that
// does not touch it leaves the response current.
func MarkFootprinted(ctx context.Context) {
	if d, ok := ctx.Value(decisionKey{}).(*decision); ok {
		d.mu.Lock()
		d.footprinted = true
		d.mu.Unlock()
	}
}

// MarkUncacheable vetoes caching (an error was reported in a 200 response).
func MarkUncacheable(ctx context.Context) {
	if d, ok := ctx.Value(decisionKey{}).(*decision); ok {
		d.mu.Lock()
		d.cacheable = false
		d.mu.Unlock()
	}
}

// Middleware serves cached responses and stores cacheable successful ones.
// It must run after authentication (it needs the viewer and its version).
// onHit, if set, is told the route of a response served from the cache.
func (c *Cache) Middleware(onHit func(ctx context.Context, route string)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			v := viewer.FromContext(r.Context())
			if c == nil {
				next.ServeHTTP(w, r)
				return
			}
			if v == nil || !v.VersionKnown || (r.Method != http.MethodGet && r.Method != http.MethodPost) {
				next.ServeHTTP(w, r)
				return
			}
			var body []byte
			if r.Method == http.MethodPost {
				// Only /graphql bodies are bounded before this middleware
				// (by its transport guard); REST handlers bound theirs after
				// it. So read at most maxBodyBytes: a larger body is handed
				// on, unbuffered past that point, for the handler to refuse.
				b, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
				if err != nil || len(b) > maxBodyBytes {
					r.Body = readCloser{io.MultiReader(bytes.NewReader(b), r.Body), r.Body}
					next.ServeHTTP(w, r)
					return
				}
				body = b
				r.Body = io.NopCloser(bytes.NewReader(b))
			}
			key := cacheKey(v, r, body)
			// Identical requests share a computation only at one version:
			// the response's footprint is not known before it is done.
			flightKey := key + "@" + strconv.FormatInt(v.WorkspaceVersion, 10)
			c.mu.Lock()
			e, ok := c.entries.Get(key)
			if ok {
				var wait <-chan struct{}
				if ok, wait = c.fresh(e, v.WorkspaceID, v.WorkspaceVersion); !ok && wait != nil {
					// A write this response may survive has committed but
					// not yet heard its answer: wait for it (briefly)
					// rather than compute the response again.
					c.mu.Unlock()
					c.awaitCommit(r.Context(), wait)
					c.mu.Lock()
					if e, ok = c.entries.Get(key); ok {
						ok, _ = c.fresh(e, v.WorkspaceID, v.WorkspaceVersion)
					}
				}
			}
			if !ok {
				e = nil
			}
			f, shared := c.inFlight[flightKey]
			switch {
			case ok:
			case shared:
				f.waiters++
			default:
				f = &flight{done: make(chan struct{})}
				c.inFlight[flightKey] = f
			}
			c.mu.Unlock()
			if ok {
				serve(w, r, e, "hit", onHit)
				return
			}
			if shared {
				// Another request is computing this very response (same
				// workspace version, member, role and request): wait for
				// it, unless this client gives up first.
				select {
				case <-f.done:
					if f.e != nil {
						serve(w, r, f.e, "shared", onHit)
						return
					}
				case <-r.Context().Done():
				}
				next.ServeHTTP(w, r)
				return
			}
			defer func() {
				c.mu.Lock()
				delete(c.inFlight, flightKey)
				c.mu.Unlock()
				close(f.done)
			}()
			d := &decision{}
			fp := core.NewFootprint()
			rec := &recorder{ResponseWriter: w}
			ctx := core.WithFootprint(context.WithValue(r.Context(), decisionKey{}, d), fp)
			next.ServeHTTP(rec, r.WithContext(ctx))
			d.mu.Lock()
			cacheable, footprinted, route := d.cacheable, d.footprinted, d.route
			d.mu.Unlock()
			if !cacheable || rec.status != http.StatusOK || rec.buf.Len() > maxEntryBytes || rec.overflow {
				return
			}
			f.e = &entry{contentType: rec.contentType, etag: rec.etag,
				route: route, body: bytes.Clone(rec.buf.Bytes()), version: v.WorkspaceVersion}
			if footprinted && !fp.Empty() {
				f.e.footprint = fp
			}
			c.store(v.WorkspaceID, key, f.e)
		})
	}
}

// fresh reports whether e may answer a request that observed the
// workspace at version; c.mu is held. An entry computed at a newer version
// than the request's is as fresh as the database would be (the request is
// concurrent with the writes in between). One computed at an older version
// is current if the recent writes show every write since and none touches its
// footprint; it is then known current at version, so that the next check
// starts there.
//
// When the answer waits on a write whose commit has not answered yet
// (Writes.Pending), wait is closed once it has.
func (c *Cache) fresh(e *entry, workspace uuid.UUID, version int64) (ok bool, wait <-chan struct{}) {
	if e.version >= version {
		return true, nil
	}
	if e.footprint == nil {
		return false, nil
	}
	if ok, wait = c.recent.untouched(workspace, e.version, version, e.footprint); !ok {
		return false, wait
	}
	e.version = version
	return true, nil
}

// pendingWait bounds how long a request waits for a write's commit to
// answer its writer before computing its response anyway: a commit answers
// within milliseconds even on a saturated machine, and one that does not
// (a lost connection, a stalled server) must not hold readers.
const pendingWait = 20 * time.Millisecond

// awaitCommit waits until wait is closed, pendingWait has passed or ctx
// is done, whichever comes first.
func (c *Cache) awaitCommit(ctx context.Context, wait <-chan struct{}) {
	c.awaiting.Add(1)
	defer c.awaiting.Add(-1)
	t := time.NewTimer(pendingWait)
	defer t.Stop()
	select {
	case <-wait:
	case <-t.C:
	case <-ctx.Done():
	}
}

// serve answers with a stored response; how says where it came from: "hit"
// (the cache) or "shared" (a concurrent identical request's).
func serve(w http.ResponseWriter, r *http.Request, e *entry, how string, onHit func(ctx context.Context, route string)) {
	if onHit != nil {
		onHit(r.Context(), e.route)
	}
	w.Header().Set("Content-Type", e.contentType)
	if e.etag != "" {
		w.Header().Set("ETag", e.etag)
	}
	w.Header().Set("X-Cache", how)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(e.body)
}

func (c *Cache) store(workspace uuid.UUID, key string, e *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries.Peek(key); ok && old.version > e.version {
		return // a response computed at a newer version is already here
	}
	g := c.current[workspace]
	switch {
	case g == nil:
		g = &generation{version: e.version}
		c.current[workspace] = g
	case e.version < g.version:
		if e.footprint == nil {
			return // computed at a version no request will read again
		}
	case e.version > g.version:
		for _, k := range g.keys {
			if old, ok := c.entries.Peek(k); ok && old.footprint == nil && old.version < e.version {
				c.entries.Remove(k)
			}
		}
		g.version, g.keys = e.version, g.keys[:0]
	}
	if e.footprint == nil {
		g.keys = append(g.keys, key)
	}
	if n := len(g.keys); n >= 1024 && n%1024 == 0 {
		// A workspace read many ways between writes: forget the keys the
		// LRU has already evicted, so that the list stays as long as the
		// entries it names.
		live := g.keys[:0]
		for _, k := range g.keys {
			if c.entries.Contains(k) {
				live = append(live, k)
			}
		}
		g.keys = live
	}
	// Removal (here, by capacity or by RemoveOldest) runs the eviction
	// callback, which gives the entry's bytes back; it runs under c.mu.
	c.entries.Remove(key)
	e.workspace = workspace
	e.size = int64(len(e.body)) + e.footprint.Size()
	if !c.makeRoom(workspace, e.size) {
		return
	}
	c.budget.Reserve(workspace, e.size)
	c.entries.Add(key, e)
	st := c.stored[workspace]
	if st == nil {
		st = &storedKeys{}
		c.stored[workspace] = st
	}
	st.keys = append(st.keys, key)
	c.compact(workspace)
}

// makeRoom drops entries until n more bytes of workspace's fit: its own
// oldest while it is over its share, then the least recently used of all
// while the cache is over its total. It reports false when n cannot fit
// (n over the share or the total); c.mu is held.
func (c *Cache) makeRoom(workspace uuid.UUID, n int64) bool {
	if n > c.budget.Share() {
		return false
	}
	for {
		own, all := c.budget.Fits(workspace, n)
		switch {
		case !own:
			st := c.stored[workspace]
			if st == nil || len(st.keys) == 0 {
				return false
			}
			c.entries.Remove(st.keys[0])
			st.keys[0] = ""
			st.keys = st.keys[1:]
			st.compacted = max(st.compacted-1, 0)
		case !all:
			if _, _, ok := c.entries.RemoveOldest(); !ok {
				return false
			}
		default:
			return true
		}
	}
}

// compact drops from workspace's stored keys those no longer cached, each
// time the list has doubled since it was last compacted: it stays within
// twice its entries, at a constant cost per store; c.mu is held.
func (c *Cache) compact(workspace uuid.UUID) {
	st := c.stored[workspace]
	if st == nil || len(st.keys) < max(64, 2*st.compacted) {
		return
	}
	live := st.keys[:0]
	for _, k := range st.keys {
		if e, ok := c.entries.Peek(k); ok && e.workspace == workspace {
			live = append(live, k)
		}
	}
	clear(st.keys[len(live):])
	st.keys, st.compacted = live, len(live)
	if len(live) == 0 {
		delete(c.stored, workspace)
	}
}

// Observe records a committed change of the workspace at version, from the
// replica's change feed (internal/events: Hub.Observe). A change heard
// twice is recorded once.
func (c *Cache) Observe(change core.Change, version int64) {
	if c == nil {
		return
	}
	c.recent.Observe(change, version)
}

// Writes is the cache's memory of the recent writes (nil for a nil cache).
func (c *Cache) Writes() *Writes {
	if c == nil {
		return nil
	}
	return c.recent
}

// cacheKey identifies a response: who asked (workspace, member, role) and
// exactly what (method, path and query, body). The version is the entry's.
func cacheKey(v *viewer.Viewer, r *http.Request, body []byte) string {
	h := sha256.New()
	h.Write([]byte(r.Method))
	h.Write([]byte{0})
	h.Write([]byte(r.URL.RequestURI()))
	h.Write([]byte{0})
	// The response's media type may depend on Accept (GraphQL over HTTP).
	h.Write([]byte(r.Header.Get("Accept")))
	h.Write([]byte{0})
	h.Write(body)
	sum := h.Sum(nil)
	return v.WorkspaceID.String() + "/" + v.MemberID.String() + "/" + string(v.Role) + "/" + hex.EncodeToString(sum[:16])
}

// recorder passes the response through and keeps a copy of its body.
type recorder struct {
	http.ResponseWriter
	status int
	// contentType and etag are the handler's, taken as it starts its
	// response: the writers outside may change the headers as the response
	// passes (a query answered as a Server-Sent Event is framed, and typed
	// text/event-stream, outside), and a stored response is the handler's.
	contentType, etag string
	buf               bytes.Buffer
	overflow          bool
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
		h := r.Header()
		r.contentType, r.etag = h.Get("Content-Type"), h.Get("ETag")
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
		return r.Write(b)
	}
	if !r.overflow {
		if r.buf.Len()+len(b) > maxEntryBytes {
			r.overflow = true
			r.buf.Reset()
		} else {
			r.buf.Write(b)
		}
	}
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
