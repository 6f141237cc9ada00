package playground

import (
	"net/http"
	"strconv"
	"strings"
)

// RedirectBrowsers wraps the GraphQL endpoint's handler so that a person who
// opens it in a browser lands on the playground instead of a JSON error: a
// GET or HEAD that asks for HTML (its Accept header ranks text/html above
// every JSON type) and carries no query parameter is answered with
// 303 See Other to Path. Everything else goes to graphql untouched:
// GraphQL-over-HTTP GETs (they carry a query parameter, whatever they
// accept), WebSocket upgrades, and API clients, which send Accept:
// application/json, application/graphql-response+json, */* or nothing.
//
//	mux.Handle("/graphql", playground.RedirectBrowsers(graphqlHandler))
func RedirectBrowsers(graphql http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if wantsPlayground(r) {
			// The answer depends on Accept; a cache must not hand it to an
			// API client.
			w.Header().Add("Vary", "Accept")
			w.Header().Set("Cache-Control", "no-store")
			http.Redirect(w, r, Path, http.StatusSeeOther)
			return
		}
		graphql.ServeHTTP(w, r)
	})
}

// wantsPlayground reports whether r is a browser opening the endpoint as a
// page (see RedirectBrowsers).
func wantsPlayground(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	if r.Header.Get("Upgrade") != "" {
		return false
	}
	// Accept first: API clients stop there, before their query string is
	// parsed (the GraphQL handler parses it again).
	html, json := acceptQuality(r.Header.Values("Accept"))
	if html == 0 || html <= json {
		return false
	}
	return !r.URL.Query().Has("query")
}

// acceptQuality returns the quality, in thousandths, that Accept header
// values give text/html and the best they give a JSON type GraphQL answers
// in (application/json, application/graphql-response+json), counting only
// ranges that name the type: wildcards (*/*, text/*) say nothing about
// which a client prefers, and every browser names text/html when it opens
// a page. A range without q has quality 1; one whose q does not parse is
// ignored.
func acceptQuality(values []string) (html, json int) {
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			mediaType, params, _ := strings.Cut(part, ";")
			q, ok := quality(params)
			if !ok {
				continue
			}
			switch strings.ToLower(strings.TrimSpace(mediaType)) {
			case "text/html":
				html = max(html, q)
			case "application/json", "application/graphql-response+json":
				json = max(json, q)
			}
		}
	}
	return html, json
}

// quality reads the q parameter of a media range's parameters (1000 when
// there is none); ok is false when q is not a number from 0 to 1.
func quality(params string) (q int, ok bool) {
	for _, p := range strings.Split(params, ";") {
		name, value, found := strings.Cut(strings.TrimSpace(p), "=")
		if !found || !strings.EqualFold(strings.TrimSpace(name), "q") {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil || !(f >= 0 && f <= 1) { // NaN too
			return 0, false
		}
		return int(f*1000 + 0.5), true
	}
	return 1000, true
}
