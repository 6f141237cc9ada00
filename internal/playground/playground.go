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
// The page talks to the same-origin /graphql endpoint. With an identity
// provider configured (NewHandler's SignIn), it also signs people in there:
// the page learns the issuer and its client id from meta tags, and its
// Content-Security-Policy admits the issuer's origin, and no other, for the
// provider's discovery, token and userinfo requests (docs/api.md, "The
// playground's Sign in button").
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
	"html"
	"io/fs"
	"net/http"
	"net/url"
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
// the browser test runs one. issuerOrigin, when set, is the identity
// provider's origin the Sign in button talks to (discovery, token exchange,
// userinfo: fetches, so connect-src alone); going to the provider's login
// page and back is a top-level navigation, which no directive here governs.
func contentSecurityPolicy(styleNonce, issuerOrigin string) string {
	styleSrc := "'self'"
	if styleNonce != "" {
		styleSrc += " 'nonce-" + styleNonce + "'"
	}
	connectSrc := "'self'"
	if issuerOrigin != "" {
		connectSrc += " " + issuerOrigin
	}
	return "default-src 'self'; " +
		"script-src 'self'; " +
		"style-src " + styleSrc + "; " +
		"img-src 'self' data:; " +
		"font-src 'self' data:; " +
		"connect-src " + connectSrc + "; " +
		"worker-src 'none'; " +
		"object-src 'none'; " +
		"base-uri 'none'; " +
		"form-action 'none'; " +
		"frame-ancestors 'none'"
}

// noncePlaceholder is what web/build.mjs leaves in index.html's csp-nonce
// meta tag for the handler to replace on every response.
const noncePlaceholder = "__CSP_NONCE__"

// The placeholders web/build.mjs leaves in index.html's procsvc-oidc-issuer
// and procsvc-oidc-client-id meta tags, replaced once by NewHandler (with
// nothing when no provider is configured: the page then shows no Sign in
// button).
const (
	issuerPlaceholder   = "__OIDC_ISSUER__"
	clientIDPlaceholder = "__OIDC_CLIENT_ID__"
)

// SignIn is the identity provider the playground's Sign in button uses: an
// OpenID Connect issuer (discovery at Issuer/.well-known/openid-configuration)
// and the client id of a public client registered there for the
// authorization-code flow with PKCE, whose redirect URI is the playground's
// own URL (https://procsvc.example.com/playground). The zero value: no
// button.
type SignIn struct {
	Issuer, ClientID string
}

// issuerOrigin is the origin of s's issuer (scheme://host[:port]) for the
// Content-Security-Policy; it refuses what cannot be one.
func (s SignIn) issuerOrigin() (string, error) {
	u, err := url.Parse(s.Issuer)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return "", fmt.Errorf("playground: issuer %q is not an absolute http(s) URL", s.Issuer)
	}
	origin := u.Scheme + "://" + strings.ToLower(u.Host)
	// A source expression ends at white space, ';' or ','; nothing of the
	// kind may come from a flag into the policy.
	if !cspHost.MatchString(strings.ToLower(u.Host)) {
		return "", fmt.Errorf("playground: issuer %q has a host the Content-Security-Policy cannot name", s.Issuer)
	}
	return origin, nil
}

var cspHost = regexp.MustCompile(`^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(:[0-9]{1,5})?$`)

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
	// issuerOrigin is the sign-in provider's origin ("" without one).
	issuerOrigin string
}

var (
	loadOnce sync.Once
	loaded   *handler
	loadErr  error
)

// Handler returns the playground's handler, without sign-in. It panics if
// the embedded bundle is missing its index.html (a broken build of web/),
// which the package's tests catch.
func Handler() http.Handler {
	h, err := NewHandler(SignIn{})
	if err != nil {
		panic(err)
	}
	return h
}

// NewHandler returns the playground's handler with a Sign in button for s
// (none for the zero SignIn). It refuses an issuer without a client id or
// the reverse, and an issuer that is not an http(s) URL.
func NewHandler(s SignIn) (http.Handler, error) {
	loadOnce.Do(func() { loaded, loadErr = load(distFS) })
	if loadErr != nil {
		return nil, loadErr
	}
	if (s.Issuer == "") != (s.ClientID == "") {
		return nil, fmt.Errorf("playground: sign-in needs both an issuer and a client id (got issuer %q, client id %q)", s.Issuer, s.ClientID)
	}
	return loaded.withSignIn(s)
}

// withSignIn is h with s's issuer and client id in the page's meta tags and
// its origin in the policy.
func (h *handler) withSignIn(s SignIn) (*handler, error) {
	out := *h
	if s.Issuer != "" {
		origin, err := s.issuerOrigin()
		if err != nil {
			return nil, err
		}
		out.issuerOrigin = origin
	}
	fill := func(b []byte) []byte {
		b = bytes.ReplaceAll(b, []byte(issuerPlaceholder), []byte(html.EscapeString(s.Issuer)))
		return bytes.ReplaceAll(b, []byte(clientIDPlaceholder), []byte(html.EscapeString(s.ClientID)))
	}
	out.page = [2][]byte{fill(h.page[0]), fill(h.page[1])}
	return &out, nil
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
	for _, p := range []string{issuerPlaceholder, clientIDPlaceholder} {
		if bytes.Count(page.body, []byte(p)) != 1 {
			return nil, fmt.Errorf("playground: index.html must hold %s exactly once; run web/build.sh", p)
		}
	}
	h.page = [2][]byte{before, after}
	delete(h.assets, "index.html") // served at Path only
	return h, nil
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", contentSecurityPolicy("", h.issuerOrigin))
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
	hdr.Set("Content-Security-Policy", contentSecurityPolicy(nonce, h.issuerOrigin))
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
