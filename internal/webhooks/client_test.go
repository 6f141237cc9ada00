package webhooks_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/webhooks"
)

// TestRefusedAddresses: loopback, private, link-local, unspecified,
// multicast, CGNAT and reserved addresses are refused, as themselves and
// in the IPv6 forms that reach them (IPv4-mapped, NAT64, 6to4); public
// ones are not.
func TestRefusedAddresses(t *testing.T) {
	for _, tc := range []struct {
		ip   string
		want string // "" : allowed
	}{
		{"127.0.0.1", "loopback"},
		{"127.255.0.9", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"::ffff:192.168.1.1", "private"},
		{"fc00::1", "private"},
		{"fd12:3456::1", "private"},
		{"169.254.169.254", "link-local"},
		{"fe80::1", "link-local"},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"224.0.0.1", "multicast"},
		{"ff02::1", "multicast"},
		{"100.64.0.1", "carrier-grade NAT"},
		{"100.127.255.254", "carrier-grade NAT"},
		{"255.255.255.255", "reserved"},
		{"64:ff9b::a00:1", "private"},      // NAT64 of 10.0.0.1
		{"64:ff9b::7f00:1", "loopback"},    // NAT64 of 127.0.0.1
		{"2002:c0a8:101::1", "private"},    // 6to4 of 192.168.1.1
		{"::127.0.0.1", "IPv4-compatible"}, // deprecated, never routed
		{"8.8.8.8", ""},
		{"172.32.0.1", ""},
		{"100.128.0.1", ""},
		{"2606:4700::1111", ""},
		{"64:ff9b::808:808", ""}, // NAT64 of 8.8.8.8
		{"::ffff:8.8.8.8", ""},
	} {
		got := webhooks.Refusal(netip.MustParseAddr(tc.ip))
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.ip, got, tc.want)
		}
	}
}

// TestValidateURL: an endpoint's URL at registration.
func TestValidateURL(t *testing.T) {
	for _, tc := range []struct {
		url          string
		allowPrivate bool
		want         string // part of the refusal; "" : accepted
	}{
		{"https://hooks.example.com/procsvc", false, ""},
		{"http://hooks.example.com:8080/x?token=abc", false, ""},
		{"https://8.8.8.8/hook", false, ""},
		{"https://[2606:4700::1111]/hook", false, ""},
		{"ftp://example.com/x", false, "http or https"},
		{"example.com/x", false, "http or https"},
		{"mailto:a@example.com", false, "absolute"},
		{"https:///path", false, "host"},
		{"https://user:pass@example.com/", false, "user name"},
		{"https://example.com/#frag", false, "fragment"},
		{"https://example.com:0/", false, "port"},
		{"https://example.com:70000/", false, "port"},
		{"https://example.com/" + strings.Repeat("a", webhooks.MaxURLLength), false, "at most"},
		{"http://127.0.0.1:8080/", false, "loopback"},
		{"http://[::1]/", false, "loopback"},
		{"http://169.254.169.254/latest/meta-data", false, "link-local"},
		{"http://10.0.0.5/", false, "private"},
		{"http://localhost:8080/", false, "localhost"},
		{"http://api.localhost/", false, "localhost"},
		{"http://127.0.0.1:8080/", true, ""},
		{"http://localhost:8080/", true, ""},
		{"http://exa mple.com/", false, "absolute"},
	} {
		err := webhooks.ValidateURL(tc.url, tc.allowPrivate)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want it accepted", tc.url, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want a refusal saying %q", tc.url, err, tc.want)
		}
	}
}
