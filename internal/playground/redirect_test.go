package playground

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestRedirectBrowsers pins who RedirectBrowsers sends to the playground: a
// browser opening /graphql as a page, and nobody else.
func TestRedirectBrowsers(t *testing.T) {
	const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"
	graphql := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTeapot) // marks "reached the GraphQL handler"
	})
	srv := httptest.NewServer(RedirectBrowsers(graphql))
	defer srv.Close()

	for _, tc := range []struct {
		name     string
		method   string
		target   string
		header   map[string]string
		redirect bool
	}{
		{name: "browser opens /graphql", method: http.MethodGet, target: "/graphql", header: map[string]string{"Accept": browserAccept}, redirect: true},
		{name: "HEAD from a browser", method: http.MethodHead, target: "/graphql", header: map[string]string{"Accept": "text/html"}, redirect: true},
		{name: "browser with other parameters but no query", method: http.MethodGet, target: "/graphql?utm_source=docs", header: map[string]string{"Accept": browserAccept}, redirect: true},
		{name: "text/html preferred over JSON", method: http.MethodGet, target: "/graphql", header: map[string]string{"Accept": "application/json;q=0.5, text/html"}, redirect: true},
		{name: "text/html with parameters", method: http.MethodGet, target: "/graphql", header: map[string]string{"Accept": "TEXT/HTML; charset=utf-8; q=0.9"}, redirect: true},

		{name: "GraphQL over HTTP GET from a browser", method: http.MethodGet, target: "/graphql?query=%7B__typename%7D", header: map[string]string{"Accept": browserAccept}},
		{name: "GET with an empty query parameter", method: http.MethodGet, target: "/graphql?query=", header: map[string]string{"Accept": browserAccept}},
		{name: "API client asking for JSON", method: http.MethodGet, target: "/graphql", header: map[string]string{"Accept": "application/json"}},
		{name: "API client asking for graphql-response+json", method: http.MethodGet, target: "/graphql", header: map[string]string{"Accept": "application/graphql-response+json, application/json;q=0.9"}},
		{name: "no Accept header", method: http.MethodGet, target: "/graphql"},
		{name: "curl's */*", method: http.MethodGet, target: "/graphql", header: map[string]string{"Accept": "*/*"}},
		{name: "text/* does not name text/html", method: http.MethodGet, target: "/graphql", header: map[string]string{"Accept": "text/*"}},
		{name: "JSON and text/html equally", method: http.MethodGet, target: "/graphql", header: map[string]string{"Accept": "application/json, text/html"}},
		{name: "JSON preferred over text/html", method: http.MethodGet, target: "/graphql", header: map[string]string{"Accept": "text/html;q=0.5, application/json"}},
		{name: "text/html refused", method: http.MethodGet, target: "/graphql", header: map[string]string{"Accept": "text/html;q=0"}},
		{name: "text/html with a q that does not parse", method: http.MethodGet, target: "/graphql", header: map[string]string{"Accept": "text/html;q=high"}},
		{name: "text/html with q NaN", method: http.MethodGet, target: "/graphql", header: map[string]string{"Accept": "text/html;q=NaN"}},
		{name: "event stream", method: http.MethodGet, target: "/graphql", header: map[string]string{"Accept": "text/event-stream"}},
		{name: "POST from a browser form", method: http.MethodPost, target: "/graphql", header: map[string]string{"Accept": browserAccept}},
		{name: "WebSocket upgrade", method: http.MethodGet, target: "/graphql", header: map[string]string{"Accept": "text/html", "Upgrade": "websocket", "Connection": "Upgrade"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, _ := get(t, srv, tc.method, tc.target, tc.header)
			if !tc.redirect {
				if resp.StatusCode != http.StatusTeapot {
					t.Fatalf("%s %s: status %d Location %q, want it handed to the GraphQL handler", tc.method, tc.target, resp.StatusCode, resp.Header.Get("Location"))
				}
				return
			}
			if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != Path {
				t.Fatalf("%s %s: status %d Location %q, want 303 to %s", tc.method, tc.target, resp.StatusCode, resp.Header.Get("Location"), Path)
			}
			if resp.Header.Get("Vary") != "Accept" || resp.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("redirect: Vary %q Cache-Control %q, want Accept and no-store", resp.Header.Get("Vary"), resp.Header.Get("Cache-Control"))
			}
		})
	}
}
