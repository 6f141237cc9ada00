// Package server assembles procsvc's HTTP surface over one core and runs it.
package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/graph"
	"github.com/procsvc/procsvc/graph/gqlhttp"
	"github.com/procsvc/procsvc/graph/live"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/archive"
	"github.com/procsvc/procsvc/internal/auth"
	"github.com/procsvc/procsvc/internal/config"
	"github.com/procsvc/procsvc/internal/consistency"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/events"
	"github.com/procsvc/procsvc/internal/idempotency"
	"github.com/procsvc/procsvc/internal/loader"
	"github.com/procsvc/procsvc/internal/metrics"
	"github.com/procsvc/procsvc/internal/middleware"
	"github.com/procsvc/procsvc/internal/playground"
	"github.com/procsvc/procsvc/internal/ratelimit"
	"github.com/procsvc/procsvc/internal/respcache"
	"github.com/procsvc/procsvc/rest"
)

// Deps are what the handler is built from.
type Deps struct {
	DB      *database.DB
	Service *core.Service
	Log     *slog.Logger
	// Metrics, when nil, is a fresh registry over DB's pool. It is served at
	// /metrics unless it labels GraphQL operation names (the tenants'), in
	// which case the caller serves it on an internal listener (MetricsHandler).
	Metrics *metrics.Metrics
	// ResponseCacheBytes bounds the read-response cache; 0 disables it.
	// ResponseCacheWorkspaceBytes is one workspace's share of it (0: a
	// quarter).
	ResponseCacheBytes, ResponseCacheWorkspaceBytes int64
	// RequestTimeout, when set, bounds every request's work (database and
	// generation calls see the deadline); use the server's write timeout.
	RequestTimeout time.Duration
	// ExportTimeout bounds a workspace's download in all
	// (archive.DefaultTimeout if 0); with RequestTimeout set, a download
	// is otherwise bounded by each write's, Live.WriteTimeout.
	ExportTimeout time.Duration
	// ExportsInFlight bounds the downloads served at once, one per
	// workspace (archive.DefaultInFlight if 0).
	ExportsInFlight int
	// RateLimit is the per-token rate limit; nil turns it off.
	RateLimit *ratelimit.Limiter
	// IdempotencyTTL is how long an Idempotency-Key is remembered
	// (0: idempotency.DefaultTTL). Keys in progress are abandoned after
	// RequestTimeout (idempotency.DefaultLockTimeout when 0).
	IdempotencyTTL time.Duration
	// IdempotencyWorkspaceBytes bounds the response bytes one workspace's
	// keys keep for replay (0: idempotency.DefaultWorkspaceBytes).
	IdempotencyWorkspaceBytes int64
	// Hub delivers committed changes to subscriptions. Service's announcer
	// must feed it (Announcer); nil gives the handler a hub of its own,
	// whose subscriptions hear of no change.
	Hub *events.Hub
	// Live tunes subscriptions; its Hub, Authenticate, Limiter and Loaders
	// are set from the fields above.
	Live live.Options
	// Auth configures authentication: the failure limit of client
	// addresses (auth.WithFailureLimit; none without it).
	Auth []auth.Option
	// ClientIPHeader names the header a trusted reverse proxy sets to the
	// client's address (middleware.ClientAddress); empty: the
	// connection's remote address.
	ClientIPHeader string
	// ReadYourWrites is how long a token's reads skip standbys that have
	// not replayed its last write (internal/consistency; 0: only the
	// X-Min-Version header does). Without a read pool it changes nothing.
	ReadYourWrites time.Duration
	// MaxResponseBytes bounds the bytes of each response of both faces,
	// and the comment text one request reads (0: limits.ResponseBytes).
	MaxResponseBytes int
	// DocumentCacheBytes and DocumentCacheWorkspaceBytes bound the
	// GraphQL documents (parsed, and persisted queries) the replica keeps,
	// and one workspace's share of them (0: gqlhttp's defaults).
	DocumentCacheBytes, DocumentCacheWorkspaceBytes int64
	// PlaygroundSignIn is the identity provider of the playground's Sign
	// in button (the zero value: no button).
	PlaygroundSignIn playground.SignIn
	// Loader tunes the loaders (loader.WithoutShared: the benchmarks that
	// weigh the shared edges, docs/caching.md).
	Loader []loader.Option
}

// Announcer returns the announcer that makes db's committed changes known
// to hub: pg_notify on PostgreSQL, heard by every replica's Listen (this
// one's included, and recorded for hub's observers at its commit); on
// SQLite, a single process, hub directly.
func Announcer(db *database.DB, hub *events.Hub) core.Announcer {
	if db.Dialect == "postgres" {
		return events.NewPostgresAnnouncer(hub)
	}
	return events.NewLocalAnnouncer(hub)
}

// Handler is procsvc's whole HTTP surface, and the live updates it serves
// (for their figures: what they hold open and in memory).
type Handler struct {
	http.Handler
	Live      *live.Live
	Documents *gqlhttp.Documents
}

// NewHandler returns procsvc's whole HTTP surface.
func NewHandler(d Deps) *Handler {
	if d.Metrics == nil {
		d.Metrics = metrics.New(d.DB.SQL)
	}
	authn := auth.New(d.DB, append([]auth.Option{auth.WithLogger(d.Log)}, d.Auth...)...)
	var cache *respcache.Cache
	if d.ResponseCacheBytes > 0 {
		cache = respcache.New(d.ResponseCacheBytes, d.ResponseCacheWorkspaceBytes)
	}
	loaderOpts := []loader.Option{loader.MaxCommentText(d.MaxResponseBytes)}
	if d.Hub != nil {
		// The hub hears every committed change (this replica's at once,
		// the others' through LISTEN): the recent writes, which keep the
		// cache's responses that a write does not touch, and the loaders'
		// shared categories, members and projects across writes of
		// procedures and comments.
		writes := cache.Writes()
		if writes == nil {
			writes = respcache.NewWrites()
		}
		d.Hub.Observe(func(e events.Notification) { writes.Observe(e.Change, e.Version) })
		d.Hub.ObservePending(func(e events.Notification) func(bool) { return writes.Pending(e.Change, e.Version) })
		loaderOpts = append(loaderOpts, loader.CarryShared(writes.OnlyProcedureWrites))
	}
	source := loader.New(d.DB, append(loaderOpts, d.Loader...)...)
	loaders := source.Middleware
	resolver := graph.NewResolver(d.Service)
	resolver.MaxResponseBytes = d.MaxResponseBytes
	restErr := func(w http.ResponseWriter, r *http.Request, err error) { middleware.WriteError(w, r, d.Log, err) }

	cached := cache.Middleware(func(ctx context.Context, route string) { middleware.Info(ctx).Route = route })
	// GraphQL POSTs are keyed as the GraphQL face says (only mutations,
	// claimed by the executor); no face's answer holding a token's secret
	// is kept.
	idem := idempotency.New(d.DB.Client, idempotency.Options{TTL: d.IdempotencyTTL, LockTimeout: d.RequestTimeout,
		WorkspaceBytes: d.IdempotencyWorkspaceBytes, Log: d.Log, Deferred: gqlhttp.KeyedRequest, HoldsSecret: auth.HoldsSecret})
	reads := middleware.NewReads(d.DB, consistency.NewRecent(d.ReadYourWrites))
	registerReadMetrics(d.Metrics, reads)
	// Each face answers authentication failures in its own shape.
	authenticate := func(writeErr middleware.ErrorWriter) func(http.Handler) http.Handler {
		return middleware.Authenticate(authn, writeErr)
	}
	// An authenticated request is charged to its token's rate limit as its
	// face can (before the response cache, so that replays count): REST per
	// request, GraphQL by the operation's cost once parsed.
	requests := func(limit func(middleware.ErrorWriter) func(http.Handler) http.Handler) func(middleware.ErrorWriter) func(http.Handler) http.Handler {
		return func(writeErr middleware.ErrorWriter) func(http.Handler) http.Handler {
			limit := limit(writeErr)
			// Idempotency-Key after the rate limit (a refused request
			// leaves its key alone; a replay is charged) and before the
			// response cache (which never stores a write).
			keyed := idem.Middleware(writeErr)
			// Where reads go is decided before anything keyed by the
			// version the request reads: the loaders and the cache.
			routed := reads.Middleware(writeErr)
			return func(h http.Handler) http.Handler { return limit(keyed(routed(loaders(cached(h))))) }
		}
	}
	authenticated := func(limit func(middleware.ErrorWriter) func(http.Handler) http.Handler) func(middleware.ErrorWriter) func(http.Handler) http.Handler {
		return func(writeErr middleware.ErrorWriter) func(http.Handler) http.Handler {
			authn, rest := authenticate(writeErr), requests(limit)(writeErr)
			return func(h http.Handler) http.Handler { return authn(rest(h)) }
		}
	}

	// A subscription's Server-Sent Events stream is charged like any
	// request; nothing may buffer it (response cache, idempotency).
	streams := func(writeErr middleware.ErrorWriter) func(http.Handler) http.Handler {
		limit := d.RateLimit.PerOperation(writeErr)
		return func(h http.Handler) http.Handler { return limit(loaders(h)) }
	}
	liveOpts := d.Live
	liveOpts.Hub = d.Hub
	if liveOpts.Hub == nil {
		liveOpts.Hub = events.NewHub(events.HubOptions{})
	}
	liveOpts.Authenticate, liveOpts.Limiter, liveOpts.Loaders, liveOpts.Idempotency = authn.Authenticate, d.RateLimit, source.Into, idem
	if liveOpts.RequestTimeout == 0 {
		liveOpts.RequestTimeout = requestDeadline(d.RequestTimeout)
	}
	if liveOpts.Log == nil {
		liveOpts.Log = d.Log
	}

	lives := live.New(liveOpts)
	registerLiveMetrics(d.Metrics, lives)
	registerDatabaseMetrics(d.Metrics, d.DB)
	docs := gqlhttp.NewDocuments(d.DocumentCacheBytes, d.DocumentCacheWorkspaceBytes)
	registerDocumentMetrics(d.Metrics, docs)
	mux := http.NewServeMux()
	mux.Handle("/graphql", playground.RedirectBrowsers(gqlhttp.NewHandler(resolver, d.Log, d.Metrics,
		gqlhttp.Middleware{Authenticate: authenticate, Requests: requests(d.RateLimit.PerOperation), Streams: streams}, lives, docs)))
	api := rest.New(resolver, d.Log)
	api.Register(mux, authenticated(d.RateLimit.PerRequest)(restErr))
	// The workspace export streams a snapshot (internal/archive): charged
	// like a REST request, and nothing may buffer it (response cache,
	// idempotency) or route it to a standby.
	mux.Handle("GET "+archive.Path, authenticate(restErr)(d.RateLimit.PerRequest(restErr)(
		archive.Handler(d.DB.Client, d.Log, exportOptions(d)))))
	mux.HandleFunc(archive.Path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "GET, HEAD")
		restErr(w, r, apperr.New(apperr.MethodNotAllowed, "%s is not allowed on %s; allowed: GET, HEAD", r.Method, archive.Path))
	})
	pg, err := playground.NewHandler(d.PlaygroundSignIn)
	if err != nil {
		panic(err) // run checks it first (PlaygroundSignIn's caller)
	}
	mux.Handle(playground.Path, pg)
	mux.Handle(playground.Path+"/", pg)
	mux.HandleFunc("GET /{$}", serveIndex)
	if !d.Metrics.OperationNames() {
		mux.Handle("GET /metrics", d.Metrics.Handler())
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		middleware.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		// Ready means a request would get an answer: SELECT 1 through the
		// pool, on a fresh connection when a pooled one turns out dead,
		// with time to dial one (see database.DB.Ping).
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := d.DB.Ping(ctx); err != nil {
			restErr(w, r, &apperr.Error{Code: apperr.Unavailable, Message: "the database is not answering", Err: err})
			return
		}
		// A pool can answer SELECT 1 from a standby, or the probe may
		// have found the primary silent: writes need a primary.
		if err := d.DB.Health(); err != nil {
			restErr(w, r, &apperr.Error{Code: apperr.Unavailable, Message: "no primary database is reachable for writes", Err: err})
			return
		}
		middleware.WriteJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		restErr(w, r, apperr.New(apperr.NotFound, "no route for %s %s", r.Method, r.URL.Path))
	})
	var h http.Handler = mux
	if d.RequestTimeout > 0 {
		h = withDeadline(d.RequestTimeout, h)
	}
	// Every request, WebSocket upgrades included, carries its client's
	// address to authentication (outermost: the request Observe sees is
	// the one ServeMux records its route on).
	h = middleware.SecurityHeaders(middleware.WithRequestID(middleware.Observe(d.Log, d.Metrics)(h)))
	return &Handler{Handler: middleware.ClientAddress(d.ClientIPHeader)(h), Live: lives, Documents: docs}
}

// registerLiveMetrics exposes what live updates hold.
func registerLiveMetrics(m *metrics.Metrics, l *live.Live) {
	for _, g := range []struct {
		name, help string
		counter    bool
		value      func(live.Stats) int64
	}{
		{"procsvc_live_connections", "Open WebSockets and Server-Sent Events streams (at most --max-live-connections).", false,
			func(s live.Stats) int64 { return int64(s.Connections) }},
		{"procsvc_live_subscriptions", "Open subscriptions.", false, func(s live.Stats) int64 { return int64(s.Subscriptions) }},
		{"procsvc_live_groups", "Distinct operations the open subscriptions run; each event is rendered once per group.", false,
			func(s live.Stats) int64 { return int64(s.Groups) }},
		{"procsvc_live_cache_bytes", "Bytes of events' reads and renderings kept for subscribers (at most --live-cache-mb).", false,
			func(s live.Stats) int64 { return int64(s.CachedBytes) }},
		{"procsvc_live_renders_total", "Events rendered for subscribers, once per event and group.", true,
			func(s live.Stats) int64 { return int64(s.Rendered) }},
		{"procsvc_live_memory_bytes", "Bytes of renderings held for subscribers until they write them, live and replayed (at most --live-memory-mb).", false,
			func(s live.Stats) int64 { return int64(s.HeldBytes) }},
		{"procsvc_live_memory_refused_total", "Renderings refused for want of room in --live-memory-mb or a workspace's share of it; their subscriptions ended with unavailable.", true,
			func(s live.Stats) int64 { return int64(s.RefusedRenderings) }},
	} {
		read := func() float64 { return float64(g.value(l.Stats())) }
		if g.counter {
			m.Counter(g.name, g.help, read)
		} else {
			m.Gauge(g.name, g.help, read)
		}
	}
}

func registerDocumentMetrics(m *metrics.Metrics, docs *gqlhttp.Documents) {
	stat := func(f func(gqlhttp.DocumentStats) int64) func() float64 {
		return func() float64 { return float64(f(docs.Stats())) }
	}
	m.Gauge("procsvc_graphql_document_cache_bytes", "Bytes of parsed GraphQL documents and persisted queries kept (at most --document-cache-mb, --document-cache-workspace-mb per workspace).",
		stat(func(s gqlhttp.DocumentStats) int64 { return s.Bytes }))
	m.Counter("procsvc_graphql_document_cache_hits_total", "Lookups of parsed GraphQL documents found cached (parse and validation avoided).",
		stat(func(s gqlhttp.DocumentStats) int64 { return s.ParsedHits }))
	m.Counter("procsvc_graphql_document_cache_misses_total", "Lookups of parsed GraphQL documents not cached.",
		stat(func(s gqlhttp.DocumentStats) int64 { return s.ParsedMisses }))
}

// NewRateLimiter returns the per-token rate limiter c configures, nil when
// c turns it off.
func NewRateLimiter(c config.RateLimit, opts ...ratelimit.Option) (*ratelimit.Limiter, error) {
	cfg := ratelimit.Config{Limit: ratelimit.Limit{Rate: c.Rate, Burst: c.Burst}}
	for id, r := range c.Workspaces {
		ws, err := uuid.Parse(id)
		if err != nil {
			return nil, fmt.Errorf("rate limit of workspace %q: %w", id, err)
		}
		if cfg.Workspaces == nil {
			cfg.Workspaces = map[uuid.UUID]ratelimit.Limit{}
		}
		cfg.Workspaces[ws] = ratelimit.Limit{Rate: r.Rate, Burst: r.Burst}
	}
	return ratelimit.New(cfg, opts...)
}

// exportOptions are the workspace download's: ExportsInFlight at once;
// under a request timeout (a server's), each write is bounded as a
// stream's are, the whole by ExportTimeout.
func exportOptions(d Deps) archive.ExportOptions {
	o := archive.ExportOptions{Dialect: d.DB.Dialect, Limiter: archive.NewLimiter(d.ExportsInFlight)}
	if d.RequestTimeout > 0 {
		o.IdleTimeout = d.Live.WriteTimeout
		if o.IdleTimeout <= 0 {
			o.IdleTimeout = d.RequestTimeout
		}
		o.Timeout = d.ExportTimeout
	}
	return o
}

// withDeadline gives each request's context a deadline just short of the
// server's write timeout, so that work whose response could no longer be
// written stops (answering unavailable or generation_failed) instead of
// running on. Subscription streams (WebSockets, and subscriptions over
// Server-Sent Events) are meant to outlive it: /graphql lifts it from them
// once it knows (middleware.WithoutDeadline); no other request can.
func withDeadline(d time.Duration, next http.Handler) http.Handler {
	d = requestDeadline(d)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := middleware.WithDeadline(r.Context(), d)
		defer cancel()
		inner := r.WithContext(ctx)
		next.ServeHTTP(w, inner)
		// ServeMux records the route it matched on the request it was
		// given, this copy; hand it back for the access log and metrics
		// (middleware.Observe), which would otherwise see "unmatched".
		r.Pattern = inner.Pattern
	})
}

// requestDeadline is the deadline of a request's work under the server's
// write timeout: just short of it, so that the answer can still be written.
func requestDeadline(writeTimeout time.Duration) time.Duration {
	if writeTimeout > 2*time.Second {
		return writeTimeout - time.Second
	}
	return writeTimeout
}

// index is the landing page: where to go next, for people and for tools.
const index = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>procsvc</title></head>
<body>
<h1>procsvc</h1>
<ul>
<li><a href="/playground">GraphQL playground</a> (GraphiQL; paste your token in the headers editor)</li>
<li><code>POST /graphql</code>: the GraphQL API</li>
<li><a href="/openapi.json">/openapi.json</a>: the REST API's OpenAPI 3.1 document</li>
<li><a href="/healthz">/healthz</a>, <a href="/readyz">/readyz</a>, <a href="/metrics">/metrics</a></li>
</ul>
</body></html>
`

func serveIndex(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	_, _ = w.Write([]byte(index))
}
