package metrics_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/metrics"
)

// scrape returns m's exposition.
func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d", rec.Code)
	}
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

// series returns the lines of name's series (samples, not comments).
func series(exposition, name string) []string {
	var out []string
	for _, l := range strings.Split(exposition, "\n") {
		if strings.HasPrefix(l, name+"{") {
			out = append(out, l)
		}
	}
	return out
}

func randomToken(r *rand.Rand) string {
	const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	b := make([]byte, 6+r.IntN(10))
	for i := range b {
		b[i] = letters[r.IntN(len(letters))]
	}
	return string(b)
}

// TestLabelsAreBounded: whatever method, status or error code a request
// carries, the label sets stay within a fixed, small set.
func TestLabelsAreBounded(t *testing.T) {
	m := metrics.New(nil)
	r := rand.New(rand.NewPCG(1, 2))
	var sent []string
	for range 500 {
		method := "X" + randomToken(r)
		sent = append(sent, method)
		m.ObserveRequest("unmatched", method, http.StatusNotFound, time.Millisecond)
	}
	for _, status := range []int{0, 42, 600, 999, 1 << 20} {
		m.ObserveRequest("unmatched", http.MethodGet, status, time.Millisecond)
	}
	for range 100 {
		m.GraphQLError(randomToken(r))
	}
	out := scrape(t, m)
	if got := series(out, "procsvc_http_requests_total"); len(got) != 2 {
		t.Fatalf("500 random methods and 5 odd statuses made %d request series, want 2 (method other, status other):\n%s",
			len(got), strings.Join(got[:min(len(got), 5)], "\n"))
	}
	for _, want := range []string{
		`procsvc_http_requests_total{method="other",route="unmatched",status="404"} 500`,
		`procsvc_http_requests_total{method="GET",route="unmatched",status="other"} 5`,
		`procsvc_graphql_errors_total{code="other"} 100`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	for _, s := range sent {
		if strings.Contains(out, s) {
			t.Fatalf("client method %q became a label", s)
		}
	}
	if got := series(out, "procsvc_graphql_errors_total"); len(got) != 1 {
		t.Fatalf("100 random error codes made %d series, want 1", len(got))
	}
}

// TestKnownLabelsKept: the standard methods, real statuses and the codes the
// API emits are labels as they are.
func TestKnownLabelsKept(t *testing.T) {
	m := metrics.New(nil)
	for _, method := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
		m.ObserveRequest("/procedures", method, http.StatusOK, time.Millisecond)
	}
	m.ObserveRequest("/procedures", "get", http.StatusOK, time.Millisecond) // methods are case-sensitive
	m.GraphQLError("not_found")
	m.GraphQLError("internal")
	m.GraphQLError("PERSISTED_QUERY_NOT_FOUND")
	out := scrape(t, m)
	for _, want := range []string{
		`method="GET",route="/procedures",status="200"`, `method="OPTIONS",route="/procedures",status="200"`,
		`method="PATCH",route="/procedures",status="200"`, `method="other",route="/procedures",status="200"`,
		`procsvc_graphql_errors_total{code="not_found"} 1`, `procsvc_graphql_errors_total{code="internal"} 1`,
		`procsvc_graphql_errors_total{code="PERSISTED_QUERY_NOT_FOUND"} 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestOperationNames: by default a GraphQL operation's name is no label (its
// requests share the route /graphql); only a registry made
// WithOperationNames, served on the internal listener, shows it.
func TestOperationNames(t *testing.T) {
	const secret = "AcmeQuarterlyLayoffsPlan"
	observe := func(m *metrics.Metrics) string {
		m.ObserveRequest("graphql:"+m.OperationLabel(secret), http.MethodPost, http.StatusOK, time.Millisecond)
		return scrape(t, m)
	}
	public := metrics.New(nil)
	if public.OperationNames() {
		t.Fatal("a default registry labels operation names")
	}
	if out := observe(public); strings.Contains(out, secret) {
		t.Fatalf("the default registry publishes an operation name:\n%s", strings.Join(series(out, "procsvc_http_requests_total"), "\n"))
	} else if !strings.Contains(out, `procsvc_http_requests_total{method="POST",route="/graphql",status="200"} 1`) {
		t.Fatalf("the operation is not counted under /graphql:\n%s", strings.Join(series(out, "procsvc_http_requests_total"), "\n"))
	}
	internal := metrics.New(nil, metrics.WithOperationNames())
	if !internal.OperationNames() {
		t.Fatal("WithOperationNames not reported")
	}
	if out := observe(internal); !strings.Contains(out, fmt.Sprintf(`route="graphql:%s"`, secret)) {
		t.Fatalf("WithOperationNames does not label the operation:\n%s", strings.Join(series(out, "procsvc_http_requests_total"), "\n"))
	}
}

// TestCountersAndHistogram: a labelled counter shows each of its values
// from 0 and counts any other value as "other"; a histogram observes.
func TestCountersAndHistogram(t *testing.T) {
	m := metrics.New(nil)
	inc := m.Counters("procsvc_test_outcomes_total", "test", "outcome", []string{"a", "b"})
	observe := m.Histogram("procsvc_test_seconds", "test", []float64{0.1, 1})
	inc("a")
	inc("a")
	inc("zzz")
	observe(0.5)
	got := scrape(t, m)
	for _, want := range []string{
		`procsvc_test_outcomes_total{outcome="a"} 2`,
		`procsvc_test_outcomes_total{outcome="b"} 0`,
		`procsvc_test_outcomes_total{outcome="other"} 1`,
		`procsvc_test_seconds_bucket{le="0.1"} 0`,
		`procsvc_test_seconds_bucket{le="1"} 1`,
		`procsvc_test_seconds_count 1`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("exposition lacks %q", want)
		}
	}
	// Registered twice: the first stays, the second counts nothing.
	m.Counters("procsvc_test_outcomes_total", "test", "outcome", []string{"a"})("a")
	if !strings.Contains(scrape(t, m), `procsvc_test_outcomes_total{outcome="a"} 2`) {
		t.Error("a second registration changed the first's series")
	}
}

// TestOperationLabelsHoldNoDocument: an operation name is a slice of its
// document's text; a label kept for it must not keep the document (200
// names of ~900 KB documents held 180 MB before).
func TestOperationLabelsHoldNoDocument(t *testing.T) {
	m := metrics.New(nil)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 100 {
		doc := fmt.Sprintf("query Big%d { __typename }\n# %s", i, strings.Repeat("x", 1<<20))
		name := doc[len("query ") : len("query ")+len(fmt.Sprintf("Big%d", i))]
		if got := m.OperationLabel(name); got != name {
			t.Fatalf("label %q of %q", got, name)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(m)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 4<<20 {
		t.Fatalf("100 labels hold %d bytes: their documents", grown)
	}
}
