package webhooks

// The outbound HTTP client (docs/webhooks.md, "What procsvc connects
// to"): a URL is a tenant's input, so a delivery must not reach what the
// server alone can reach (its loopback, the private network it runs in,
// the cloud's metadata service). Addresses are checked when the connection
// is dialled, on the address the name resolved to, so a name that
// resolves to a public address at registration and to a private one later
// (DNS rebinding) is refused too.

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Bounds of the client.
const (
	// DefaultTimeout bounds one attempt: connecting, sending, and reading
	// the response.
	DefaultTimeout = 10 * time.Second
	// ConnectTimeout bounds dialling one address.
	ConnectTimeout = 5 * time.Second
	// MaxResponseBytes is the most of a response body read; the rest is
	// not, and the connection is then not reused.
	MaxResponseBytes = 64 << 10
	// ExcerptBytes is the most of a response body recorded with the
	// delivery.
	ExcerptBytes = 1 << 10
	// MaxURLLength bounds an endpoint's URL (its column's size).
	MaxURLLength = 2048
)

// ErrRefusedAddress is the cause of a delivery whose URL resolved to an
// address procsvc does not connect to (Options.AllowPrivate).
var ErrRefusedAddress = errors.New("refused address")

// refusedPrefixes are the ranges no delivery connects to: this host, the
// networks it is in, and what is not unicast on the internet.
var refusedPrefixes = func() []struct {
	prefix netip.Prefix
	what   string
} {
	list := []struct{ cidr, what string }{
		{"0.0.0.0/8", "an unspecified address"},
		{"10.0.0.0/8", "a private address"},
		{"100.64.0.0/10", "a carrier-grade NAT address"},
		{"127.0.0.0/8", "a loopback address"},
		{"169.254.0.0/16", "a link-local address"},
		{"172.16.0.0/12", "a private address"},
		{"192.0.0.0/24", "an IETF protocol address"},
		{"192.168.0.0/16", "a private address"},
		{"198.18.0.0/15", "a benchmarking address"},
		{"224.0.0.0/4", "a multicast address"},
		{"240.0.0.0/4", "a reserved address"},
		{"::/128", "an unspecified address"},
		{"::1/128", "a loopback address"},
		{"::/96", "an IPv4-compatible address"},
		{"2001::/32", "a Teredo address"},
		{"fc00::/7", "a private address"},
		{"fe80::/10", "a link-local address"},
		{"fec0::/10", "a site-local address"},
		{"ff00::/8", "a multicast address"},
	}
	out := make([]struct {
		prefix netip.Prefix
		what   string
	}, len(list))
	for i, p := range list {
		out[i].prefix, out[i].what = netip.MustParsePrefix(p.cidr), p.what
	}
	return out
}()

// IPv6 prefixes that embed an IPv4 address a gateway forwards to: NAT64
// (RFC 6052, RFC 8215) and 6to4 (RFC 3056). The embedded address is
// checked as itself.
var (
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour  = netip.MustParsePrefix("2002::/16")
)

// refusal says why ip is refused ("" when it is not).
func refusal(ip netip.Addr) string {
	ip = ip.Unmap() // IPv4-mapped IPv6 (::ffff:a.b.c.d) is the IPv4 address
	if ip.Is6() {
		b := ip.As16()
		switch {
		case nat64.Contains(ip), nat64Local.Contains(ip):
			if why := refusal(netip.AddrFrom4([4]byte(b[12:16]))); why != "" {
				return why + " (through NAT64)"
			}
		case sixToFour.Contains(ip):
			if why := refusal(netip.AddrFrom4([4]byte(b[2:6]))); why != "" {
				return why + " (through 6to4)"
			}
		}
	}
	for _, p := range refusedPrefixes {
		if p.prefix.Contains(ip) {
			return p.what
		}
	}
	return ""
}

// refuseAddress is the dialer's Control: it runs for each address a name
// resolved to, just before connecting.
func refuseAddress(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s is not an IP address", ErrRefusedAddress, address)
	}
	if why := refusal(ap.Addr()); why != "" {
		return fmt.Errorf("%w: %s is %s (--webhook-allow-private-addresses allows it)", ErrRefusedAddress, ap.Addr(), why)
	}
	return nil
}

// newClient returns the client of every delivery: a transport of its own
// (no proxy from the environment, keep-alive connections per endpoint
// host), redirects never followed, and, unless allowPrivate, addresses
// checked as they are dialled. Each request carries its own deadline
// (Options.Timeout) in its context.
func newClient(allowPrivate bool, idlePerHost int) *http.Client {
	dialer := &net.Dialer{Timeout: ConnectTimeout, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		dialer.Control = refuseAddress
	}
	transport := &http.Transport{
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    ConnectTimeout,
		MaxIdleConns:           1024,
		MaxIdleConnsPerHost:    idlePerHost,
		IdleConnTimeout:        90 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		// A compressed answer would be inflated for nothing: procsvc
		// reads at most an excerpt of it.
		DisableCompression: true,
	}
	return &http.Client{
		Transport: transport,
		// A redirect is answered as what it is, a 3xx: a failure. Not
		// following any means a receiver cannot send a delivery to
		// another host (or back to this one), and the URL registered is
		// the one delivered to.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// ValidateURL checks an endpoint's URL at registration (the admin API
// answers validation_failed with the message): http or https, a host, no
// user information (credentials belong in the receiver's check of the
// signature), no fragment, at most MaxURLLength bytes. Unless
// allowPrivate, a host that is an IP address in a refused range, or
// localhost, is refused at once; a name is checked again each time it is
// dialled, on the address it resolves to.
func ValidateURL(raw string, allowPrivate bool) error {
	if len(raw) > MaxURLLength {
		return fmt.Errorf("must be at most %d bytes", MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" {
		return errors.New("must be an absolute http or https URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("must be an http or https URL")
	}
	if u.User != nil {
		return errors.New("must not hold a user name or password")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return errors.New("must not have a fragment (#…): it is never sent")
	}
	host := u.Hostname()
	if host == "" {
		return errors.New("must name a host")
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return errors.New("must have a port from 1 to 65535")
		}
	}
	if allowPrivate {
		return nil
	}
	if ip, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")); err == nil {
		if why := refusal(ip); why != "" {
			return fmt.Errorf("must not be %s", why)
		}
	}
	if h := strings.ToLower(strings.TrimSuffix(host, ".")); h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return errors.New("must not be localhost")
	}
	return nil
}
