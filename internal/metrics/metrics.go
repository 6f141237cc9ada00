// Package metrics defines procsvc's Prometheus metrics and serves them at
// /metrics: HTTP requests by route, method and status; GraphQL errors by
// code; the database pool; the Go runtime and the process.
package metrics

import (
	"database/sql"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is one registry of procsvc's metrics. Each server owns one, so
// tests that run several servers in one process do not mix their counts.
type Metrics struct {
	mu            sync.Mutex
	operations    map[string]bool
	registry      *prometheus.Registry
	requests      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	graphqlErrors *prometheus.CounterVec
}

// New returns a registry with the runtime and process collectors and, when
// db is set, the connection pool's statistics.
func New(db *sql.DB) *Metrics {
	m := &Metrics{
		operations: map[string]bool{},
		registry:   prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "procsvc_http_requests_total",
			Help: "HTTP requests by route (REST route template or GraphQL operation), method and status.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "procsvc_http_request_duration_seconds",
			Help:    "HTTP request latency by route, method and status.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route", "method", "status"}),
		graphqlErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "procsvc_graphql_errors_total",
			Help: "GraphQL errors by code.",
		}, []string{"code"}),
	}
	m.registry.MustRegister(m.requests, m.duration, m.graphqlErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if db != nil {
		m.registry.MustRegister(collectors.NewDBStatsCollector(db, "procsvc"))
	}
	return m
}

// maxOperations bounds the distinct GraphQL operation names used as labels:
// names come from clients, and a label per random name would grow the
// registry without bound.
const maxOperations = 200

var operationName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// OperationLabel returns the route label of a GraphQL operation name:
// the name itself for the first maxOperations well-formed names, else
// "anonymous" or "other".
func (m *Metrics) OperationLabel(name string) string {
	if name == "" {
		return "anonymous"
	}
	if m == nil || !operationName.MatchString(name) {
		return "other"
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.operations[name] {
		return name
	}
	if len(m.operations) >= maxOperations {
		return "other"
	}
	m.operations[name] = true
	return name
}

// ObserveRequest records one finished HTTP request.
func (m *Metrics) ObserveRequest(route, method string, status int, d time.Duration) {
	if m == nil {
		return
	}
	s := strconv.Itoa(status)
	m.requests.WithLabelValues(route, method, s).Inc()
	m.duration.WithLabelValues(route, method, s).Observe(d.Seconds())
}

// GraphQLError records one GraphQL error of code.
func (m *Metrics) GraphQLError(code string) {
	if m == nil {
		return
	}
	m.graphqlErrors.WithLabelValues(code).Inc()
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}
