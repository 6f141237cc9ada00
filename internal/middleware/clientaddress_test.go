package middleware_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/procsvc/procsvc/internal/auth"
	"github.com/procsvc/procsvc/internal/middleware"
)

// TestClientAddress: the connection's remote address by default, whatever
// headers the client sends; with a configured header, the right-most entry
// of its last line, falling back to the remote address when that is
// missing or not an address.
func TestClientAddress(t *testing.T) {
	for _, tc := range []struct {
		name, header, remote string
		lines                []string
		want                 string // "" for none
	}{
		{"remote address", "", "192.0.2.1:5123", nil, "192.0.2.1"},
		{"header ignored unless configured", "", "192.0.2.1:5123", []string{"203.0.113.5"}, "192.0.2.1"},
		{"IPv6 remote address", "", "[2001:db8::7]:443", nil, "2001:db8::7"},
		{"IPv4-mapped remote address", "", "[::ffff:192.0.2.1]:80", nil, "192.0.2.1"},
		{"no remote address", "", "@", nil, ""},
		{"right-most entry", "X-Forwarded-For", "192.0.2.1:5123", []string{"198.51.100.1, 10.0.0.1,203.0.113.5"}, "203.0.113.5"},
		{"last line", "X-Forwarded-For", "192.0.2.1:5123", []string{"203.0.113.5", "198.51.100.2"}, "198.51.100.2"},
		{"with a port", "X-Forwarded-For", "192.0.2.1:5123", []string{"[2001:db8::9]:8443"}, "2001:db8::9"},
		{"in brackets", "X-Real-IP", "192.0.2.1:5123", []string{"[2001:db8::9]"}, "2001:db8::9"},
		{"header missing", "X-Forwarded-For", "192.0.2.1:5123", nil, "192.0.2.1"},
		{"not an address", "X-Forwarded-For", "192.0.2.1:5123", []string{"203.0.113.5, unknown"}, "192.0.2.1"},
		{"empty right-most entry", "X-Forwarded-For", "192.0.2.1:5123", []string{"203.0.113.5,"}, "192.0.2.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tc.remote
			for _, l := range tc.lines {
				r.Header.Add(headerOr(tc.header), l)
			}
			got := ""
			middleware.ClientAddress(tc.header)(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				if addr, ok := auth.ClientAddress(r.Context()); ok {
					got = addr.String()
				}
			})).ServeHTTP(httptest.NewRecorder(), r)
			if got != tc.want {
				t.Fatalf("client address %q, want %q", got, tc.want)
			}
		})
	}
}

// headerOr is the header the case's lines go in: the configured one, or
// X-Forwarded-For when none is configured (and it must be ignored).
func headerOr(h string) string {
	if h == "" {
		return "X-Forwarded-For"
	}
	return h
}
