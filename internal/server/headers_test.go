package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/metrics"
	"github.com/procsvc/procsvc/internal/server"
)

// TestSecurityHeaders: every answer, on both faces and whatever its status
// (including cached replays), carries X-Content-Type-Options: nosniff and
// Cache-Control: no-store; the playground keeps its own caching of hashed
// assets.
func TestSecurityHeaders(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		svc := core.New(db.Client)
		b, err := svc.CreateWorkspace(context.Background(), core.NewWorkspace{Name: "H", Key: "HDR", AdminName: "A", AdminEmail: "a@hdr.example"})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(server.NewHandler(server.Deps{DB: db, Service: svc, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
			ResponseCacheBytes: 1 << 20}))
		t.Cleanup(ts.Close)
		token := b.Secret
		send := func(method, path, tok, contentType, body string) *http.Response {
			t.Helper()
			req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if contentType != "" {
				req.Header.Set("Content-Type", contentType)
			}
			if tok != "" {
				req.Header.Set("Authorization", "Bearer "+tok)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp
		}
		gql := `{"query":"{ viewer { name } }"}`
		for _, c := range []struct {
			name                     string
			method, path, tok, ct, b string
			status                   int
		}{
			{"rest list", "GET", "/procedures?limit=5", token, "", "", 200},
			{"rest list again (cache hit)", "GET", "/procedures?limit=5", token, "", "", 200},
			{"rest not found", "GET", "/procedures/PRC-999", token, "", "", 404},
			{"rest unauthenticated", "GET", "/procedures", "", "", "", 401},
			{"rest validation", "POST", "/categories", token, "application/json", `{"name":""}`, 400},
			{"rest method not allowed", "PATCH", "/procedures", token, "", "", 405},
			{"no route", "GET", "/no/such/path", "", "", "", 404},
			{"graphql", "POST", "/graphql", token, "application/json", gql, 200},
			{"graphql unauthenticated", "POST", "/graphql", "", "application/json", gql, 401},
			{"graphql bad body", "POST", "/graphql", token, "application/json", `{`, 400},
			{"graphql get", "GET", "/graphql?query=%7Bviewer%7Bname%7D%7D", token, "", "", 200},
			{"graphql wrong method", "PUT", "/graphql", token, "", "", 405},
			{"healthz", "GET", "/healthz", "", "", "", 200},
			{"readyz", "GET", "/readyz", "", "", "", 200},
			{"metrics", "GET", "/metrics", "", "", "", 200},
			{"openapi", "GET", "/openapi.json", "", "", "", 200},
			{"index", "GET", "/", "", "", "", 200},
			{"playground page", "GET", "/playground", "", "", "", 200},
		} {
			resp := send(c.method, c.path, c.tok, c.ct, c.b)
			if resp.StatusCode != c.status {
				t.Fatalf("%s: %s %s answered %d, want %d", c.name, c.method, c.path, resp.StatusCode, c.status)
			}
			if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("%s: X-Content-Type-Options %q, want nosniff", c.name, got)
			}
			if got := resp.Header.Values("Cache-Control"); len(got) != 1 || got[0] != "no-store" {
				t.Errorf("%s: Cache-Control %q, want exactly no-store", c.name, got)
			}
		}
		if resp := send("GET", "/procedures?limit=5", token, "", ""); resp.Header.Get("X-Cache") != "hit" {
			t.Errorf("the repeated list was not served from the cache (X-Cache %q), so the replay went untested", resp.Header.Get("X-Cache"))
		}

		// The playground's hashed assets stay cacheable for a year.
		req, _ := http.NewRequest("GET", ts.URL+"/playground", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := regexp.MustCompile(`<script\b[^>]*\bsrc\s*=\s*["']?([^"'\s>]+)`).FindSubmatch(page)
		if m == nil {
			t.Fatalf("the playground page references no script:\n%s", page)
		}
		asset := send("GET", string(m[1]), "", "", "")
		if cc := asset.Header.Get("Cache-Control"); asset.StatusCode != 200 || !strings.Contains(cc, "immutable") {
			t.Errorf("playground asset %s: %d, Cache-Control %q, want the playground's own immutable caching", m[1], asset.StatusCode, cc)
		}
		if asset.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("playground asset %s lacks nosniff", m[1])
		}
	})
}

// TestMetricsListenerHeaders: the internal metrics listener's answers carry
// the same headers.
func TestMetricsListenerHeaders(t *testing.T) {
	ts := httptest.NewServer(server.MetricsHandler(metrics.New(nil, metrics.WithOperationNames())))
	defer ts.Close()
	for _, path := range []string{"/metrics", "/other"} {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: headers %v", path, resp.Header)
		}
	}
}
