package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"

	"github.com/procsvc/procsvc/internal/config"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/metrics"
	"github.com/procsvc/procsvc/internal/middleware"
)

// MetricsHandler serves m at GET /metrics, and Go's profiler under
// /debug/pprof/, for the internal listener of --metrics-addr: the registry
// may label GraphQL operation names, and profiles show the process's
// internals, so neither belongs on the public port.
func MetricsHandler(m *metrics.Metrics) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return middleware.SecurityHeaders(mux)
}

// serveMetrics serves m on cfg.MetricsAddr until stop is called.
func serveMetrics(cfg config.Config, m *metrics.Metrics, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", cfg.MetricsAddr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (--metrics-addr): %w", cfg.MetricsAddr, err)
	}
	srv := &http.Server{
		Handler:           MetricsHandler(m),
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	log.Info("metrics listening", "addr", ln.Addr().String())
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener stopped", "error", err.Error())
		}
	}()
	return func() { _ = srv.Close() }, nil
}

// registerDatabaseMetrics exposes what the probes of the PostgreSQL pools
// found (internal/database, monitor.go): which server each pool is on,
// whether it is healthy, and a standby's replay lag.
func registerDatabaseMetrics(m *metrics.Metrics, db *database.DB) {
	m.LabelledGauges("procsvc_database_pool_server", "1 for the server each PostgreSQL pool is on (pool: primary or read; role: primary or standby), as its last probe found", []string{"pool", "server", "role"},
		func(emit func(float64, ...string)) {
			for _, p := range db.Pools() {
				if p.Server == "" {
					continue
				}
				role := "primary"
				if p.Standby {
					role = "standby"
				}
				emit(1, p.Pool, p.Server, role)
			}
		})
	m.LabelledGauges("procsvc_database_pool_healthy", "1 when the last probe of the pool answered from a server of the kind it needs, else 0", []string{"pool"},
		func(emit func(float64, ...string)) {
			for _, p := range db.Pools() {
				emit(map[bool]float64{true: 1}[p.Healthy], p.Pool)
			}
		})
	m.LabelledGauges("procsvc_database_replay_lag_seconds", "how far the pool's standby's replay is behind the WAL it received, in seconds (0 on a primary)", []string{"pool"},
		func(emit func(float64, ...string)) {
			for _, p := range db.Pools() {
				emit(p.ReplayLag.Seconds(), p.Pool)
			}
		})
	m.LabelledGauges("procsvc_database_probe_failures", "probes of the pool that failed since the start (no answer in time, no server, or a standby where a primary is needed)", []string{"pool"},
		func(emit func(float64, ...string)) {
			for _, p := range db.Pools() {
				emit(float64(p.Failures), p.Pool)
			}
		})
}

// registerReadMetrics exposes where read requests went while there is a
// read pool (--database-read-url): how much of the read load the standbys
// take.
func registerReadMetrics(m *metrics.Metrics, reads *middleware.Reads) {
	m.Counter("procsvc_reads_standby_total", "read requests served by the read pool's standby",
		func() float64 { return float64(reads.Routed().Standby) })
	m.Counter("procsvc_reads_standby_behind_total", "read requests that read the primary because the standby had not replayed the version they needed (X-Min-Version, or the token's last write within --read-your-writes)",
		func() float64 { return float64(reads.Routed().Behind) })
	m.Counter("procsvc_reads_standby_unanswered_total", "read requests that read the primary because the read pool did not answer",
		func() float64 { return float64(reads.Routed().Unanswered) })
}
