// Package metrics defines procsvc's Prometheus metrics and serves them at
// /metrics: HTTP requests by route, method and status; GraphQL errors by
// code; the database pool; the Go runtime and the process.
//
// Every label is bounded whatever clients send: methods outside the
// standard set are "other", routes are ServeMux templates ("unmatched" for
// any unknown path), statuses are the handlers' own, and GraphQL operation
// names, which belong to the tenants, are labels only in a registry made
// WithOperationNames, which is served on the internal metrics listener alone
// (see README, Operating it).
package metrics

import (
	"database/sql"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/procsvc/procsvc/internal/apperr"
)

// Metrics is one registry of procsvc's metrics. Each server owns one, so
// tests that run several servers in one process do not mix their counts.
type Metrics struct {
	mu             sync.Mutex
	operations     map[string]bool
	operationNames bool
	registry       *prometheus.Registry
	requests       *prometheus.CounterVec
	duration       *prometheus.HistogramVec
	graphqlErrors  *prometheus.CounterVec
}

// Option configures New.
type Option func(*Metrics)

// WithOperationNames labels GraphQL requests with their operation names
// ("graphql:<name>", at most maxOperations of them). The names are chosen by
// every tenant's clients, so a registry made with this option must be served
// only where operators alone can read it: the server never mounts it on the
// API listener.
func WithOperationNames() Option { return func(m *Metrics) { m.operationNames = true } }

// New returns a registry with the runtime and process collectors and, when
// db is set, the connection pool's statistics. Without WithOperationNames
// every GraphQL request is counted under the route "/graphql".
func New(db *sql.DB, opts ...Option) *Metrics {
	m := &Metrics{
		operations: map[string]bool{},
		registry:   prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "procsvc_http_requests_total",
			Help: "HTTP requests by route (REST route template, /graphql, or graphql:<operation> on the internal listener), method and status.",
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
	for _, o := range opts {
		o(m)
	}
	m.registry.MustRegister(m.requests, m.duration, m.graphqlErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if db != nil {
		m.registry.MustRegister(collectors.NewDBStatsCollector(db, "procsvc"))
	}
	return m
}

// Gauge registers a gauge whose value is read from value at each scrape
// (live updates' open connections, say). A name registered twice keeps the
// first.
func (m *Metrics) Gauge(name, help string, value func() float64) {
	_ = m.registry.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, value))
}

// Counter registers a counter whose value is read from value at each
// scrape; value must never decrease. A name registered twice keeps the
// first.
func (m *Metrics) Counter(name, help string, value func() float64) {
	_ = m.registry.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, value))
}

// LabelledGauges registers gauges of one name whose series are read at each
// scrape: collect calls emit once per series, with a value for each of
// labels. A name registered twice keeps the first.
func (m *Metrics) LabelledGauges(name, help string, labels []string, collect func(emit func(value float64, labelValues ...string))) {
	_ = m.registry.Register(&labelledGauges{desc: prometheus.NewDesc(name, help, labels, nil), collect: collect})
}

type labelledGauges struct {
	desc    *prometheus.Desc
	collect func(emit func(value float64, labelValues ...string))
}

func (g *labelledGauges) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g *labelledGauges) Collect(ch chan<- prometheus.Metric) {
	g.collect(func(v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, v, lv...)
	})
}

// Counters registers a counter of one label whose series are values, each
// from 0, and returns what adds one to a value's series; a value not among
// values is counted as "other" (labels stay bounded). A name registered
// twice keeps the first, and its function counts nothing.
func (m *Metrics) Counters(name, help, label string, values []string) (inc func(value string)) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{label})
	if err := m.registry.Register(vec); err != nil {
		return func(string) {}
	}
	series := map[string]prometheus.Counter{}
	for _, v := range append(values, "other") {
		series[v] = vec.WithLabelValues(v)
	}
	return func(v string) {
		c, ok := series[v]
		if !ok {
			c = series["other"]
		}
		c.Inc()
	}
}

// Histogram registers a histogram of buckets and returns what observes a
// value. A name registered twice keeps the first, and its function
// observes nothing.
func (m *Metrics) Histogram(name, help string, buckets []float64) (observe func(float64)) {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
	if err := m.registry.Register(h); err != nil {
		return func(float64) {}
	}
	return h.Observe
}

// OperationNames reports whether m labels requests with GraphQL operation
// names, and so must not be served on the API listener.
func (m *Metrics) OperationNames() bool { return m != nil && m.operationNames }

// maxOperations bounds the distinct GraphQL operation names used as labels:
// names come from clients, and a label per random name would grow the
// registry without bound.
const maxOperations = 200

var operationName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// OperationLabel returns the route label of a GraphQL operation name (for
// the access log, and for the metrics WithOperationNames): the name itself
// for the first maxOperations well-formed names, else "anonymous" or
// "other".
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
	// A copy: name is a slice of its document's text, which the label
	// would otherwise keep for the life of the process.
	name = strings.Clone(name)
	m.operations[name] = true
	return name
}

// graphQLRoutePrefix is the prefix gqlhttp.NewExecutor gives the route of an executed
// GraphQL operation ("graphql:" + OperationLabel); GraphQLRoute is the route
// every GraphQL request shares when operation names are not labels (the
// same label as a request refused before the executor ran).
const (
	graphQLRoutePrefix = "graphql:"
	GraphQLRoute       = "/graphql"
)

// methods are the label values of the method label; any other method a
// client sends (the server accepts any token) is "other".
var methods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

// MethodLabel returns the method label of method.
func MethodLabel(method string) string {
	if methods[method] {
		return method
	}
	return "other"
}

// StatusLabel returns the status label of status: the code for a valid
// HTTP status (100–599), else "other".
func StatusLabel(status int) string {
	if status < 100 || status > 599 {
		return "other"
	}
	return strconv.Itoa(status)
}

// routeLabel returns the route label of route: GraphQL operations collapse
// to GraphQLRoute unless m labels operation names.
func (m *Metrics) routeLabel(route string) string {
	if !m.operationNames && strings.HasPrefix(route, graphQLRoutePrefix) {
		return GraphQLRoute
	}
	return route
}

// ObserveRequest records one finished HTTP request.
func (m *Metrics) ObserveRequest(route, method string, status int, d time.Duration) {
	if m == nil {
		return
	}
	// The series are looked up by their label values on every request:
	// keeping them per label set saved ~0.5 µs a request, within the
	// noise of any request's cost (docs/caching.md, "Removed").
	labels := []string{m.routeLabel(route), MethodLabel(method), StatusLabel(status)}
	m.requests.WithLabelValues(labels...).Inc()
	m.duration.WithLabelValues(labels...).Observe(d.Seconds())
}

// errorCodes are the extensions.code values GraphQL errors carry besides
// apperr's codes (automatic persisted queries).
var errorCodes = map[string]bool{"PERSISTED_QUERY_NOT_FOUND": true, "PERSISTED_QUERY_NOT_SUPPORTED": true}

// codeLabel bounds the code label to known codes.
func codeLabel(code string) string {
	if errorCodes[code] || apperr.Known(apperr.Code(code)) {
		return code
	}
	return "other"
}

// GraphQLError records one GraphQL error of code.
func (m *Metrics) GraphQLError(code string) {
	if m == nil {
		return
	}
	m.graphqlErrors.WithLabelValues(codeLabel(code)).Inc()
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}
