package webhooks_test

import (
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/webhooks"
)

// TestValidateURL: an endpoint's URL, as registration and each attempt
// check it (every spelling of a host: internal/egress's tests).
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
		{"http://[::1%25lo]:8080/", false, "zone"},
		{"http://[::1%25lo]:8080/", true, "zone"},
		{"http://0x7f.1/", false, "loopback"},
		{"http://0x7f.1/", true, "four decimal numbers"},
		{"http://2130706433/", false, "loopback"},
		{"http://intranet/", false, "fully qualified"},
		{"http://intranet/", true, ""},
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
