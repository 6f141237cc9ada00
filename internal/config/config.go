// Package config reads procsvc's settings from flags and PROCSVC_*
// environment variables (flags win), with defaults that run out of the box.
package config

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/procsvc/procsvc/internal/contentgen"
	"github.com/procsvc/procsvc/internal/limits"
	"github.com/procsvc/procsvc/internal/oidc"
)

// Config is every setting of `procsvc serve`.
type Config struct {
	Addr            string
	MetricsAddr     string
	DatabaseURL     string
	DBMaxConns      int
	DBPrepare       bool
	LogFormat       string
	LogLevel        string
	BootstrapToken  string
	Migrate         bool
	ResponseCacheMB int
	// ResponseCacheWorkspaceMB is one workspace's share of the response
	// cache, 0 for a quarter of it.
	ResponseCacheWorkspaceMB int
	// MaxResponseMB bounds the bytes of each response, in MiB
	// (limits.ResponseBytes).
	MaxResponseMB int
	// MemoryLimitMB is the Go heap's soft limit (internal/server: memory.go).
	MemoryLimitMB     int
	IdempotencyKeyTTL time.Duration
	ShutdownTimeout   time.Duration
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	AI                contentgen.Config
	RateLimit         RateLimit
	AuthFailures      AuthFailures
	// ClientIPHeader names the header a trusted reverse proxy sets to the
	// client's address (its right-most entry is read); empty: the
	// connection's remote address.
	ClientIPHeader string
	Live           Live
	// OIDC is the identity providers whose tokens authenticate people
	// (internal/oidc; none by default: only pms_ tokens).
	OIDC oidc.Config
	// PlaygroundClientID is the client id, at the first OIDC issuer, of
	// the public client the playground's Sign in button uses (empty: no
	// button).
	PlaygroundClientID string

	// IdempotencyWorkspaceMB bounds the answers one workspace's
	// Idempotency-Keys keep for replay (internal/idempotency).
	IdempotencyWorkspaceMB int

	// DocumentCacheMB bounds the GraphQL documents (parsed, and persisted
	// queries) a replica keeps, DocumentCacheWorkspaceMB one workspace's
	// share of them (gqlhttp.Documents).
	DocumentCacheMB, DocumentCacheWorkspaceMB int

	// CountsInFlight bounds the distinct counts of list totals a replica
	// runs at once, CountsPerWorkspace one workspace's share of them
	// (core.WithCountLimits).
	CountsInFlight, CountsPerWorkspace int

	// PostgreSQL session settings of every pooled connection (0: the
	// server's own, normally none).
	DBLockTimeout              time.Duration
	DBStatementTimeout         time.Duration
	DBIdleInTransactionTimeout time.Duration

	// Failover and standbys (docs/operations.md, "Failover").
	DatabaseReadURL string
	// DatabaseListenURL is the session LISTEN uses (default: DatabaseURL),
	// for a DatabaseURL through PgBouncer in transaction mode.
	DatabaseListenURL string
	DBConnectTimeout  time.Duration
	DBProbeInterval   time.Duration
	DBProbeTimeout    time.Duration
	// SQLiteStatisticsInterval is how often a SQLite database's planner
	// statistics are refreshed while serving, besides once at start
	// (0: only at start).
	SQLiteStatisticsInterval time.Duration
	// ExportTimeout is the longest a workspace's download
	// (GET /workspace/export) may take in all.
	ExportTimeout time.Duration
	// ExportsInFlight bounds the workspace downloads a replica serves at
	// once (one per workspace).
	ExportsInFlight int
	// ReadYourWrites is how long a token's reads avoid standbys that have
	// not replayed its last write (0: only X-Min-Version does).
	ReadYourWrites time.Duration

	// EventRetention is how long the change log keeps events, and the
	// webhook deliveries their delivery log (core.PruneEvents,
	// webhooks.Prune).
	EventRetention time.Duration
	Webhooks       Webhooks
}

// Webhooks configures the delivery of events to webhook endpoints
// (internal/webhooks, docs/webhooks.md).
type Webhooks struct {
	// AllowPrivate lets deliveries connect to loopback, private and
	// link-local addresses: for endpoints on the operator's own network.
	AllowPrivate bool
	// Timeout bounds one attempt.
	Timeout time.Duration
	// Workers bounds the attempts this replica makes at once (0: it sends
	// none, and leaves the deliveries to the other replicas).
	Workers int
	// MemoryMB bounds the bytes of webhook work this replica holds, a
	// quarter of them for one workspace (webhooks.Options.Memory).
	MemoryMB int
}

// Live configures subscriptions (docs/api.md, "Live updates").
type Live struct {
	// SubscriptionsPerToken bounds the subscriptions one token holds open
	// at once, on each replica.
	SubscriptionsPerToken int
	// ReplayLimit bounds the events a resumed subscription is replayed
	// from the change log (docs/api.md, "Resuming a subscription").
	ReplayLimit int
	// Buffer is how many events a subscriber may lag behind before its
	// subscription is closed (it then resubscribes and refetches).
	Buffer int
	// WebSocketOrigins are the host patterns (path.Match syntax) of web
	// pages other than the server's own allowed to open WebSockets.
	WebSocketOrigins []string
	// WebSocketsPerToken bounds the WebSockets one token holds open at
	// once, subscriptions or not.
	WebSocketsPerToken int
	// MaxConnections bounds the live connections (WebSockets and
	// Server-Sent Events streams) one replica holds open.
	MaxConnections int
	// Recheck is how often an open subscription re-authenticates when no
	// access change was announced.
	Recheck time.Duration
	// WriteTimeout bounds each write to a live connection: a client that
	// takes nothing for that long is disconnected.
	WriteTimeout time.Duration
	// FlushInterval is the least time between two writes of an event
	// stream; events that come sooner are sent together.
	FlushInterval time.Duration
	// CacheMB bounds the memory of events' reads and renderings kept for
	// the subscribers still to be sent them.
	CacheMB int
	// MemoryMB bounds the renderings a replica holds for subscribers still
	// to send them (live events until written, replayed events until
	// written); WorkspaceMemoryMB is one workspace's share of it, 0 for
	// half of it (graph/live Options.MemoryBytes).
	MemoryMB, WorkspaceMemoryMB int
	// OperationsPerWorkspace bounds the distinct subscription operations
	// one workspace runs on one replica (each event is rendered once per
	// operation).
	OperationsPerWorkspace int
}

// RateLimit configures the per-token rate limit (internal/ratelimit): every
// API token has a bucket of Burst tokens refilled at Rate per second.
type RateLimit struct {
	// Rate is in tokens per second; 0 turns rate limiting off, Workspaces
	// included.
	Rate  float64
	Burst int
	// Workspaces overrides Rate and Burst for the tokens of a workspace,
	// keyed by workspace id (lower-case UUID).
	Workspaces map[string]WorkspaceRate
}

// AuthFailures limits failed authentications per client address
// (internal/auth: FailureLimit): each address has a bucket of Burst
// failures refilled at Rate per second.
type AuthFailures struct {
	// Rate is in failures per second; 0 turns the limit off.
	Rate  float64
	Burst int
}

// WorkspaceRate is one workspace's rate and burst; a rate of 0 exempts it.
type WorkspaceRate struct {
	Rate  float64
	Burst int
}

// setting is one flag with its environment variable.
type setting struct {
	flag, env, usage string
	bind             func(fs *flag.FlagSet, name, usage string)
	fromEnv          func(string) error
}

// Getenv looks up an environment variable; tests pass their own.
type Getenv func(string) string

// FlagSet returns the flag set of `serve` bound to c, and a function that
// applies environment variables to every setting not given as a flag.
func (c *Config) FlagSet(name string, out io.Writer) (*flag.FlagSet, func(Getenv) error) {
	*c = Config{
		Addr:              ":8080",
		DBMaxConns:        0,
		LogFormat:         "json",
		LogLevel:          "info",
		ResponseCacheMB:   64,
		MaxResponseMB:     limits.ResponseBytes >> 20,
		MemoryLimitMB:     120,
		IdempotencyKeyTTL: 24 * time.Hour,
		DBPrepare:         true,
		ShutdownTimeout:   20 * time.Second,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		AI:                contentgen.Config{Provider: contentgen.ProviderTemplate, Timeout: contentgen.DefaultTimeout, MaxRetries: contentgen.DefaultMaxRetries},
		RateLimit:         RateLimit{Rate: 50, Burst: 200},
		AuthFailures:      AuthFailures{Rate: 5, Burst: 100},
		OIDC: oidc.Config{ClockSkew: oidc.DefaultClockSkew, KeyRefetchInterval: oidc.DefaultKeyRefetchInterval,
			UserinfoTTL: oidc.DefaultUserinfoTTL},
		Live: Live{SubscriptionsPerToken: 20, Buffer: 64, ReplayLimit: 1000, WebSocketsPerToken: 20, MaxConnections: 10_000,
			Recheck: 30 * time.Second, WriteTimeout: 15 * time.Second, FlushInterval: 40 * time.Millisecond, CacheMB: 16,
			MemoryMB:               256,
			OperationsPerWorkspace: 100},

		DBLockTimeout:              5 * time.Second,
		DBStatementTimeout:         30 * time.Second,
		DBIdleInTransactionTimeout: 60 * time.Second,
		DBConnectTimeout:           5 * time.Second,
		DBProbeInterval:            time.Second,
		// SQLite's documentation suggests refreshing statistics hourly
		// for long-lived connections.
		SQLiteStatisticsInterval: time.Hour,
		ExportTimeout:            30 * time.Minute,
		ExportsInFlight:          2, // archive.DefaultInFlight
		DBProbeTimeout:           3 * time.Second,
		ReadYourWrites:           10 * time.Second,

		IdempotencyWorkspaceMB: 64,

		// core.DefaultCountsInFlight and DefaultCountsPerWorkspace (the
		// tests hold them equal).
		CountsInFlight: 6, CountsPerWorkspace: 4,

		// gqlhttp.DefaultDocumentCacheBytes and
		// DefaultDocumentCacheWorkspaceBytes (the tests hold them equal).
		DocumentCacheMB: 16, DocumentCacheWorkspaceMB: 2,

		// core.DefaultEventRetention, webhooks.DefaultTimeout and
		// webhooks.DefaultWorkers (the tests hold them equal).
		EventRetention: 30 * 24 * time.Hour,
		Webhooks:       Webhooks{Timeout: 10 * time.Second, Workers: 32, MemoryMB: 64},
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	settings := []setting{
		str(&c.Addr, "addr", "PROCSVC_ADDR", "listen address"),
		str(&c.MetricsAddr, "metrics-addr", "PROCSVC_METRICS_ADDR", "internal listen address of /metrics, with GraphQL operation names as labels (default: /metrics on --addr, without them)"),
		str(&c.DatabaseURL, "database-url", "DATABASE_URL", "postgres://… for PostgreSQL; sqlite://PATH for SQLite (default sqlite://data/procsvc.db)"),
		num(&c.DBMaxConns, "db-max-conns", "PROCSVC_DB_MAX_CONNS", "database connection pool size (0: 20 on PostgreSQL, 8 on SQLite)"),
		num(&c.CountsInFlight, "counts-in-flight", "PROCSVC_COUNTS_IN_FLIGHT", "distinct counts of list totals (a search, a due window) this replica runs at once; identical ones share one, and one more waits for a slot within its request's deadline (1 to 1000; keep it under --db-max-conns, which pages and writes need too)"),
		num(&c.CountsPerWorkspace, "counts-per-workspace", "PROCSVC_COUNTS_PER_WORKSPACE", "one workspace's share of --counts-in-flight: its counts past it wait for its own slots, never taking the others' (1 to --counts-in-flight)"),
		num(&c.ResponseCacheMB, "response-cache-mb", "PROCSVC_RESPONSE_CACHE_MB", "memory for cached read responses, keyed by workspace version (0 disables)"),
		num(&c.ResponseCacheWorkspaceMB, "response-cache-workspace-mb", "PROCSVC_RESPONSE_CACHE_WORKSPACE_MB", "one workspace's share of --response-cache-mb: past it, the workspace drops its own oldest responses, never another's (1 to --response-cache-mb; 0, the default: a quarter of it)"),
		num(&c.MaxResponseMB, "max-response-mb", "PROCSVC_MAX_RESPONSE_MB", "bound on each response, in MiB: a GraphQL response or REST list that would be larger is refused with 413 payload_too_large (16 to 4096; one procedure with its content and a page of its comments always fits in 16)"),
		num(&c.MemoryLimitMB, "memory-limit-mb", "PROCSVC_MEMORY_LIMIT_MB", "soft limit of the Go heap: garbage is collected as memory nears it rather than at every doubling (0: the Go runtime's defaults; GOGC or GOMEMLIMIT in the environment take precedence)"),
		dur(&c.IdempotencyKeyTTL, "idempotency-key-ttl", "PROCSVC_IDEMPOTENCY_KEY_TTL", "how long an Idempotency-Key and its response are kept for replay (1m to 720h)"),
		num(&c.IdempotencyWorkspaceMB, "idempotency-workspace-mb", "PROCSVC_IDEMPOTENCY_WORKSPACE_MB", "response bytes one workspace's Idempotency-Keys keep for replay at once; an answer beyond them is sent but not kept (1 to 65536)"),
		num(&c.DocumentCacheMB, "document-cache-mb", "PROCSVC_DOCUMENT_CACHE_MB", "memory for parsed GraphQL documents and persisted queries, every workspace's together; at the bound, the workspace used least recently gives back its oldest (1 to 4096)"),
		num(&c.DocumentCacheWorkspaceMB, "document-cache-workspace-mb", "PROCSVC_DOCUMENT_CACHE_WORKSPACE_MB", "one workspace's share of --document-cache-mb: past it, a workspace's oldest documents give way to its new ones, never another's; a larger document is not kept (1 to --document-cache-mb)"),
		boolean(&c.DBPrepare, "db-prepare", "PROCSVC_DB_PREPARE", "send statements (reads, and writes inside transactions) as prepared statements, planned (PostgreSQL) or compiled (SQLite) once per connection; set false behind PgBouncer in transaction mode"),
		dur(&c.DBLockTimeout, "db-lock-timeout", "PROCSVC_DB_LOCK_TIMEOUT", "PostgreSQL lock_timeout: a statement waiting longer for a lock fails, answered 503 (0 disables; PgBouncer needs 0 for all three --db-*-timeout settings or ignore_startup_parameters)"),
		dur(&c.DBStatementTimeout, "db-statement-timeout", "PROCSVC_DB_STATEMENT_TIMEOUT", "PostgreSQL statement_timeout: a statement running longer is cancelled, answered 503 (0 disables)"),
		dur(&c.DBIdleInTransactionTimeout, "db-idle-in-transaction-timeout", "PROCSVC_DB_IDLE_IN_TRANSACTION_TIMEOUT", "PostgreSQL idle_in_transaction_session_timeout: the server ends a session of procsvc's idle this long inside a transaction, releasing its locks (0 disables)"),
		str(&c.DatabaseReadURL, "database-read-url", "DATABASE_READ_URL", "PostgreSQL standbys that serve reads: postgres://…@h1,h2/db?port=p1,p2&target_session_attrs=prefer-standby (default: the primary serves every read)"),
		str(&c.DatabaseListenURL, "database-listen-url", "DATABASE_LISTEN_URL", "PostgreSQL URL of the session that LISTENs for other replicas' changes (default: --database-url); a direct URL when --database-url goes through PgBouncer in transaction mode, which cannot hold a LISTEN"),
		dur(&c.DBConnectTimeout, "db-connect-timeout", "PROCSVC_DB_CONNECT_TIMEOUT", "PostgreSQL connect_timeout for URLs without one: how long one host may take to accept a connection before the next host is tried (1s to 1m)"),
		dur(&c.DBProbeInterval, "db-probe-interval", "PROCSVC_DB_PROBE_INTERVAL", "how often each PostgreSQL pool's server is probed; a silent or demoted primary has its connections aborted and /readyz turns 503 (0 disables)"),
		dur(&c.DBProbeTimeout, "db-probe-timeout", "PROCSVC_DB_PROBE_TIMEOUT", "how long a probed server may take to answer before it counts as silent (100ms to 1m)"),
		dur(&c.SQLiteStatisticsInterval, "sqlite-statistics-interval", "PROCSVC_SQLITE_STATISTICS_INTERVAL", "SQLite: how often the query planner's statistics are refreshed for tables that have changed much (PRAGMA optimize), besides once at start (0: only at start; up to 24h)"),
		dur(&c.ReadYourWrites, "read-your-writes", "PROCSVC_READ_YOUR_WRITES", "with --database-read-url: for this long after a token's write, its reads skip standbys that have not replayed it (0: only the X-Min-Version header does)"),
		dur(&c.EventRetention, "event-retention", "PROCSVC_EVENT_RETENTION", "how long the change log keeps events, and webhook endpoints their deliveries (1h to 8760h); a webhook delivery still being retried when its event is pruned fails"),
		boolean(&c.Webhooks.AllowPrivate, "webhook-allow-private-addresses", "PROCSVC_WEBHOOK_ALLOW_PRIVATE_ADDRESSES", "let webhook deliveries connect to loopback, private (RFC 1918, fc00::/7), link-local, carrier-grade NAT and other non-public addresses; only for endpoints on a network the operator trusts every workspace admin with"),
		dur(&c.Webhooks.Timeout, "webhook-timeout", "PROCSVC_WEBHOOK_TIMEOUT", "how long one webhook delivery attempt may take, connecting, sending and reading the answer, before it counts as failed (1s to 60s)"),
		num(&c.Webhooks.Workers, "webhook-workers", "PROCSVC_WEBHOOK_WORKERS", "webhook delivery attempts this replica makes at once, at most a quarter of them to one endpoint and half to one workspace's endpoints (0 to 1000; 0: this replica sends no webhooks and leaves them to the others)"),
		num(&c.Webhooks.MemoryMB, "webhook-memory-mb", "PROCSVC_WEBHOOK_MEMORY_MB", "memory for the webhook deliveries this replica holds (their events' bodies, their answers), in MiB, a quarter of it for one workspace's; deliveries that do not fit wait in the database (1 to 65536)"),
		str(&c.LogFormat, "log-format", "PROCSVC_LOG_FORMAT", "log format: json or text"),
		str(&c.LogLevel, "log-level", "PROCSVC_LOG_LEVEL", "log level: debug, info, warn or error"),
		boolean(&c.Migrate, "migrate", "PROCSVC_MIGRATE", "apply pending PostgreSQL migrations before serving (SQLite always migrates)"),
		str(&c.BootstrapToken, "bootstrap-token", "PROCSVC_BOOTSTRAP_TOKEN", "admin token secret to create on an empty database (default: a random one, printed once)"),
		dur(&c.ShutdownTimeout, "shutdown-timeout", "PROCSVC_SHUTDOWN_TIMEOUT", "how long SIGTERM waits for in-flight requests"),
		dur(&c.ReadHeaderTimeout, "read-header-timeout", "PROCSVC_READ_HEADER_TIMEOUT", "HTTP read-header timeout"),
		dur(&c.ReadTimeout, "read-timeout", "PROCSVC_READ_TIMEOUT", "HTTP read timeout"),
		dur(&c.WriteTimeout, "write-timeout", "PROCSVC_WRITE_TIMEOUT", "HTTP write timeout"),
		num(&c.ExportsInFlight, "exports-in-flight", "PROCSVC_EXPORTS_IN_FLIGHT", "workspace downloads (GET /workspace/export) this replica serves at once, one per workspace; each holds a database connection while it runs (1 to 64; keep it well under --db-max-conns)"),
		dur(&c.ExportTimeout, "export-timeout", "PROCSVC_EXPORT_TIMEOUT", "the longest a workspace's download (GET /workspace/export) may take, however steadily the client reads; it holds one read transaction open meanwhile (1m to 24h)"),
		dur(&c.IdleTimeout, "idle-timeout", "PROCSVC_IDLE_TIMEOUT", "HTTP keep-alive idle timeout"),
		str(&c.AI.Provider, "ai-provider", "PROCSVC_AI_PROVIDER", "content generator for generateProcedure: template (offline) or openai (any OpenAI-compatible server)"),
		str(&c.AI.URL, "ai-url", "PROCSVC_AI_URL", "openai: base URL, e.g. http://127.0.0.1:11434 for Ollama"),
		str(&c.AI.Model, "ai-model", "PROCSVC_AI_MODEL", "openai: model name"),
		str(&c.AI.APIKey, "ai-api-key", "PROCSVC_AI_API_KEY", "openai: API key, optional for local servers (prefer the environment variable)"),
		dur(&c.AI.Timeout, "ai-timeout", "PROCSVC_AI_TIMEOUT", "openai: timeout of one attempt"),
		num(&c.AI.MaxRetries, "ai-max-retries", "PROCSVC_AI_MAX_RETRIES", fmt.Sprintf("openai: retries on 429, 5xx and connection errors (0 to %d)", contentgen.MaxMaxRetries)),
		float(&c.RateLimit.Rate, "rate-limit", "PROCSVC_RATE_LIMIT", "per-token rate limit: tokens per second refilling each API token's bucket, in this replica's memory; a REST request costs 1, a GraphQL operation ceil(complexity/100) (0 turns rate limiting off)"),
		num(&c.RateLimit.Burst, "rate-burst", "PROCSVC_RATE_BURST", "per-token rate limit: size of each API token's bucket, the most it spends at once"),
		float(&c.AuthFailures.Rate, "auth-failure-rate", "PROCSVC_AUTH_FAILURE_RATE", "failed authentications per second refilling each client address's bucket of failures, in this replica's memory; an address whose bucket is empty is refused 429 before any token lookup (0 turns the limit off)"),
		num(&c.AuthFailures.Burst, "auth-failure-burst", "PROCSVC_AUTH_FAILURE_BURST", "size of each client address's bucket of failed authentications (1 to 1000000)"),
		str(&c.ClientIPHeader, "client-ip-header", "PROCSVC_CLIENT_IP_HEADER", "header a trusted reverse proxy sets to the client's address, e.g. X-Forwarded-For: its right-most entry is the client address (default: none, the connection's remote address; never set it without such a proxy)"),
		num(&c.Live.SubscriptionsPerToken, "subscriptions-per-token", "PROCSVC_SUBSCRIPTIONS_PER_TOKEN", "live updates: subscriptions one token may hold open at once on this replica (1 to 1000); one more is refused with rate_limited"),
		num(&c.Live.Buffer, "subscription-buffer", "PROCSVC_SUBSCRIPTION_BUFFER", "live updates: events a subscriber may lag behind before its subscription is closed with an error, to be resubscribed (1 to 100000)"),
		num(&c.Live.ReplayLimit, "subscription-replay-limit", "PROCSVC_SUBSCRIPTION_REPLAY_LIMIT", "live updates: events a subscription resumed with afterVersion is replayed from the change log at most (1 to 100000); one further behind is sent REFETCH instead"),
		num(&c.Live.WebSocketsPerToken, "websockets-per-token", "PROCSVC_WEBSOCKETS_PER_TOKEN", "live updates: WebSockets one token may hold open at once on this replica, with or without subscriptions (1 to 1000); one more is closed with 4429"),
		num(&c.Live.MaxConnections, "max-live-connections", "PROCSVC_MAX_LIVE_CONNECTIONS", "live updates: WebSockets and Server-Sent Events streams this replica holds open at once (1 to 1000000); one more is refused with 503 unavailable"),
		dur(&c.Live.Recheck, "subscription-recheck", "PROCSVC_SUBSCRIPTION_RECHECK", "live updates: how often an open subscription re-authenticates its token when no access change was announced, the longest a revocation nobody announced goes unnoticed (1s to 1h)"),
		dur(&c.Live.WriteTimeout, "stream-write-timeout", "PROCSVC_STREAM_WRITE_TIMEOUT", "live updates: how long one write to a WebSocket or event stream may take; a client that reads nothing for that long is disconnected (1s to 5m)"),
		dur(&c.Live.FlushInterval, "stream-flush-interval", "PROCSVC_STREAM_FLUSH_INTERVAL", "live updates: the least time between two writes of a subscription (Server-Sent Events or WebSocket); events that come sooner are sent together in one write, delayed that much at most (0 to 1s; 0 writes every event at once)"),
		num(&c.Live.OperationsPerWorkspace, "live-operations-per-workspace", "PROCSVC_LIVE_OPERATIONS_PER_WORKSPACE", "live updates: distinct subscription operations (document, variables and role) one workspace runs on this replica, each event being rendered once per operation (1 to 10000); one more is refused with rate_limited"),
		num(&c.Live.CacheMB, "live-cache-mb", "PROCSVC_LIVE_CACHE_MB", "live updates: memory for events' reads and renderings kept for subscribers still to be sent them (1 to 4096)"),
		num(&c.Live.MemoryMB, "live-memory-mb", "PROCSVC_LIVE_MEMORY_MB", "live updates: memory for the renderings held for subscribers until they are written, live events and replayed ones (1 to 65536); past it, or past a workspace's share, the subscriptions asking for more end with unavailable, to resume later"),
		num(&c.Live.WorkspaceMemoryMB, "live-workspace-memory-mb", "PROCSVC_LIVE_WORKSPACE_MEMORY_MB", "live updates: one workspace's share of --live-memory-mb (1 to --live-memory-mb; 0, the default: half of it)"),
		list(&c.Live.WebSocketOrigins, "websocket-origins", "PROCSVC_WEBSOCKET_ORIGINS", "live updates: host patterns of web pages, besides this server's own host, allowed to open WebSockets, comma-separated (e.g. app.example.com,*.example.com)"),
		list(&c.OIDC.Issuers, "oidc-issuer", "PROCSVC_OIDC_ISSUER", "sign-in: issuer URL of an OpenID Connect provider whose ID and access tokens authenticate people as the members invited with their verified email, discovered at its first token; https://, or http:// on loopback only; several comma-separated (default: none, only pms_ tokens)"),
		list(&c.OIDC.Audiences, "oidc-audience", "PROCSVC_OIDC_AUDIENCE", "sign-in: client ids (or API audiences) a provider's JWT must be issued for, comma-separated; required with --oidc-issuer"),
		dur(&c.OIDC.ClockSkew, "oidc-clock-skew", "PROCSVC_OIDC_CLOCK_SKEW", "sign-in: how far a provider token's exp and nbf may be off this server's clock (1s to 5m)"),
		dur(&c.OIDC.KeyRefetchInterval, "oidc-key-refetch-interval", "PROCSVC_OIDC_KEY_REFETCH_INTERVAL", "sign-in: the least time between two fetches of a provider's keys (JWKS) on a token signed with a key id it lacks, or two attempts of its discovery (1s to 1h)"),
		dur(&c.OIDC.UserinfoTTL, "oidc-userinfo-ttl", "PROCSVC_OIDC_USERINFO_TTL", "sign-in: how long a provider's userinfo answer about an opaque access token is reused, the longest a token revoked at the provider keeps working (1s to 1h)"),
		str(&c.PlaygroundClientID, "oidc-playground-client-id", "PROCSVC_OIDC_PLAYGROUND_CLIENT_ID", "sign-in: client id of a public client (authorization code with PKCE, redirect URI this server's /playground URL) at the first --oidc-issuer, for the playground's Sign in button (default: none, no button)"),
		workspaceRates(&c.RateLimit.Workspaces, "rate-limit-workspace", "PROCSVC_RATE_LIMIT_WORKSPACES", "per-token rate limit of one workspace's tokens, as WORKSPACE_ID=RATE/BURST, or WORKSPACE_ID=0 for none; repeat the flag, or separate with commas"),
	}
	for _, s := range settings {
		s.bind(fs, s.flag, fmt.Sprintf("%s (env %s)", s.usage, s.env))
	}
	applyEnv := func(getenv Getenv) error {
		given := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
		for _, s := range settings {
			if given[s.flag] {
				continue
			}
			if v := getenv(s.env); v != "" {
				if err := s.fromEnv(v); err != nil {
					return fmt.Errorf("invalid %s=%q: %w", s.env, v, err)
				}
			}
		}
		return c.validate()
	}
	return fs, applyEnv
}
