package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"entgo.io/ent/dialect"

	"github.com/procsvc/procsvc/graph/live"
	"github.com/procsvc/procsvc/internal/auth"
	"github.com/procsvc/procsvc/internal/config"
	"github.com/procsvc/procsvc/internal/contentgen"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/events"
	"github.com/procsvc/procsvc/internal/idempotency"
	"github.com/procsvc/procsvc/internal/metrics"
	"github.com/procsvc/procsvc/internal/oidc"
	"github.com/procsvc/procsvc/internal/periodic"
	"github.com/procsvc/procsvc/internal/playground"
)

// Run serves cfg until ctx is cancelled, then drains in-flight requests for
// at most cfg.ShutdownTimeout. It binds cfg.Addr before touching the
// database; then, on an empty database, it creates a demo workspace and
// prints its admin token to out, and it prints the URLs it serves to out.
// ready, if set, is told the bound address once the server accepts
// connections.
func Run(ctx context.Context, cfg config.Config, log *slog.Logger, out io.Writer, ready func(addr string)) error {
	gen, summary, err := newGenerator(cfg.AI)
	if err != nil {
		return err
	}
	limiter, err := NewRateLimiter(cfg.RateLimit)
	if err != nil {
		return err
	}
	defer applyMemoryLimit(cfg.MemoryLimitMB, log)()
	if cfg.AI.Provider == contentgen.ProviderOpenAI && cfg.WriteTimeout <= cfg.AI.Timeout {
		log.Warn("--write-timeout is not longer than --ai-timeout: a slow generation outlives its response", "write_timeout", cfg.WriteTimeout.String(), "ai_timeout", cfg.AI.Timeout.String())
	}
	// Listening comes first: a second start while another server holds
	// the port must fail before it opens, migrates or bootstraps anything,
	// or it would create a demo workspace and print a token no server
	// then serves (and the next successful start would print none).
	ln, err := listen(cfg.Addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	probeInterval := cfg.DBProbeInterval
	if probeInterval == 0 {
		probeInterval = -1 // off
	}
	db, err := database.Open(ctx, cfg.DatabaseURL, database.Options{MaxOpenConns: cfg.DBMaxConns, Prepare: cfg.DBPrepare,
		LockTimeout: cfg.DBLockTimeout, StatementTimeout: cfg.DBStatementTimeout, IdleInTransactionTimeout: cfg.DBIdleInTransactionTimeout,
		ConnectTimeout: cfg.DBConnectTimeout, ProbeInterval: probeInterval, ProbeTimeout: cfg.DBProbeTimeout,
		ReadURL: cfg.DatabaseReadURL, Log: log})
	if err != nil {
		return err
	}
	defer db.Close()
	// The first line logged: which database this is (a newcomer's
	// mistyped URL shows here, not in an empty workspace list later).
	log.Info("database opened", "database", database.Where(cfg.DatabaseURL))
	log.Info(summary)
	if cfg.Migrate {
		err = db.Migrate(ctx)
	} else {
		err = db.Ready(ctx)
	}
	if err != nil {
		return err
	}
	defer startStatistics(ctx, db, cfg.SQLiteStatisticsInterval, log)()
	// Committed changes reach this replica's subscriptions through hub: on
	// PostgreSQL by LISTEN, so that writes made on other replicas arrive
	// too, listening before serving so that none made after the first
	// subscription is missed.
	hub := events.NewHub(events.HubOptions{Buffer: cfg.Live.Buffer})
	defer hub.Close()
	svc := core.New(db.Client, core.WithGenerator(gen), core.WithAnnouncer(Announcer(db, hub)),
		core.WithLockPolicy(core.LockPolicyFor(db.Dialect)), core.WithPrivateWebhookAddresses(cfg.Webhooks.AllowPrivate),
		core.WithCountLimits(cfg.CountsPerWorkspace, cfg.CountsInFlight))
	if db.Dialect == "postgres" {
		listenURL := cfg.DatabaseListenURL
		if listenURL == "" {
			listenURL = cfg.DatabaseURL
		}
		listener, err := events.Listen(ctx, listenURL, hub, log, events.ListenOptions{
			ProbeInterval: probeInterval, ProbeTimeout: cfg.DBProbeTimeout, ConnectTimeout: cfg.DBConnectTimeout})
		if err != nil {
			return err
		}
		defer listener.Close()
	}
	// Expired Idempotency-Keys are purged in the background until the
	// server stops, before the database closes.
	defer idempotency.New(db.Client, idempotency.Options{Log: log}).StartPurger(ctx, 0)()
	// The metrics listener too is bound before bootstrap, for the same
	// reason as the API's.
	m := metrics.New(db.SQL)
	if cfg.MetricsAddr != "" {
		m = metrics.New(db.SQL, metrics.WithOperationNames())
		stop, err := serveMetrics(cfg, m, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	// Events are sent to webhooks from the change log, woken by every
	// commit the hub hears; the log and the deliveries are pruned hourly.
	// Both stop before the database closes.
	defer startWebhooks(cfg.Webhooks, db, hub, m, log)()
	defer startRetention(ctx, svc, db, cfg.EventRetention, DefaultRetentionEvery, log)()
	if err := bootstrap(ctx, svc, cfg.BootstrapToken, out); err != nil {
		return err
	}
	authOptions := []auth.Option{auth.WithFailureLimit(auth.FailureLimit{Rate: cfg.AuthFailures.Rate, Burst: cfg.AuthFailures.Burst})}
	if cfg.OIDC.Enabled() {
		verifier, err := oidc.New(cfg.OIDC)
		if err != nil {
			return err
		}
		authOptions = append(authOptions, auth.WithOIDC(verifier))
		log.Info("sign-in with identity providers", "issuers", cfg.OIDC.Issuers, "audiences", cfg.OIDC.Audiences)
	}
	// The playground signs in at the first issuer (docs/api.md, "The
	// playground's Sign in button"); a bad pairing is refused here, in one
	// line, before the handler is built.
	var playgroundSignIn playground.SignIn
	if cfg.PlaygroundClientID != "" && cfg.OIDC.Enabled() {
		playgroundSignIn = playground.SignIn{Issuer: cfg.OIDC.Issuers[0], ClientID: cfg.PlaygroundClientID}
		if _, err := playground.NewHandler(playgroundSignIn); err != nil {
			return err
		}
		log.Info("playground sign-in", "issuer", playgroundSignIn.Issuer, "client_id", playgroundSignIn.ClientID)
	}
	srv := &http.Server{
		Handler: NewHandler(Deps{DB: db, Service: svc, Log: log, Metrics: m, ResponseCacheBytes: int64(cfg.ResponseCacheMB) << 20,
			ResponseCacheWorkspaceBytes: int64(cfg.ResponseCacheWorkspaceMB) << 20,
			RequestTimeout:              cfg.WriteTimeout, ExportTimeout: cfg.ExportTimeout, ExportsInFlight: cfg.ExportsInFlight, RateLimit: limiter, IdempotencyTTL: cfg.IdempotencyKeyTTL,
			IdempotencyWorkspaceBytes: int64(cfg.IdempotencyWorkspaceMB) << 20, Hub: hub, MaxResponseBytes: cfg.MaxResponseMB << 20,
			Live: live.Options{MaxPerToken: cfg.Live.SubscriptionsPerToken, Buffer: cfg.Live.Buffer, ReplayLimit: cfg.Live.ReplayLimit, Origins: cfg.Live.WebSocketOrigins,
				WebSocketsPerToken: cfg.Live.WebSocketsPerToken, MaxConnections: cfg.Live.MaxConnections,
				Recheck: cfg.Live.Recheck, WriteTimeout: cfg.Live.WriteTimeout, FlushInterval: cfg.Live.FlushInterval, CacheBytes: int64(cfg.Live.CacheMB) << 20,
				MemoryBytes: int64(cfg.Live.MemoryMB) << 20, WorkspaceMemoryBytes: int64(cfg.Live.WorkspaceMemoryMB) << 20,
				OperationsPerWorkspace: cfg.Live.OperationsPerWorkspace},
			Auth: authOptions, PlaygroundSignIn: playgroundSignIn,
			ClientIPHeader: cfg.ClientIPHeader, ReadYourWrites: cfg.ReadYourWrites,
			DocumentCacheBytes: int64(cfg.DocumentCacheMB) << 20, DocumentCacheWorkspaceBytes: int64(cfg.DocumentCacheWorkspaceMB) << 20}),
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	// Shutting down ends every subscription first: Server-Sent Events
	// streams finish (the drain waits for them) and WebSockets close with
	// 1001, so that clients resubscribe elsewhere at once.
	srv.RegisterOnShutdown(hub.Close)
	log.Info("procsvc listening", "addr", ln.Addr().String(), "database", db.Dialect)
	base := baseURL(ln.Addr())
	fmt.Fprintf(out, "procsvc: listening on %s — GraphQL %s/graphql, playground %s%s\n", base, base, base, playground.Path)
	if ready != nil {
		ready(ln.Addr().String())
	}
	return serveUntil(ctx, srv, ln, cfg.ShutdownTimeout, log)
}

// listen binds the API's address. Its errors say what to do: a port
// already taken is most often a procsvc started earlier.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln, nil
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("cannot listen on %s: %w — is another procsvc running? use --addr (PROCSVC_ADDR) to pick another address", addr, syscall.EADDRINUSE)
	}
	// A *net.OpError repeats the address ("listen tcp :80: bind: …");
	// what follows it is the cause.
	var op *net.OpError
	if errors.As(err, &op) {
		err = op.Err
	}
	return nil, fmt.Errorf("cannot listen on %s (--addr): %w", addr, err)
}

// baseURL is the URL of the API at addr, the address it listens on: an
// unspecified host (":8080", "0.0.0.0:8080", "[::]:8080") is reachable as
// localhost, and that is the URL a newcomer can open.
func baseURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String()
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// serveUntil serves on ln until ctx ends (SIGINT or SIGTERM in main), then
// stops accepting and waits up to drain for in-flight requests to finish.
// The database is closed by the caller only after this returns.
func serveUntil(ctx context.Context, srv *http.Server, ln net.Listener, drain time.Duration, log *slog.Logger) error {
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down", "drain_timeout", drain.String())
	drainCtx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if err := srv.Shutdown(drainCtx); err != nil {
		return fmt.Errorf("shutdown: in-flight requests did not finish within %s: %w", drain, err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}

// bootstrap makes a first start useful: a demo workspace with an admin, one
// project, one category and one procedure, and the admin's token printed once.
func bootstrap(ctx context.Context, svc *core.Service, secret string, out io.Writer) error {
	exists, err := svc.HasWorkspace(ctx)
	if err != nil || exists {
		return err
	}
	b, err := svc.CreateWorkspace(ctx, core.NewWorkspace{
		Name: "Demo workspace", Key: "PRC", AdminName: "Admin", AdminEmail: "admin@example.com", Secret: secret,
	})
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	actx, err := svc.ActAsAdmin(ctx, b.Workspace.ID.String())
	if err != nil {
		return err
	}
	if err := seedDemo(actx, svc, b); err != nil {
		return fmt.Errorf("bootstrap demo data: %w", err)
	}
	fmt.Fprintf(out, "\nprocsvc: created workspace %q (%s) with admin %s.\n", b.Workspace.Name, b.Workspace.ID, b.Admin.Email)
	if secret == "" {
		fmt.Fprintf(out, "procsvc: admin token (shown once, store it now):\n\n    export PROCSVC_TOKEN=%s\n\n", b.Secret)
	} else {
		fmt.Fprintf(out, "procsvc: the admin token is the one given in PROCSVC_BOOTSTRAP_TOKEN.\n\n")
	}
	return nil
}

func seedDemo(ctx context.Context, svc *core.Service, b *core.Bootstrapped) error {
	now := time.Now().UTC()
	started, due := now.Truncate(24*time.Hour), now.Truncate(24*time.Hour).Add(30*24*time.Hour)
	proj, err := svc.CreateProject(ctx, core.ProjectInput{
		Name: core.Some("Onboarding"), StartedAt: core.Some(started), DueAt: core.Some(due),
	})
	if err != nil {
		return err
	}
	cat, err := svc.CreateCategory(ctx, "General")
	if err != nil {
		return err
	}
	dueAt := now.Add(7 * 24 * time.Hour).Truncate(time.Hour)
	content := "1. Read the README\n2. Open /graphql with your token\n3. Create your first procedure"
	_, err = svc.CreateProcedure(ctx, core.CreateProcedureInput{
		Name: "Try procsvc", Priority: "MEDIUM", State: "TODO", DueAt: &dueAt,
		CategoryID: cat.ID.String(), DoerID: b.Admin.ID.String(), ProjectID: proj.ID.String(),
		Content: content,
	})
	return err
}

// newGenerator builds the content generator of cfg and its line for the
// startup log. --ai-max-retries=0 means no retry, which contentgen.Config
// spells -1 (its 0 is its default).
func newGenerator(cfg contentgen.Config) (core.Generator, string, error) {
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = -1
	}
	g, err := contentgen.New(cfg)
	return g, cfg.Describe(), err
}

// startStatistics gives a SQLite database's planner its statistics before
// the first request is served (a file seeded or copied in, or grown since
// the last start, may have none or stale ones), then refreshes them every
// every (0: never again) until the returned stop is called. A failed
// refresh is logged, not fatal: the service answers without statistics,
// only slower. PostgreSQL keeps its own.
func startStatistics(ctx context.Context, db *database.DB, every time.Duration, log *slog.Logger) (stop func()) {
	if db.Dialect != dialect.SQLite {
		return func() {}
	}
	refresh := func(ctx context.Context) {
		start := time.Now()
		if err := db.RefreshStatistics(ctx); err != nil {
			if ctx.Err() == nil {
				log.Warn("sqlite statistics not refreshed", "err", err)
			}
			return
		}
		if took := time.Since(start); took > 100*time.Millisecond {
			log.Info("sqlite statistics refreshed", "took", took.String())
		}
	}
	if every <= 0 {
		refresh(ctx)
		return func() {}
	}
	// periodic runs the first refresh at once: waited for, so that the
	// first request is planned with the statistics.
	first := make(chan struct{})
	var once sync.Once
	stop = periodic.Start(ctx, every, func(ctx context.Context) {
		refresh(ctx)
		once.Do(func() { close(first) })
	})
	<-first
	return stop
}
