package config

import (
	"errors"
	"fmt"
	"math"
	"path"
	"strings"
	"time"

	"github.com/procsvc/procsvc/internal/contentgen"
	"github.com/procsvc/procsvc/internal/limits"
)

// validate checks every setting's value and range once they are all read
// (flags over the environment over the defaults): one error naming each
// setting that is wrong, with its flag and variable.
func (c *Config) validate() error {
	var errs []error
	if c.LogFormat != "json" && c.LogFormat != "text" {
		errs = append(errs, fmt.Errorf("invalid log format %q: use json or text (--log-format, PROCSVC_LOG_FORMAT)", c.LogFormat))
	}
	switch strings.ToLower(c.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("invalid log level %q: use debug, info, warn or error (--log-level, PROCSVC_LOG_LEVEL)", c.LogLevel))
	}
	if c.AI.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("--ai-timeout must be positive, got %s (PROCSVC_AI_TIMEOUT)", c.AI.Timeout))
	}
	if c.AI.MaxRetries < 0 || c.AI.MaxRetries > contentgen.MaxMaxRetries {
		errs = append(errs, fmt.Errorf("invalid retry count %d: use 0 to %d (--ai-max-retries, PROCSVC_AI_MAX_RETRIES)", c.AI.MaxRetries, contentgen.MaxMaxRetries))
	}
	if c.ResponseCacheMB < 0 || c.ResponseCacheMB > 1<<16 {
		errs = append(errs, fmt.Errorf("invalid response cache size %d MB: use 0 to 65536 (--response-cache-mb, PROCSVC_RESPONSE_CACHE_MB)", c.ResponseCacheMB))
	} else if c.ResponseCacheWorkspaceMB < 0 || c.ResponseCacheWorkspaceMB > c.ResponseCacheMB {
		errs = append(errs, fmt.Errorf("invalid response cache share %d MB: use 1 to --response-cache-mb (%d), or 0 for a quarter of it (--response-cache-workspace-mb, PROCSVC_RESPONSE_CACHE_WORKSPACE_MB)", c.ResponseCacheWorkspaceMB, c.ResponseCacheMB))
	}
	if least := limits.ResponseBytes >> 20; c.MaxResponseMB < least || c.MaxResponseMB > 4096 {
		errs = append(errs, fmt.Errorf("invalid response bound %d MiB: use %d to 4096 (--max-response-mb, PROCSVC_MAX_RESPONSE_MB)", c.MaxResponseMB, least))
	}
	if c.MemoryLimitMB != 0 && (c.MemoryLimitMB < c.ResponseCacheMB+32 || c.MemoryLimitMB > 1<<20) {
		errs = append(errs, fmt.Errorf("invalid memory limit %d MB: use 0, or at least the response cache + 32 MB (%d) (--memory-limit-mb, PROCSVC_MEMORY_LIMIT_MB)", c.MemoryLimitMB, c.ResponseCacheMB+32))
	}
	if c.IdempotencyKeyTTL < time.Minute || c.IdempotencyKeyTTL > 30*24*time.Hour {
		errs = append(errs, fmt.Errorf("invalid Idempotency-Key TTL %s: use 1m to 720h (--idempotency-key-ttl, PROCSVC_IDEMPOTENCY_KEY_TTL)", c.IdempotencyKeyTTL))
	}
	if c.IdempotencyWorkspaceMB < 1 || c.IdempotencyWorkspaceMB > 1<<16 {
		errs = append(errs, fmt.Errorf("invalid Idempotency-Key budget %d MB: use 1 to 65536 (--idempotency-workspace-mb, PROCSVC_IDEMPOTENCY_WORKSPACE_MB)", c.IdempotencyWorkspaceMB))
	}
	if c.DocumentCacheMB < 1 || c.DocumentCacheMB > 4096 {
		errs = append(errs, fmt.Errorf("invalid document cache size %d MB: use 1 to 4096 (--document-cache-mb, PROCSVC_DOCUMENT_CACHE_MB)", c.DocumentCacheMB))
	} else if c.DocumentCacheWorkspaceMB < 1 || c.DocumentCacheWorkspaceMB > c.DocumentCacheMB {
		errs = append(errs, fmt.Errorf("invalid document cache share %d MB: use 1 to the document cache's %d (--document-cache-workspace-mb, PROCSVC_DOCUMENT_CACHE_WORKSPACE_MB)", c.DocumentCacheWorkspaceMB, c.DocumentCacheMB))
	}
	if c.WriteTimeout > 0 && c.IdempotencyKeyTTL <= c.WriteTimeout {
		// A key must outlive the execution it guards: its row is taken
		// over once older than the write timeout.
		errs = append(errs, fmt.Errorf("--idempotency-key-ttl (PROCSVC_IDEMPOTENCY_KEY_TTL, %s) must be longer than --write-timeout (PROCSVC_WRITE_TIMEOUT, %s)", c.IdempotencyKeyTTL, c.WriteTimeout))
	}
	if c.DBMaxConns < 0 || c.DBMaxConns > 1000 {
		errs = append(errs, fmt.Errorf("invalid pool size %d: use 0 to 1000 (--db-max-conns, PROCSVC_DB_MAX_CONNS)", c.DBMaxConns))
	}
	if c.CountsInFlight < 1 || c.CountsInFlight > 1000 {
		errs = append(errs, fmt.Errorf("invalid counts in flight %d: use 1 to 1000 (--counts-in-flight, PROCSVC_COUNTS_IN_FLIGHT)", c.CountsInFlight))
	} else if c.CountsPerWorkspace < 1 || c.CountsPerWorkspace > c.CountsInFlight {
		errs = append(errs, fmt.Errorf("invalid counts per workspace %d: use 1 to --counts-in-flight's %d (--counts-per-workspace, PROCSVC_COUNTS_PER_WORKSPACE)", c.CountsPerWorkspace, c.CountsInFlight))
	}
	if c.RateLimit.Rate < 0 || math.IsNaN(c.RateLimit.Rate) || math.IsInf(c.RateLimit.Rate, 0) {
		errs = append(errs, fmt.Errorf("invalid rate limit %v: use 0 (off) or a positive number of tokens per second (--rate-limit, PROCSVC_RATE_LIMIT)", c.RateLimit.Rate))
	}
	if c.RateLimit.Rate > 0 && c.RateLimit.Burst < 1 {
		errs = append(errs, fmt.Errorf("invalid rate burst %d: use at least 1 (--rate-burst, PROCSVC_RATE_BURST)", c.RateLimit.Burst))
	}
	if c.AuthFailures.Rate < 0 || math.IsNaN(c.AuthFailures.Rate) || math.IsInf(c.AuthFailures.Rate, 0) {
		errs = append(errs, fmt.Errorf("invalid failure rate %v: use 0 (off) or a positive number of failures per second (--auth-failure-rate, PROCSVC_AUTH_FAILURE_RATE)", c.AuthFailures.Rate))
	}
	if c.AuthFailures.Rate > 0 && (c.AuthFailures.Burst < 1 || c.AuthFailures.Burst > 1_000_000) {
		errs = append(errs, fmt.Errorf("invalid failure burst %d: use 1 to 1000000 (--auth-failure-burst, PROCSVC_AUTH_FAILURE_BURST)", c.AuthFailures.Burst))
	}
	if err := c.OIDC.Check(); err != nil {
		errs = append(errs, fmt.Errorf("%w (--oidc-issuer, --oidc-audience, PROCSVC_OIDC_ISSUER, PROCSVC_OIDC_AUDIENCE)", err))
	}
	if c.PlaygroundClientID != "" && !c.OIDC.Enabled() {
		errs = append(errs, errors.New("a playground client id is set without an OIDC issuer: set --oidc-issuer too (--oidc-playground-client-id, PROCSVC_OIDC_PLAYGROUND_CLIENT_ID)"))
	}
	if c.OIDC.ClockSkew < time.Second || c.OIDC.ClockSkew > 5*time.Minute {
		errs = append(errs, fmt.Errorf("invalid clock skew %s: use 1s to 5m (--oidc-clock-skew, PROCSVC_OIDC_CLOCK_SKEW)", c.OIDC.ClockSkew))
	}
	if c.OIDC.KeyRefetchInterval < time.Second || c.OIDC.KeyRefetchInterval > time.Hour {
		errs = append(errs, fmt.Errorf("invalid key refetch interval %s: use 1s to 1h (--oidc-key-refetch-interval, PROCSVC_OIDC_KEY_REFETCH_INTERVAL)", c.OIDC.KeyRefetchInterval))
	}
	if c.OIDC.UserinfoTTL < time.Second || c.OIDC.UserinfoTTL > time.Hour {
		errs = append(errs, fmt.Errorf("invalid userinfo TTL %s: use 1s to 1h (--oidc-userinfo-ttl, PROCSVC_OIDC_USERINFO_TTL)", c.OIDC.UserinfoTTL))
	}
	if err := validHeaderName(c.ClientIPHeader); err != nil {
		errs = append(errs, fmt.Errorf("invalid client IP header %q: %w (--client-ip-header, PROCSVC_CLIENT_IP_HEADER)", c.ClientIPHeader, err))
	}
	if c.Live.SubscriptionsPerToken < 1 || c.Live.SubscriptionsPerToken > 1000 {
		errs = append(errs, fmt.Errorf("invalid subscriptions per token %d: use 1 to 1000 (--subscriptions-per-token, PROCSVC_SUBSCRIPTIONS_PER_TOKEN)", c.Live.SubscriptionsPerToken))
	}
	if c.Live.WebSocketsPerToken < 1 || c.Live.WebSocketsPerToken > 1000 {
		errs = append(errs, fmt.Errorf("invalid WebSockets per token %d: use 1 to 1000 (--websockets-per-token, PROCSVC_WEBSOCKETS_PER_TOKEN)", c.Live.WebSocketsPerToken))
	}
	if c.Live.MaxConnections < 1 || c.Live.MaxConnections > 1_000_000 {
		errs = append(errs, fmt.Errorf("invalid live connection limit %d: use 1 to 1000000 (--max-live-connections, PROCSVC_MAX_LIVE_CONNECTIONS)", c.Live.MaxConnections))
	}
	if c.Live.Recheck < time.Second || c.Live.Recheck > time.Hour {
		errs = append(errs, fmt.Errorf("invalid subscription re-check interval %s: use 1s to 1h (--subscription-recheck, PROCSVC_SUBSCRIPTION_RECHECK)", c.Live.Recheck))
	}
	if c.Live.WriteTimeout < time.Second || c.Live.WriteTimeout > 5*time.Minute {
		errs = append(errs, fmt.Errorf("invalid stream write timeout %s: use 1s to 5m (--stream-write-timeout, PROCSVC_STREAM_WRITE_TIMEOUT)", c.Live.WriteTimeout))
	}
	if c.Live.OperationsPerWorkspace < 1 || c.Live.OperationsPerWorkspace > 10_000 {
		errs = append(errs, fmt.Errorf("invalid operations per workspace %d: use 1 to 10000 (--live-operations-per-workspace, PROCSVC_LIVE_OPERATIONS_PER_WORKSPACE)", c.Live.OperationsPerWorkspace))
	}
	if c.Live.FlushInterval < 0 || c.Live.FlushInterval > time.Second {
		errs = append(errs, fmt.Errorf("invalid stream flush interval %s: use 0 to 1s (--stream-flush-interval, PROCSVC_STREAM_FLUSH_INTERVAL)", c.Live.FlushInterval))
	}
	if c.Live.CacheMB < 1 || c.Live.CacheMB > 4096 {
		errs = append(errs, fmt.Errorf("invalid live cache size %d MB: use 1 to 4096 (--live-cache-mb, PROCSVC_LIVE_CACHE_MB)", c.Live.CacheMB))
	}
	if c.Live.MemoryMB < 1 || c.Live.MemoryMB > 1<<16 {
		errs = append(errs, fmt.Errorf("invalid live memory %d MB: use 1 to 65536 (--live-memory-mb, PROCSVC_LIVE_MEMORY_MB)", c.Live.MemoryMB))
	} else if c.Live.WorkspaceMemoryMB < 0 || c.Live.WorkspaceMemoryMB > c.Live.MemoryMB {
		errs = append(errs, fmt.Errorf("invalid live memory per workspace %d MB: use 1 to --live-memory-mb (%d), or 0 for half of it (--live-workspace-memory-mb, PROCSVC_LIVE_WORKSPACE_MEMORY_MB)", c.Live.WorkspaceMemoryMB, c.Live.MemoryMB))
	}
	if c.Live.ReplayLimit < 1 || c.Live.ReplayLimit > 100_000 {
		errs = append(errs, fmt.Errorf("invalid subscription replay limit %d: use 1 to 100000 (--subscription-replay-limit, PROCSVC_SUBSCRIPTION_REPLAY_LIMIT)", c.Live.ReplayLimit))
	}
	if c.Live.Buffer < 1 || c.Live.Buffer > 100_000 {
		errs = append(errs, fmt.Errorf("invalid subscription buffer %d: use 1 to 100000 (--subscription-buffer, PROCSVC_SUBSCRIPTION_BUFFER)", c.Live.Buffer))
	}
	for _, p := range c.Live.WebSocketOrigins {
		if _, err := path.Match(p, ""); err != nil || strings.Contains(p, "/") {
			errs = append(errs, fmt.Errorf("invalid WebSocket origin pattern %q: use a host or a host pattern such as *.example.com (--websocket-origins, PROCSVC_WEBSOCKET_ORIGINS)", p))
		}
	}
	if c.DBConnectTimeout < time.Second || c.DBConnectTimeout > time.Minute {
		errs = append(errs, fmt.Errorf("invalid connect timeout %s: use 1s to 1m (--db-connect-timeout, PROCSVC_DB_CONNECT_TIMEOUT)", c.DBConnectTimeout))
	}
	if c.DBProbeInterval < 0 || c.DBProbeInterval > time.Minute || (c.DBProbeInterval > 0 && c.DBProbeInterval < 100*time.Millisecond) {
		errs = append(errs, fmt.Errorf("invalid probe interval %s: use 0 (off) or 100ms to 1m (--db-probe-interval, PROCSVC_DB_PROBE_INTERVAL)", c.DBProbeInterval))
	}
	if c.DBProbeTimeout < 100*time.Millisecond || c.DBProbeTimeout > time.Minute {
		errs = append(errs, fmt.Errorf("invalid probe timeout %s: use 100ms to 1m (--db-probe-timeout, PROCSVC_DB_PROBE_TIMEOUT)", c.DBProbeTimeout))
	}
	if c.ReadYourWrites < 0 || c.ReadYourWrites > time.Hour {
		errs = append(errs, fmt.Errorf("invalid read-your-writes window %s: use 0 to 1h (--read-your-writes, PROCSVC_READ_YOUR_WRITES)", c.ReadYourWrites))
	}
	if c.SQLiteStatisticsInterval < 0 || c.SQLiteStatisticsInterval > 24*time.Hour || (c.SQLiteStatisticsInterval > 0 && c.SQLiteStatisticsInterval < time.Minute) {
		errs = append(errs, fmt.Errorf("invalid statistics interval %s: use 0 (only at start) or 1m to 24h (--sqlite-statistics-interval, PROCSVC_SQLITE_STATISTICS_INTERVAL)", c.SQLiteStatisticsInterval))
	}
	if c.ExportsInFlight < 1 || c.ExportsInFlight > 64 {
		errs = append(errs, fmt.Errorf("invalid exports in flight %d: use 1 to 64 (--exports-in-flight, PROCSVC_EXPORTS_IN_FLIGHT)", c.ExportsInFlight))
	}
	if c.ExportTimeout < time.Minute || c.ExportTimeout > 24*time.Hour {
		errs = append(errs, fmt.Errorf("invalid export timeout %s: use 1m to 24h (--export-timeout, PROCSVC_EXPORT_TIMEOUT)", c.ExportTimeout))
	}
	if c.EventRetention < time.Hour || c.EventRetention > 8760*time.Hour {
		errs = append(errs, fmt.Errorf("invalid event retention %s: use 1h to 8760h (--event-retention, PROCSVC_EVENT_RETENTION)", c.EventRetention))
	}
	if c.Webhooks.Timeout < time.Second || c.Webhooks.Timeout > time.Minute {
		errs = append(errs, fmt.Errorf("invalid webhook timeout %s: use 1s to 60s (--webhook-timeout, PROCSVC_WEBHOOK_TIMEOUT)", c.Webhooks.Timeout))
	}
	if c.Webhooks.Workers < 0 || c.Webhooks.Workers > 1000 {
		errs = append(errs, fmt.Errorf("invalid webhook workers %d: use 0 to 1000 (--webhook-workers, PROCSVC_WEBHOOK_WORKERS)", c.Webhooks.Workers))
	}
	if c.Webhooks.MemoryMB < 1 || c.Webhooks.MemoryMB > 1<<16 {
		errs = append(errs, fmt.Errorf("invalid webhook memory %d MB: use 1 to 65536 (--webhook-memory-mb, PROCSVC_WEBHOOK_MEMORY_MB)", c.Webhooks.MemoryMB))
	}
	for flag, u := range map[string]string{"--database-read-url (DATABASE_READ_URL)": c.DatabaseReadURL, "--database-listen-url (DATABASE_LISTEN_URL)": c.DatabaseListenURL} {
		if u != "" && !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
			errs = append(errs, fmt.Errorf("%s must be a postgres:// URL", flag))
		}
	}
	for name, d := range map[string]time.Duration{
		"--db-lock-timeout (PROCSVC_DB_LOCK_TIMEOUT)":                               c.DBLockTimeout,
		"--db-statement-timeout (PROCSVC_DB_STATEMENT_TIMEOUT)":                     c.DBStatementTimeout,
		"--db-idle-in-transaction-timeout (PROCSVC_DB_IDLE_IN_TRANSACTION_TIMEOUT)": c.DBIdleInTransactionTimeout,
	} {
		// PostgreSQL counts in milliseconds; a shorter non-zero value would
		// silently disable the setting.
		if d != 0 && (d < time.Millisecond || d%time.Millisecond != 0) {
			errs = append(errs, fmt.Errorf("%s must be 0 (disabled) or a positive whole number of milliseconds, got %s", name, d))
		}
	}
	for name, d := range map[string]time.Duration{
		"--shutdown-timeout": c.ShutdownTimeout, "--read-header-timeout": c.ReadHeaderTimeout,
		"--read-timeout": c.ReadTimeout, "--write-timeout": c.WriteTimeout, "--idle-timeout": c.IdleTimeout,
	} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %s", name, d))
		}
	}
	return errors.Join(errs...)
}

// validHeaderName accepts "" (no header) and an HTTP header name holding a
// comma-separated list of addresses. Forwarded (RFC 7239) has a syntax of
// its own, which is not read.
func validHeaderName(name string) error {
	if strings.EqualFold(name, "Forwarded") {
		return errors.New("the Forwarded header is not supported: use a header of bare addresses such as X-Forwarded-For or X-Real-IP")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return errors.New("not a header name")
		}
	}
	return nil
}
