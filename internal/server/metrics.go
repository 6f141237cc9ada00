package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"

	"github.com/procsvc/procsvc/internal/config"
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
