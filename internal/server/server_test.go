package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/server"
)

func start(t *testing.T, db *database.DB) (*httptest.Server, string) {
	t.Helper()
	svc := core.New(db.Client)
	b, err := svc.CreateWorkspace(context.Background(), core.NewWorkspace{Name: "M", Key: "MET", AdminName: "A", AdminEmail: "a@met.example"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(server.NewHandler(server.Deps{DB: db, Service: svc, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	t.Cleanup(ts.Close)
	return ts, b.Secret
}

func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func post(t *testing.T, url, token, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// sample returns the value of the series whose name and labels match.
func sample(t *testing.T, metrics, series string) float64 {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` ([0-9.e+]+)$`)
	m := re.FindStringSubmatch(metrics)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestMetricsMoveWithRequests(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		ts, token := start(t, db)
		scrape := func() string {
			code, body := get(t, ts.URL+"/metrics", "")
			if code != http.StatusOK {
				t.Fatalf("/metrics: %d", code)
			}
			return body
		}
		restSeries := `procsvc_http_requests_total{method="GET",route="/procedures/{id}",status="404"}`
		// Operation names are no labels on the public /metrics (see metrics_test.go).
		gqlSeries := `procsvc_http_requests_total{method="POST",route="/graphql",status="200"}`
		errSeries := `procsvc_graphql_errors_total{code="not_found"}`
		before := scrape()
		if code, _ := get(t, ts.URL+"/procedures/PRC-999", token); code != http.StatusNotFound {
			t.Fatalf("want 404, got %d", code)
		}
		if code := post(t, ts.URL+"/graphql", token, `{"query":"query Who { viewer { name } procedure(id: \"PRC-42\") { id } }","operationName":"Who"}`); code != http.StatusOK {
			t.Fatalf("graphql: %d", code)
		}
		after := scrape()
		for _, s := range []string{restSeries, gqlSeries, errSeries} {
			if d := sample(t, after, s) - sample(t, before, s); d != 1 {
				t.Errorf("%s moved by %v, want 1", s, d)
			}
		}
		for _, want := range []string{
			`procsvc_http_request_duration_seconds_bucket{method="GET",route="/procedures/{id}",status="404",le=`,
			`go_sql_max_open_connections{db_name="procsvc"}`, "go_goroutines", "process_resident_memory_bytes",
		} {
			if !strings.Contains(after, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
		if strings.Contains(after, token) {
			t.Fatal("a token leaked into /metrics")
		}
	})
}

func TestHealthAndReadiness(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		ts, _ := start(t, db)
		if code, body := get(t, ts.URL+"/healthz", ""); code != http.StatusOK || !strings.Contains(body, "ok") {
			t.Fatalf("/healthz: %d %s", code, body)
		}
		if code, _ := get(t, ts.URL+"/readyz", ""); code != http.StatusOK {
			t.Fatalf("/readyz with a live database: %d", code)
		}
		db.SQL.Close()
		code, body := get(t, ts.URL+"/readyz", "")
		if code != http.StatusServiceUnavailable || !strings.Contains(body, `"code":"unavailable"`) {
			t.Fatalf("/readyz with a closed database: %d %s", code, body)
		}
		if code, _ := get(t, ts.URL+"/healthz", ""); code != http.StatusOK {
			t.Fatalf("/healthz must not depend on the database: %d", code)
		}
	})
}

// syncBuffer collects log output written from server goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAccessLog: one JSON line per request with its id, method, route,
// status, duration and workspace, and never the token.
func TestAccessLog(t *testing.T) {
	db := dbtest.Open(t, "sqlite")
	svc := core.New(db.Client)
	b, err := svc.CreateWorkspace(context.Background(), core.NewWorkspace{Name: "L", Key: "LOG", AdminName: "A", AdminEmail: "a@log.example"})
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	ts := httptest.NewServer(server.NewHandler(server.Deps{DB: db, Service: svc, Log: slog.New(slog.NewJSONHandler(&logs, nil))}))
	defer ts.Close()
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/procedures?limit=5", nil)
	req.Header.Set("Authorization", "Bearer "+b.Secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ts.Close()
	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "request" {
			line = m
		}
	}
	if line == nil {
		t.Fatalf("no request line in:\n%s", logs.String())
	}
	want := map[string]any{"method": "GET", "route": "/procedures", "status": float64(200),
		"request_id": resp.Header.Get("X-Request-Id"), "workspace_id": b.Workspace.ID.String()}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("log %s = %v, want %v", k, line[k], v)
		}
	}
	if _, ok := line["duration_ms"].(float64); !ok {
		t.Errorf("log lacks duration_ms: %v", line)
	}
	if strings.Contains(logs.String(), b.Secret) {
		t.Fatal("the token was logged")
	}
}
