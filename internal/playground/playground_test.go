package playground

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, srv *httptest.Server, method, path string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	// Plain transport without automatic gzip so the test sees what is sent.
	client := &http.Client{
		Transport:     &http.Transport{DisableCompression: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

var (
	scriptSrc = regexp.MustCompile(`<script\b[^>]*\bsrc\s*=\s*["']?([^"'\s>]+)`)
	linkHref  = regexp.MustCompile(`<link\b[^>]*\bhref\s*=\s*["']?([^"'\s>]+)`)
	anySrc    = regexp.MustCompile(`\b(?:src|href|action|srcset|poster|data)\s*=\s*["']?([^"'\s>]+)`)
	cssURL    = regexp.MustCompile(`url\(\s*["']?([^"')\s]+)`)
	cssImport = regexp.MustCompile(`@import\b`)
	// Ways script could pull code, styles or fonts from elsewhere.
	jsRemote = regexp.MustCompile(`\bimport\(\s*["'` + "`" + `](?:https?:)?//|\bimportScripts\(|\bnew\s+(?:Shared)?Worker\(|fonts\.(?:googleapis|gstatic)\.com|unpkg\.com|cdn\.jsdelivr\.net|cdnjs\.cloudflare\.com|esm\.sh/`)
)

func sameOrigin(ref string) bool {
	return strings.HasPrefix(ref, "data:") ||
		(strings.HasPrefix(ref, "/") && !strings.HasPrefix(ref, "//"))
}

// pageAssets are the /playground/... paths index.html references.
func pageAssets(t *testing.T, html string) (js, css string) {
	t.Helper()
	if m := scriptSrc.FindStringSubmatch(html); m != nil {
		js = m[1]
	}
	for _, m := range linkHref.FindAllStringSubmatch(html, -1) {
		if strings.HasSuffix(m[1], ".css") {
			css = m[1]
		}
	}
	if js == "" || css == "" {
		t.Fatalf("index.html does not reference a script and a stylesheet:\n%s", html)
	}
	return js, css
}

func TestPage(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()

	resp, body := get(t, srv, http.MethodGet, "/playground", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /playground: status %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("GET /playground: Content-Type %q", ct)
	}
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{
		"default-src 'self'", "script-src 'self'", "connect-src 'self'",
		"img-src 'self' data:", "font-src 'self' data:",
		"object-src 'none'", "base-uri 'none'", "frame-ancestors 'none'",
	} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	// Nothing in the policy may name another origin or allow inline code.
	for _, bad := range []string{"http:", "https:", "*", "'unsafe-eval'", "'unsafe-inline'"} {
		if strings.Contains(csp, bad) {
			t.Errorf("CSP %q contains %q", csp, bad)
		}
	}
	if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("X-Content-Type-Options %q", got)
	}
	if got := resp.Header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("page Cache-Control %q, want no-store (it carries a per-response nonce)", got)
	}
	html := string(body)

	// The style nonce in the policy is the one the page hands the bundle,
	// and it changes with every response.
	m := regexp.MustCompile(`<meta name="csp-nonce" content="([A-Za-z0-9+/=]{16,})"`).FindStringSubmatch(html)
	if m == nil {
		t.Fatalf("page has no csp-nonce meta tag:\n%s", html)
	}
	if want := "style-src 'self' 'nonce-" + m[1] + "';"; !strings.Contains(csp, want) {
		t.Errorf("CSP %q lacks %q", csp, want)
	}
	if resp2, body2 := get(t, srv, http.MethodGet, "/playground", nil); resp2.Header.Get("Content-Security-Policy") == csp ||
		strings.Contains(string(body2), m[1]) {
		t.Errorf("two page responses share the nonce %s", m[1])
	}
	if !strings.Contains(html, `id="playground"`) {
		t.Errorf("page has no #playground mount point:\n%s", html)
	}
	if strings.Contains(html, "<script>") || regexp.MustCompile(`<script(?:\s+[^>]*)?>\s*[^<\s]`).MatchString(html) {
		t.Errorf("page has an inline script, which the CSP forbids:\n%s", html)
	}

	js, css := pageAssets(t, html)
	for _, a := range []struct{ path, ct string }{{js, "text/javascript"}, {css, "text/css"}} {
		resp, body := get(t, srv, http.MethodGet, a.path, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: status %d", a.path, resp.StatusCode)
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, a.ct) {
			t.Errorf("GET %s: Content-Type %q, want %s", a.path, ct, a.ct)
		}
		if cc := resp.Header.Get("Cache-Control"); !strings.Contains(cc, "max-age=31536000") || !strings.Contains(cc, "immutable") {
			t.Errorf("GET %s: Cache-Control %q, want a year and immutable for a hashed asset", a.path, cc)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Content-Security-Policy") == "" {
			t.Errorf("GET %s: security headers missing: %v", a.path, resp.Header)
		}
		if len(body) < 1000 {
			t.Errorf("GET %s: only %d bytes", a.path, len(body))
		}

		// gzip when asked, same bytes once inflated.
		zresp, zbody := get(t, srv, http.MethodGet, a.path, map[string]string{"Accept-Encoding": "gzip"})
		if zresp.Header.Get("Content-Encoding") != "gzip" {
			t.Errorf("GET %s with Accept-Encoding gzip: Content-Encoding %q", a.path, zresp.Header.Get("Content-Encoding"))
		} else {
			zr, err := gzip.NewReader(bytes.NewReader(zbody))
			if err != nil {
				t.Fatal(err)
			}
			plain, err := io.ReadAll(zr)
			if err != nil || !bytes.Equal(plain, body) {
				t.Errorf("GET %s: gzipped body does not inflate to the plain one (err %v)", a.path, err)
			}
		}

		// Conditional requests.
		nresp, _ := get(t, srv, http.MethodGet, a.path, map[string]string{"If-None-Match": resp.Header.Get("ETag")})
		if nresp.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s with its ETag: status %d, want 304", a.path, nresp.StatusCode)
		}
	}

	if resp, _ := get(t, srv, http.MethodGet, "/playground/licenses.txt", nil); resp.StatusCode != http.StatusOK ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Errorf("GET /playground/licenses.txt: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

func TestRoutes(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()

	if resp, body := get(t, srv, http.MethodHead, "/playground", nil); resp.StatusCode != http.StatusOK || len(body) != 0 {
		t.Errorf("HEAD /playground: %d with %d body bytes", resp.StatusCode, len(body))
	}
	if resp, _ := get(t, srv, http.MethodGet, "/playground/", nil); resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/playground" {
		t.Errorf("GET /playground/: %d Location %q, want 301 to /playground", resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, p := range []string{"/playground/nope.js", "/playground/index.html", "/playground/../go.mod", "/playgroundx", "/playground/dist/index.html"} {
		resp, _ := get(t, srv, http.MethodGet, p, nil)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", p, resp.StatusCode)
		}
		if resp.Header.Get("Content-Security-Policy") == "" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: security headers missing on the 404", p)
		}
	}
	if resp, _ := get(t, srv, http.MethodPost, "/playground", nil); resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /playground: %d Allow %q, want 405 with Allow: GET, HEAD", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

// TestMountedOnServeMux checks the mounting the package doc prescribes.
func TestMountedOnServeMux(t *testing.T) {
	mux := http.NewServeMux()
	h := Handler()
	mux.Handle(Path, h)
	mux.Handle(Path+"/", h)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "other", http.StatusTeapot) })
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, body := get(t, srv, http.MethodGet, "/playground", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /playground through a ServeMux: %d", resp.StatusCode)
	}
	js, _ := pageAssets(t, string(body))
	if resp, _ := get(t, srv, http.MethodGet, js, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s through a ServeMux: %d", js, resp.StatusCode)
	}
	if resp, _ := get(t, srv, http.MethodGet, "/graphql", nil); resp.StatusCode != http.StatusTeapot {
		t.Errorf("the playground's patterns swallowed /graphql: %d", resp.StatusCode)
	}
}

// TestNoOtherOrigins reads every embedded file and fails on any reference
// that would make the browser load something from another origin. Plain
// mentions of URLs (documentation links in GraphiQL, XML namespaces, React's
// error decoder, the license texts) are allowed: they are never fetched.
func TestNoOtherOrigins(t *testing.T) {
	sub, err := fs.Sub(distFS, "dist")
	if err != nil {
		t.Fatal(err)
	}
	var files int
	err = fs.WalkDir(sub, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		b, err := fs.ReadFile(sub, name)
		if err != nil {
			return err
		}
		s := string(b)
		switch {
		case strings.HasSuffix(name, ".html"):
			for _, m := range anySrc.FindAllStringSubmatch(s, -1) {
				if !sameOrigin(m[1]) {
					t.Errorf("%s references %q", name, m[1])
				}
			}
			if strings.Contains(s, "http://") || strings.Contains(s, "https://") {
				t.Errorf("%s contains an absolute URL", name)
			}
			if strings.Contains(s, "<style") || regexp.MustCompile(`\sstyle\s*=`).MatchString(s) {
				t.Errorf("%s has inline styles", name)
			}
		case strings.HasSuffix(name, ".css"):
			for _, m := range cssURL.FindAllStringSubmatch(s, -1) {
				if !sameOrigin(m[1]) {
					t.Errorf("%s has url(%s)", name, m[1])
				}
			}
			if cssImport.MatchString(s) {
				t.Errorf("%s has an @import", name)
			}
		case strings.HasSuffix(name, ".js"):
			for _, m := range jsRemote.FindAllString(s, -1) {
				t.Errorf("%s loads code or assets from elsewhere: %q", name, m)
			}
			for _, m := range cssURL.FindAllStringSubmatch(s, -1) {
				if strings.HasPrefix(m[1], "http") || strings.HasPrefix(m[1], "//") {
					t.Errorf("%s has a CSS url(%s)", name, m[1])
				}
			}
		case name == "licenses.txt":
			// License texts name their authors' sites; never loaded.
		default:
			t.Errorf("unexpected embedded file %s: teach this test how to check it", name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 3 {
		t.Fatalf("only %d embedded files; run web/build.sh", files)
	}
}

// TestBundleRunsSubscriptions pins that the bundle carries a real
// graphql-transport-ws client (not a stand-in that refuses subscriptions) and
// lists it among the third-party licenses.
func TestBundleRunsSubscriptions(t *testing.T) {
	h, err := load(distFS)
	if err != nil {
		t.Fatal(err)
	}
	var js int
	for name, a := range h.assets {
		if strings.HasSuffix(name, ".js") {
			js++
			if !bytes.Contains(a.body, []byte("graphql-transport-ws")) {
				t.Errorf("%s has no graphql-transport-ws client; run web/build.sh", name)
			}
		}
	}
	if js != 1 {
		t.Errorf("%d scripts in the bundle, want 1", js)
	}
	if lic := h.assets["licenses.txt"]; lic == nil || !bytes.Contains(lic.body, []byte("\ngraphql-ws@")) {
		t.Error("licenses.txt does not list graphql-ws")
	}
}

func TestAcceptsGzip(t *testing.T) {
	for in, want := range map[string]bool{
		"":                     false,
		"gzip":                 true,
		"br, gzip, deflate":    true,
		"gzip;q=0":             false,
		"gzip; q=0.5":          true,
		"deflate":              false,
		"GZIP":                 true,
		"identity, gzip;q=0.0": false,
	} {
		if got := acceptsGzip(in); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestBundleHasExplorer pins that the query-building explorer pane
// (@graphiql/plugin-explorer) is bundled with its styles, and credited.
func TestBundleHasExplorer(t *testing.T) {
	h, err := load(distFS)
	if err != nil {
		t.Fatal(err)
	}
	var js, css bool
	for name, a := range h.assets {
		switch {
		case strings.HasSuffix(name, ".js"):
			js = bytes.Contains(a.body, []byte("graphiql-explorer-root"))
		case strings.HasSuffix(name, ".css"):
			css = bytes.Contains(a.body, []byte(".graphiql-explorer-root"))
		}
	}
	if !js || !css {
		t.Errorf("the bundle lacks the explorer (script %v, styles %v); run web/build.sh", js, css)
	}
	lic := h.assets["licenses.txt"]
	for _, pkg := range []string{"\n@graphiql/plugin-explorer@", "\ngraphiql-explorer@"} {
		if lic == nil || !bytes.Contains(lic.body, []byte(pkg)) {
			t.Errorf("licenses.txt does not list %s", strings.TrimSpace(pkg))
		}
	}
}
