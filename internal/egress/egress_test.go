package egress_test

import (
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/egress"
	"github.com/procsvc/procsvc/internal/egress/egresstest"
)

// TestRefusal: every class of address that is not public unicast is
// refused, as itself and in the IPv6 forms that reach it (IPv4-mapped,
// SIIT, NAT64, 6to4); an address with a zone is refused whatever it is,
// and even when private addresses are allowed (the review's finding:
// prefix containment never matches a zoned address); public addresses
// are not.
func TestRefusal(t *testing.T) {
	for _, tc := range []struct {
		ip   string
		want string // "": allowed
	}{
		{"127.0.0.1", "loopback"},
		{"127.255.0.9", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:0:127.0.0.1", "loopback address (through SIIT)"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"::ffff:192.168.1.1", "private"},
		{"fc00::1", "private"},
		{"fd12:3456::1", "private"},
		{"169.254.169.254", "link-local"},
		{"::ffff:169.254.169.254", "link-local"},
		{"fe80::1", "link-local"},
		{"fec0::1", "site-local"},
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "unspecified"},
		{"::", "unspecified"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"ff02::1", "multicast"},
		{"ff05::2", "multicast"},
		{"100.64.0.1", "carrier-grade NAT"},
		{"100.127.255.254", "carrier-grade NAT"},
		{"255.255.255.255", "broadcast"},
		{"240.0.0.1", "reserved"},
		{"192.0.0.8", "IETF protocol"},
		{"192.0.2.1", "documentation"},
		{"198.51.100.7", "documentation"},
		{"203.0.113.9", "documentation"},
		{"198.18.0.1", "benchmarking"},
		{"192.88.99.1", "6to4 relay"},
		{"64:ff9b::a00:1", "private address (through NAT64)"},
		{"64:ff9b::7f00:1", "loopback address (through NAT64)"},
		{"64:ff9b::a9fe:a9fe", "link-local address (through NAT64)"},
		{"64:ff9b:1::1", "local-use NAT64"},
		{"2002:c0a8:101::1", "private address (through 6to4)"},
		{"2002:7f00:1::1", "loopback address (through 6to4)"},
		{"::127.0.0.1", "IPv4-compatible"},
		{"::8.8.8.8", "IPv4-compatible"},
		{"100::1", "discard-only"},
		{"2001::1", "Teredo"},
		{"2001:db8::1", "documentation"},
		{"3fff::1", "documentation"},
		{"2001:2::1", "benchmarking"},
		{"4000::1", "not a global unicast"},
		{"::1%lo", "zone"},
		{"::1%1", "zone"},
		{"fe80::1%eth0", "zone"},
		{"2606:4700::1111%eth0", "zone"},
		{"8.8.8.8", ""},
		{"172.32.0.1", ""},
		{"100.128.0.1", ""},
		{"2606:4700::1111", ""},
		{"2a00:1450:4001::200e", ""},
		{"64:ff9b::808:808", ""}, // NAT64 of 8.8.8.8
		{"::ffff:8.8.8.8", ""},
		{"2002:808:808::1", ""}, // 6to4 of 8.8.8.8
	} {
		got := egress.Refusal(netip.MustParseAddr(tc.ip), false)
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.ip, got, tc.want)
		}
		// Allowing private addresses allows every one but a zoned one.
		allowed := egress.Refusal(netip.MustParseAddr(tc.ip), true)
		if zoned := strings.Contains(tc.ip, "%"); zoned != (allowed != "") {
			t.Errorf("%s with private addresses allowed: %q", tc.ip, allowed)
		}
	}
	if got := egress.Refusal(netip.Addr{}, true); got == "" {
		t.Error("the zero address allowed")
	}
}

// TestControl: the dialer's check refuses, naming the address and why,
// every address Refusal refuses, as the dialer hands it over (with its
// zone, IPv4-mapped), adding the hint only where the flag would lift the
// refusal.
func TestControl(t *testing.T) {
	const hint = "the flag allows it"
	for _, tc := range []struct {
		address      string
		allowPrivate bool
		want         string // "": allowed
	}{
		{"127.0.0.1:80", false, "127.0.0.1 is a loopback address (the flag allows it)"},
		{"[::1]:80", false, "::1 is a loopback address"},
		{"[::1%lo]:80", false, "::1%lo is an address with a zone (%lo)"},
		{"[::1%lo]:80", true, "zone"},
		{"[fe80::1%2]:80", true, "zone"},
		{"[::ffff:127.0.0.1]:80", false, "loopback"},
		{"0.0.0.0:80", false, "unspecified"},
		{"[::]:80", false, "unspecified"},
		{"169.254.169.254:80", false, "link-local"},
		{"not-an-address:80", false, "not an IP address"},
		{"127.0.0.1:80", true, ""},
		{"8.8.8.8:443", false, ""},
		{"[2606:4700::1111]:443", false, ""},
	} {
		err := egress.Control(tc.allowPrivate, hint)("tcp", tc.address, nil)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want it allowed", tc.address, err)
		case tc.want != "" && (err == nil || !errors.Is(err, egress.ErrRefused) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want a refusal saying %q", tc.address, err, tc.want)
		case err != nil && strings.Contains(tc.want, "zone") && strings.Contains(err.Error(), hint):
			t.Errorf("%s: %v: the hint offered for what the flag does not lift", tc.address, err)
		}
	}
}

// TestCheckHost: every spelling of egresstest.Refused is refused at registration
// with a message saying why; public hosts and addresses are accepted;
// with private addresses allowed, private ones are accepted but a zone or
// a malformed address never.
func TestCheckHost(t *testing.T) {
	for _, tc := range egresstest.Refused {
		host := hostOf(t, tc.Authority)
		err := egress.CheckHost(host, false)
		switch {
		case tc.Says == "" && err != nil:
			t.Errorf("%s: %v, want it accepted", tc.Authority, err)
		case tc.Says != "" && (err == nil || !strings.Contains(err.Error(), tc.Says)):
			t.Errorf("%s (host %q): %v, want a refusal saying %q", tc.Authority, host, err, tc.Says)
		}
	}
	for _, ok := range egresstest.Accepted {
		if err := egress.CheckHost(hostOf(t, ok), false); err != nil {
			t.Errorf("%s: %v, want it accepted", ok, err)
		}
	}
	for _, tc := range []struct {
		authority string
		refused   bool
	}{
		{"127.0.0.1:8080", false}, {"localhost:8080", false}, {"intranet", false}, {"[::1]", false}, {"169.254.169.254", false},
		{"printer.local", false},
		{"[::1%25lo]:8080", true}, {"127.0.0.1%2500", true}, {"0x7f.1", true}, {"2130706433", true}, {"ｌｏｃａｌｈｏｓｔ", true},
	} {
		if err := egress.CheckHost(hostOf(t, tc.authority), true); (err != nil) != tc.refused {
			t.Errorf("%s with private addresses allowed: %v, want refused %v", tc.authority, err, tc.refused)
		}
	}
}

// hostOf is the host of http://authority/ as net/url reads it (what the
// API checks).
func hostOf(t *testing.T, authority string) string {
	t.Helper()
	u, err := url.Parse("http://" + authority + "/")
	if err != nil {
		t.Fatalf("%s: %v", authority, err)
	}
	return u.Hostname()
}
