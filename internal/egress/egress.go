// Package egress is the one rule of what a tenant's URL may make procsvc
// connect to (docs/webhooks.md, "What procsvc connects to"): public
// unicast addresses, and names that are not this host's or its network's.
// A webhook endpoint's URL is checked by it twice: when an admin registers
// it (CheckHost, on the URL's host as written, in every spelling an
// address can take) and when a delivery connects (Control, on each address
// the name resolved to, so that a name that resolves to a public address
// at registration and to a private one later, DNS rebinding, is refused
// too). Both come down to Refusal.
//
// It imports nothing of procsvc, so that internal/core (registration) and
// internal/webhooks (delivery) share it.
package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
)

// ErrRefused is the cause of a connection Control refused.
var ErrRefused = errors.New("refused address")

// prefix is a range of addresses refused, and what to call them.
type prefix struct {
	netip.Prefix
	what string
}

func prefixes(list ...string) []prefix {
	out := make([]prefix, 0, len(list)/2)
	for i := 0; i < len(list); i += 2 {
		out = append(out, prefix{netip.MustParsePrefix(list[i]), list[i+1]})
	}
	return out
}

// refused4 are the IPv4 ranges that are not public unicast (IANA's
// special-purpose registry, RFC 6890 and its updates).
var refused4 = prefixes(
	"0.0.0.0/8", "an unspecified address",
	"10.0.0.0/8", "a private address",
	"100.64.0.0/10", "a carrier-grade NAT address",
	"127.0.0.0/8", "a loopback address",
	"169.254.0.0/16", "a link-local address",
	"172.16.0.0/12", "a private address",
	"192.0.0.0/24", "an IETF protocol address",
	"192.0.2.0/24", "a documentation address",
	"192.88.99.0/24", "a 6to4 relay address",
	"192.168.0.0/16", "a private address",
	"198.18.0.0/15", "a benchmarking address",
	"198.51.100.0/24", "a documentation address",
	"203.0.113.0/24", "a documentation address",
	"224.0.0.0/4", "a multicast address",
	"255.255.255.255/32", "the broadcast address",
	"240.0.0.0/4", "a reserved address",
)

// refused6 are the IPv6 ranges refused that are not told apart by
// embedding an IPv4 address (below); any other address outside 2000::/3,
// the global unicast space, is refused too.
var refused6 = prefixes(
	"::/128", "an unspecified address",
	"::1/128", "a loopback address",
	"::/96", "an IPv4-compatible address",
	"100::/64", "a discard-only address",
	"64:ff9b:1::/48", "a local-use NAT64 address",
	"2001::/32", "a Teredo address",
	"2001:2::/48", "a benchmarking address",
	"2001:10::/28", "an ORCHID address",
	"2001:20::/28", "an ORCHID address",
	"2001:db8::/32", "a documentation address",
	"3fff::/20", "a documentation address",
	"fc00::/7", "a private address",
	"fe80::/10", "a link-local address",
	"fec0::/10", "a site-local address",
	"ff00::/8", "a multicast address",
)

// IPv6 ranges that carry an IPv4 address a gateway forwards to: the
// embedded address is judged as itself.
var (
	globalUnicast = netip.MustParsePrefix("2000::/3")
	nat64         = netip.MustParsePrefix("64:ff9b::/96")    // RFC 6052
	translated    = netip.MustParsePrefix("::ffff:0:0:0/96") // RFC 2765 (SIIT)
	sixToFour     = netip.MustParsePrefix("2002::/16")       // RFC 3056
)

// Refusal says why procsvc does not connect to addr ("" when it does).
// An address with a zone (fe80::1%eth0, ::1%lo) names a network interface
// of the server itself and is always refused. Unless allowPrivate, so is
// every address that is not public unicast: loopback, private, link-local,
// carrier-grade NAT, unspecified, multicast, broadcast, reserved,
// documentation and the other special-purpose ranges, IPv4 addresses
// written in IPv6 (IPv4-mapped, IPv4-compatible, SIIT, NAT64, 6to4)
// judged as the IPv4 address they carry, and IPv6 outside 2000::/3.
func Refusal(addr netip.Addr, allowPrivate bool) string {
	if !addr.IsValid() {
		return "not an IP address"
	}
	if addr.Zone() != "" {
		// A zoned address is never in a prefix (netip.Prefix.Contains
		// is false for every one), so it is refused before any range
		// is looked at.
		return "an address with a zone (%" + addr.Zone() + "), which names a network interface of the server"
	}
	if allowPrivate {
		return ""
	}
	return class(addr)
}

// class says which refused class addr (without a zone) is in ("": public).
func class(addr netip.Addr) string {
	addr = addr.Unmap() // ::ffff:a.b.c.d is a.b.c.d
	if addr.Is4() {
		for _, p := range refused4 {
			if p.Contains(addr) {
				return p.what
			}
		}
		return ""
	}
	b := addr.As16()
	embedded := func(at int, how string) string {
		if why := class(netip.AddrFrom4([4]byte(b[at : at+4]))); why != "" {
			return why + " (through " + how + ")"
		}
		return ""
	}
	switch {
	case nat64.Contains(addr):
		return embedded(12, "NAT64")
	case translated.Contains(addr):
		if why := embedded(12, "SIIT"); why != "" {
			return why
		}
		return "an IPv4-translated address"
	case sixToFour.Contains(addr):
		return embedded(2, "6to4")
	}
	for _, p := range refused6 {
		if p.Contains(addr) {
			return p.what
		}
	}
	if !globalUnicast.Contains(addr) {
		return "not a global unicast address (outside 2000::/3)"
	}
	return ""
}

// Control is a net.Dialer's Control: it runs for each address a name
// resolved to, after resolution and just before connecting, and refuses
// (ErrRefused, naming the address and why) what Refusal refuses. hint,
// when set, is added to a refusal that allowPrivate would lift (the flag
// that lifts it).
func Control(allowPrivate bool, hint string) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: %s is not an IP address", ErrRefused, address)
		}
		why := Refusal(ap.Addr(), allowPrivate)
		if why == "" {
			return nil
		}
		if hint != "" && Refusal(ap.Addr(), true) == "" {
			why += " (" + hint + ")"
		}
		return fmt.Errorf("%w: %s is %s", ErrRefused, ap.Addr(), why)
	}
}

// localNames are names, and parent domains (with a leading dot), that
// resolve to this host or its own network and never to a public address
// (RFC 6761, RFC 6762, RFC 8375, ICANN's .internal; Debian's ip6-* names
// for ::1).
var localNames = []string{"localhost", ".localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback",
	".local", ".home.arpa", ".internal"}

// CheckHost checks the host of a URL an admin registers (url.URL.Hostname:
// brackets removed, percent-escapes decoded), and returns why it is
// refused, as a sentence to follow "url " in a validation message (nil
// when it is accepted). It does not resolve names: a name is checked
// again, on each address it resolves to, by Control at every connection.
//
//   - An address with a zone is refused; so are addresses Refusal refuses
//     (unless allowPrivate), however they are written: an IPv6 literal in
//     any of its forms, and an IPv4 address as the resolver would read it
//     (2130706433, 0x7f.1, 127.1, 0177.0.0.1, a trailing dot). An IPv4
//     address not written as four decimal numbers is refused even when
//     public: resolvers differ on such spellings.
//   - A name must be ASCII (an internationalised name in its xn-- form:
//     non-ASCII names are mapped before resolution, and ｌｏｃａｌｈｏｓｔ
//     would be localhost), of letters, digits, hyphens, underscores and
//     dots, in any case, with at most one trailing dot.
//   - Unless allowPrivate, a name must not be localhost or another of
//     this host's or its network's (localNames), nor a single label
//     (resolved through the server's search domains, to its own network).
func CheckHost(host string, allowPrivate bool) error {
	if host == "" {
		return errors.New("must name a host")
	}
	if i := strings.IndexByte(host, '%'); i >= 0 {
		return fmt.Errorf("must not name a network interface (a zone, %s): it is the server's own", host[i:])
	}
	if strings.Contains(host, ":") {
		addr, err := netip.ParseAddr(host)
		if err != nil {
			return errors.New("must have a valid IPv6 address in brackets")
		}
		return refused(addr, "", allowPrivate)
	}
	for i := 0; i < len(host); i++ {
		if host[i] >= 0x80 {
			return errors.New("must have an ASCII host: write an internationalised domain name in its xn-- form")
		}
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" {
			return errors.New("must have a host name without empty labels (..)")
		}
		if strings.Trim(l, "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			return errors.New("must have a host name of letters, digits, hyphens and dots")
		}
	}
	// As browsers (the WHATWG URL standard) and resolvers read them, a
	// name whose last label is a number is an IPv4 address.
	if numeric(labels[len(labels)-1]) {
		addr, ok := parseIPv4(labels)
		if !ok {
			return errors.New("must have a valid IPv4 address (four decimal numbers from 0 to 255)")
		}
		written := ""
		if addr.String() != host {
			written = " (" + host + " is " + addr.String() + ")"
		}
		if err := refused(addr, written, allowPrivate); err != nil {
			return err
		}
		if addr.String() != host {
			return fmt.Errorf("must write the IPv4 address %s as four decimal numbers, not %s", addr, host)
		}
		return nil
	}
	if allowPrivate {
		return nil
	}
	for _, local := range localNames {
		if name == local || local[0] == '.' && (name == local[1:] || strings.HasSuffix(name, local)) {
			return fmt.Errorf("must not be %s: it names this server or its own network; webhooks are sent to public hosts", name)
		}
	}
	if len(labels) == 1 {
		return fmt.Errorf("must have a fully qualified host name, not %s: a single label is resolved in the server's own network", name)
	}
	return nil
}

// refused is CheckHost's refusal of an address; written says how it was
// written, when that was not as itself.
func refused(addr netip.Addr, written string, allowPrivate bool) error {
	why := Refusal(addr, allowPrivate)
	if why == "" {
		return nil
	}
	if Refusal(addr, true) != "" { // a zone: nothing lifts it
		return fmt.Errorf("must not be %s%s", why, written)
	}
	return fmt.Errorf("must not be %s%s: webhooks are sent only to public addresses", why, written)
}

// numeric reports whether a label is a number as inet_aton reads one:
// decimal, octal (a leading 0) or hexadecimal (0x).
func numeric(label string) bool {
	if h, ok := strings.CutPrefix(label, "0x"); ok {
		return strings.Trim(h, "0123456789abcdef") == ""
	}
	return strings.Trim(label, "0123456789") == ""
}

// parseIPv4 reads labels as inet_aton (and the WHATWG URL standard) does:
// one to four numbers, each decimal, octal or hexadecimal, the last
// filling the bytes the others left (127.1 is 127.0.0.1, 2130706433 is
// 127.0.0.1).
func parseIPv4(labels []string) (netip.Addr, bool) {
	if len(labels) > 4 {
		return netip.Addr{}, false
	}
	var parts []uint64
	for _, l := range labels {
		base, digits := 10, l
		switch {
		case strings.HasPrefix(l, "0x"):
			base, digits = 16, l[2:]
			if digits == "" {
				digits = "0"
			}
		case len(l) > 1 && l[0] == '0':
			base, digits = 8, l[1:]
		}
		n, err := strconv.ParseUint(digits, base, 64)
		if err != nil || n > 0xffffffff {
			return netip.Addr{}, false
		}
		parts = append(parts, n)
	}
	last := len(parts) - 1
	var v uint64
	for i, p := range parts[:last] {
		if p > 255 {
			return netip.Addr{}, false
		}
		v |= p << (8 * (3 - i))
	}
	if parts[last] >= 1<<(8*(4-last)) {
		return netip.Addr{}, false
	}
	v |= parts[last]
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}
