package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/config"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/metrics"
	"github.com/procsvc/procsvc/internal/server"
)

// requestSeries returns the procsvc_http_requests_total series of an
// exposition.
func requestSeries(exposition string) []string {
	var out []string
	for _, l := range strings.Split(exposition, "\n") {
		if strings.HasPrefix(l, "procsvc_http_requests_total{") {
			out = append(out, l)
		}
	}
	return out
}

func do(t *testing.T, method, url string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestMetricsSeriesBounded: 500 requests with random methods on random
// paths (unknown ones and ones under real route templates) add a handful of
// series to the public /metrics, not one per method or path.
func TestMetricsSeriesBounded(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		ts, _ := start(t, db)
		_, before := get(t, ts.URL+"/metrics", "")
		r := rand.New(rand.NewPCG(3, 4))
		token := func() string {
			b := make([]byte, 8)
			for i := range b {
				b[i] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[r.IntN(26)]
			}
			return string(b)
		}
		var sent []string
		for i := range 500 {
			method, path := "Z"+token(), "/"+strings.ToLower(token())
			if i%2 == 1 {
				path = "/procedures/" + token()
			}
			sent = append(sent, method, path)
			if code := do(t, method, ts.URL+path); code != http.StatusNotFound && code != http.StatusMethodNotAllowed {
				t.Fatalf("%s %s: %d", method, path, code)
			}
		}
		for i := range 20 { // unknown paths with a standard method share one route
			if code := do(t, http.MethodGet, ts.URL+"/no/such/"+token()); code != http.StatusNotFound {
				t.Fatalf("request %d: %d", i, code)
			}
		}
		_, after := get(t, ts.URL+"/metrics", "")
		added := len(requestSeries(after)) - len(requestSeries(before))
		// At most: other × {unmatched, /procedures/{id}} × {404, 405},
		// GET × unmatched × 404, and GET /metrics itself.
		if added > 6 {
			t.Fatalf("520 hostile requests added %d request series (%d bytes of /metrics, was %d):\n%s",
				added, len(after), len(before), strings.Join(requestSeries(after)[:10], "\n"))
		}
		for _, s := range sent {
			if strings.Contains(after, s) {
				t.Fatalf("%q from a request reached /metrics", s)
			}
		}
		for _, want := range []string{
			`procsvc_http_requests_total{method="other",route="unmatched",status="404"} 250`,
			`procsvc_http_requests_total{method="GET",route="unmatched",status="404"} 20`,
		} {
			if !strings.Contains(after, want) {
				t.Errorf("/metrics lacks %s:\n%s", want, strings.Join(requestSeries(after), "\n"))
			}
		}
	})
}

// TestMetricsHideOperationNames: a tenant's GraphQL operation names never
// reach the public /metrics, which anyone who can reach the API may read;
// with a registry that labels them (--metrics-addr), /metrics is not served
// on the API listener at all, and the internal handler shows them.
func TestMetricsHideOperationNames(t *testing.T) {
	const opName = "AcmeSecretAcquisitionBoard"
	query := `{"query":"query ` + opName + ` { viewer { name } }","operationName":"` + opName + `"}`
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		ts, token := start(t, db)
		if code := post(t, ts.URL+"/graphql", token, query); code != http.StatusOK {
			t.Fatalf("graphql: %d", code)
		}
		code, body := get(t, ts.URL+"/metrics", "")
		if code != http.StatusOK {
			t.Fatalf("/metrics: %d", code)
		}
		if strings.Contains(body, opName) {
			t.Fatalf("the public /metrics shows a tenant's operation name:\n%s", strings.Join(requestSeries(body), "\n"))
		}
		if sample(t, body, `procsvc_http_requests_total{method="POST",route="/graphql",status="200"}`) != 1 {
			t.Fatalf("the operation is not counted under route /graphql:\n%s", strings.Join(requestSeries(body), "\n"))
		}

		svc := core.New(db.Client)
		b, err := svc.CreateWorkspace(context.Background(), core.NewWorkspace{Name: "I", Key: "INT", AdminName: "A", AdminEmail: "a@int.example"})
		if err != nil {
			t.Fatal(err)
		}
		m := metrics.New(db.SQL, metrics.WithOperationNames())
		api := httptest.NewServer(server.NewHandler(server.Deps{DB: db, Service: svc, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: m}))
		t.Cleanup(api.Close)
		internal := httptest.NewServer(server.MetricsHandler(m))
		t.Cleanup(internal.Close)
		if code := post(t, api.URL+"/graphql", b.Secret, query); code != http.StatusOK {
			t.Fatalf("graphql: %d", code)
		}
		if code, body := get(t, api.URL+"/metrics", ""); code != http.StatusNotFound || strings.Contains(body, opName) {
			t.Fatalf("the API listener serves a registry with operation names: %d", code)
		}
		code, body = get(t, internal.URL+"/metrics", "")
		if code != http.StatusOK || !strings.Contains(body, `route="graphql:`+opName+`"`) {
			t.Fatalf("the internal /metrics lacks the operation: %d\n%s", code, strings.Join(requestSeries(body), "\n"))
		}
		if code, _ := get(t, internal.URL+"/graphql", ""); code != http.StatusNotFound {
			t.Fatalf("the internal listener serves more than /metrics: GET /graphql answered %d", code)
		}
	})
}

// TestRunMetricsAddr: serve with --metrics-addr moves /metrics, with
// operation names, to the internal listener, which stops with the server.
func TestRunMetricsAddr(t *testing.T) {
	var cfg config.Config
	fs, applyEnv := cfg.FlagSet("serve", io.Discard)
	if err := fs.Parse([]string{"--addr=127.0.0.1:0", "--metrics-addr=127.0.0.1:0",
		"--database-url=sqlite://" + filepath.Join(t.TempDir(), "procsvc.db")}); err != nil {
		t.Fatal(err)
	}
	if err := applyEnv(func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	var logs, out syncBuffer
	ready := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, cfg, slog.New(slog.NewJSONHandler(&logs, nil)), &out, func(addr string) { ready <- addr })
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("serve stopped: %v\n%s", err, logs.String())
	}
	// The internal listener is up before the API's, so its line is logged.
	var metricsAddr string
	for _, l := range strings.Split(logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "metrics listening" {
			metricsAddr, _ = m["addr"].(string)
		}
	}
	if metricsAddr == "" {
		t.Fatalf("no metrics listener logged:\n%s", logs.String())
	}
	token := regexp.MustCompile(`export PROCSVC_TOKEN=(\S+)`).FindStringSubmatch(out.String())
	if token == nil {
		t.Fatalf("no token printed:\n%s", out.String())
	}
	if code := post(t, "http://"+addr+"/graphql", token[1], `{"query":"query OpsDashboard { viewer { name } }"}`); code != http.StatusOK {
		t.Fatalf("graphql: %d", code)
	}
	if code, _ := get(t, "http://"+addr+"/metrics", ""); code != http.StatusNotFound {
		t.Fatalf("the API listener answers /metrics with %d, want 404", code)
	}
	code, body := get(t, "http://"+metricsAddr+"/metrics", "")
	if code != http.StatusOK || !strings.Contains(body, `route="graphql:OpsDashboard"`) {
		t.Fatalf("internal /metrics: %d, lacks the operation:\n%s", code, strings.Join(requestSeries(body), "\n"))
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if _, err := http.Get("http://" + metricsAddr + "/metrics"); err == nil {
		t.Fatal("the metrics listener outlived the server")
	}
}

// TestRoutesLabelledWithRequestTimeout: with a request timeout (as in
// production, where it is the write timeout) REST requests are still
// labelled with their route template, not "unmatched".
func TestRoutesLabelledWithRequestTimeout(t *testing.T) {
	db := dbtest.Open(t, "sqlite")
	m := metrics.New(db.SQL)
	ts := httptest.NewServer(server.NewHandler(server.Deps{DB: db, Service: core.New(db.Client),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: m, RequestTimeout: 10 * time.Second}))
	defer ts.Close()
	do(t, http.MethodGet, ts.URL+"/procedures/some-id")
	_, exposition := get(t, ts.URL+"/metrics", "")
	found := false
	for _, s := range requestSeries(exposition) {
		if strings.Contains(s, `route="/procedures/{id}"`) {
			found = true
		}
	}
	if !found {
		t.Fatalf("no series for /procedures/{id}:\n%s", strings.Join(requestSeries(exposition), "\n"))
	}
}
