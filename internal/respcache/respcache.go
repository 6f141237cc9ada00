// Package respcache caches successful read responses per workspace write
// version.
//
// Every write in a workspace bumps the workspace's version in the write's own
// transaction, and every request reads the current version together with its
// token (one statement it pays anyway). A response stored under (workspace,
// version, member, role, request) can therefore only be served to a request
// that observed the very same version: it is exactly what the database would
// answer, never stale, and replicas need no coordination. Reads repeated
// between writes — the common case for list pages — then cost the token
// lookup alone. docs/performance.md has the measurements.
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

	"github.com/google/uuid"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/procsvc/procsvc/internal/viewer"
)

// Cache holds response bodies up to a total size.
type Cache struct {
	mu       sync.Mutex
	entries  *lru.Cache[string, *entry]
	bytes    int64
	maxBytes int64
	// inFlight holds the responses being computed, by key: after a write,
	// the clients that miss together on the same page wait for the first
	// one's response instead of each computing it (see serveShared).
	inFlight map[string]*flight
	// current is, per workspace, the newest version stored and the keys
	// stored under it. Once a response of version v is stored, no new
	// request can read an older version (the version only grows, and every
	// request reads it afresh), so entries of older versions are dead:
	// they are dropped at once instead of filling the cache until the LRU
	// gets to them, which under steady writes kept it full of garbage.
	current map[uuid.UUID]*generation
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

type entry struct {
	contentType string
	etag        string
	route       string
	body        []byte
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

// New returns a cache holding at most maxBytes of response bodies.
func New(maxBytes int64) *Cache {
	c := &Cache{maxBytes: maxBytes, inFlight: map[string]*flight{}, current: map[uuid.UUID]*generation{}}
	entries, err := lru.NewWithEvict[string, *entry](1<<20, func(_ string, e *entry) {
		c.bytes -= int64(len(e.body))
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
	mu        sync.Mutex
	cacheable bool
	route     string
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
			c.mu.Lock()
			e, ok := c.entries.Get(key)
			f, shared := c.inFlight[key]
			switch {
			case ok:
			case shared:
				f.waiters++
			default:
				f = &flight{done: make(chan struct{})}
				c.inFlight[key] = f
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
				delete(c.inFlight, key)
				c.mu.Unlock()
				close(f.done)
			}()
			d := &decision{}
			rec := &recorder{ResponseWriter: w}
			next.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), decisionKey{}, d)))
			d.mu.Lock()
			cacheable, route := d.cacheable, d.route
			d.mu.Unlock()
			if !cacheable || rec.status != http.StatusOK || rec.buf.Len() > maxEntryBytes || rec.overflow {
				return
			}
			f.e = &entry{contentType: rec.Header().Get("Content-Type"), etag: rec.Header().Get("ETag"),
				route: route, body: bytes.Clone(rec.buf.Bytes())}
			c.store(v.WorkspaceID, v.WorkspaceVersion, key, f.e)
		})
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

func (c *Cache) store(workspace uuid.UUID, version int64, key string, e *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.current[workspace]
	switch {
	case g == nil:
		g = &generation{version: version}
		c.current[workspace] = g
	case version < g.version:
		return // computed at a version no request will read again
	case version > g.version:
		for _, k := range g.keys {
			c.entries.Remove(k)
		}
		g.version, g.keys = version, g.keys[:0]
	}
	g.keys = append(g.keys, key)
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
	// callback, which keeps c.bytes; it runs under c.mu.
	c.entries.Remove(key)
	c.entries.Add(key, e)
	c.bytes += int64(len(e.body))
	for c.bytes > c.maxBytes && c.entries.Len() > 0 {
		c.entries.RemoveOldest()
	}
}

// cacheKey identifies a response: who asked (workspace, version, member,
// role) and exactly what (method, path and query, body).
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
	return v.WorkspaceID.String() + "/" + strconv.FormatInt(v.WorkspaceVersion, 10) + "/" +
		v.MemberID.String() + "/" + string(v.Role) + "/" + hex.EncodeToString(sum[:16])
}

// recorder passes the response through and keeps a copy of its body.
type recorder struct {
	http.ResponseWriter
	status   int
	buf      bytes.Buffer
	overflow bool
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
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
