package middleware

import (
	"net/http"
	"net/netip"
	"strings"

	"github.com/procsvc/procsvc/internal/auth"
)

// ClientAddress puts each request's client address into its context
// (auth.WithClientAddress), where every authentication path finds it: the
// middleware of both faces and the WebSockets that authenticate with their
// upgrade request's context. The address is the connection's remote
// address; when header is set (the name of a header a trusted reverse proxy
// sets, such as X-Forwarded-For), it is the right-most address of that
// header's last line, the one the proxy appended, unless that is missing or
// not an address. Entries further left are the client's to write, and never
// read. Without a proxy that sets it, header must stay empty: anyone could
// claim any address.
func ClientAddress(header string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			addr, ok := netip.Addr{}, false
			if header != "" {
				addr, ok = forwardedAddress(r.Header.Values(header))
			}
			if !ok {
				addr, ok = parseAddress(r.RemoteAddr)
			}
			if ok {
				r = r.WithContext(auth.WithClientAddress(r.Context(), addr))
			}
			next.ServeHTTP(w, r)
		})
	}
}

// forwardedAddress returns the right-most entry of a comma-separated list
// of addresses given over one or more header lines.
func forwardedAddress(lines []string) (netip.Addr, bool) {
	if len(lines) == 0 {
		return netip.Addr{}, false
	}
	last := lines[len(lines)-1]
	if i := strings.LastIndexByte(last, ','); i >= 0 {
		last = last[i+1:]
	}
	return parseAddress(strings.TrimSpace(last))
}

// parseAddress reads an address, with or without a port (IPv6 in brackets
// then), as RemoteAddr and proxies write it.
func parseAddress(s string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), true
	}
	return netip.Addr{}, false
}
