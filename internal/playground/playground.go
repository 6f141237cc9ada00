// Package playground serves procsvc's offline GraphQL playground: GraphiQL
// bundled by web/build.sh into dist/ and embedded into the binary, so that
// the page needs nothing from any other origin.
//
// The handler answers GET and HEAD on Path (the page) and on Path + "/" +
// asset; mount it on both patterns of a ServeMux:
//
//	h := playground.Handler()
//	mux.Handle(playground.Path, h)
//	mux.Handle(playground.Path+"/", h)
//
// The page talks to the same-origin /graphql endpoint.
package playground

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Path is where the playground page is served; its assets live under
// Path + "/".
const Path = "/playground"

// contentSecurityPolicy is sent with every response of the handler; it
// allows nothing from another origin, no inline script and no eval. The page
// itself gets a fresh nonce in style-src: GraphiQL's dialogs (Radix UI's
// scroll lock, via react-style-singleton) insert <style> elements at run
// time, and the bundle stamps them with the nonce it reads from the page's
// <meta name="csp-nonce">. Style attributes set through the CSSOM (React's
// style props, codemirror) need no allowance, so 'unsafe-inline' is not used.
// connect-src 'self' also admits ws: and wss: to the page's own host and
// port (CSP Level 3), which is how the page runs subscriptions on /graphql;
// the browser test runs one.
func contentSecurityPolicy(styleNonce string) string {
	styleSrc := "'self'"
	if styleNonce != "" {
		styleSrc += " 'nonce-" + styleNonce + "'"
	}
	return "default-src 'self'; " +
		"script-src 'self'; " +
		"style-src " + styleSrc + "; " +
		"img-src 'self' data:; " +
		"font-src 'self' data:; " +
		"connect-src 'self'; " +
		"worker-src 'none'; " +
		"object-src 'none'; " +
		"base-uri 'none'; " +
		"form-action 'none'; " +
		"frame-ancestors 'none'"
}

// noncePlaceholder is what web/build.mjs leaves in index.html's csp-nonce
// meta tag for the handler to replace on every response.
const noncePlaceholder = "__CSP_NONCE__"

//go:embed dist
var distFS embed.FS

// hashedAsset matches the content-hashed file names web/build.mjs writes
// (playground-<12 hex>.js/.css): they never change content, so they may be
// cached for a year.
var hashedAsset = regexp.MustCompile(`-[0-9a-f]{12}\.[a-z0-9]+$`)

var contentTypes = map[string]string{
	".html":  "text/html; charset=utf-8",
	".js":    "text/javascript; charset=utf-8",
	".css":   "text/css; charset=utf-8",
	".txt":   "text/plain; charset=utf-8",
	".json":  "application/json",
	".svg":   "image/svg+xml",
	".png":   "image/png",
	".ico":   "image/x-icon",
	".woff":  "font/woff",
	".woff2": "font/woff2",
}

type asset struct {
	body        []byte
	contentType string
	etag        string
	cache       string

	gzipOnce sync.Once
	gzipped  []byte // nil when compressing does not pay
}

func (a *asset) gzipBody() []byte {
	a.gzipOnce.Do(func() {
		if len(a.body) < 1024 || strings.HasPrefix(a.contentType, "image/png") || strings.HasPrefix(a.contentType, "font/") {
			return
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(a.body)
		_ = zw.Close()
		if buf.Len() < len(a.body) {
			a.gzipped = buf.Bytes()
		}
	})
	return a.gzipped
}

type handler struct {
	page   [2][]byte         // index.html around noncePlaceholder
	assets map[string]*asset // by file name under dist/
}

var (
	loadOnce sync.Once
	loaded   *handler
	loadErr  error
)

// Handler returns the playground's handler. It panics if the embedded bundle
// is missing its index.html (a broken build of web/), which the package's
// tests catch.
func Handler() http.Handler {
	loadOnce.Do(func() { loaded, loadErr = load(distFS) })
	if loadErr != nil {
		panic(loadErr)
	}
	return loaded
}

func load(fsys fs.FS) (*handler, error) {
	sub, err := fs.Sub(fsys, "dist")
	if err != nil {
		return nil, err
	}
	h := &handler{assets: map[string]*asset{}}
	err = fs.WalkDir(sub, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(sub, name)
		if err != nil {
			return err
		}
		ext := path.Ext(name)
		ct, ok := contentTypes[ext]
		if !ok {
			ct = http.DetectContentType(body)
		}
		sum := sha256.Sum256(body)
		a := &asset{
			body:        body,
			contentType: ct,
			etag:        `"` + hex.EncodeToString(sum[:12]) + `"`,
			cache:       "no-cache",
		}
		if hashedAsset.MatchString(name) {
			a.cache = "public, max-age=31536000, immutable"
		}
		h.assets[name] = a
		return nil
	})
	if err != nil {
		return nil, err
	}
	page, ok := h.assets["index.html"]
	if !ok {
		return nil, fmt.Errorf("playground: the embedded bundle has no index.html; run web/build.sh")
	}
	before, after, ok := bytes.Cut(page.body, []byte(noncePlaceholder))
	if !ok || bytes.Contains(after, []byte(noncePlaceholder)) {
		return nil, fmt.Errorf("playground: index.html must hold %s exactly once; run web/build.sh", noncePlaceholder)
	}
	h.page = [2][]byte{before, after}
	delete(h.assets, "index.html") // served at Path only
	return h, nil
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", contentSecurityPolicy(""))
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("X-Frame-Options", "DENY")
	hdr.Set("Cross-Origin-Opener-Policy", "same-origin")
	hdr.Set("Cross-Origin-Resource-Policy", "same-origin")

	var a *asset
	switch p := r.URL.Path; {
	case p == Path:
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			h.servePage(w, r)
			return
		}
	case p == Path+"/":
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			http.Redirect(w, r, Path, http.StatusMovedPermanently)
			return
		}
	case strings.HasPrefix(p, Path+"/"):
		a = h.assets[strings.TrimPrefix(p, Path+"/")]
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hdr.Set("Allow", "GET, HEAD")
		http.Error(w, "405 method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if a == nil {
		hdr.Set("Cache-Control", "no-store")
		http.Error(w, "404 page not found", http.StatusNotFound)
		return
	}

	hdr.Set("Content-Type", a.contentType)
	hdr.Set("Cache-Control", a.cache)
	hdr.Set("ETag", a.etag)
	hdr.Set("Vary", "Accept-Encoding")
	if etagMatches(r.Header.Get("If-None-Match"), a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := a.body
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		if gz := a.gzipBody(); gz != nil {
			body = gz
			hdr.Set("Content-Encoding", "gzip")
		}
	}
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// servePage writes index.html with a fresh style nonce, never cached (a
// cached copy would carry a nonce the next response's policy does not allow).
func (h *handler) servePage(w http.ResponseWriter, r *http.Request) {
	var raw [18]byte
	if _, err := rand.Read(raw[:]); err != nil {
		http.Error(w, "500 cannot make a nonce", http.StatusInternalServerError)
		return
	}
	nonce := base64.StdEncoding.EncodeToString(raw[:])
	body := make([]byte, 0, len(h.page[0])+len(nonce)+len(h.page[1]))
	body = append(append(append(body, h.page[0]...), nonce...), h.page[1]...)
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", contentSecurityPolicy(nonce))
	hdr.Set("Content-Type", contentTypes[".html"])
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

func etagMatches(ifNoneMatch, etag string) bool {
	for _, t := range strings.Split(ifNoneMatch, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}

func acceptsGzip(acceptEncoding string) bool {
	for _, part := range strings.Split(acceptEncoding, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		params = strings.ReplaceAll(params, " ", "")
		return params != "q=0" && params != "q=0.0" && params != "q=0.00" && params != "q=0.000"
	}
	return false
}
