package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/procsvc/procsvc/internal/config"
	"github.com/procsvc/procsvc/internal/metrics"
	"github.com/procsvc/procsvc/internal/middleware"
)

// MetricsHandler serves m at GET /metrics and nothing else, for the internal
// listener of --metrics-addr, where the registry may label GraphQL operation
// names.
func MetricsHandler(m *metrics.Metrics) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
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
