package webhooks

// The outbound HTTP client (docs/webhooks.md, "What procsvc connects
// to"): a URL is a tenant's input, so a delivery must not reach what the
// server alone can reach (its loopback, the private network it runs in,
// the cloud's metadata service). The rule is internal/egress's, applied to
// the URL's host before each attempt (ValidateURL) and to each address the
// name resolved to when the connection is dialled, so a name that
// resolves to a public address at registration and to a private one later
// (DNS rebinding) is refused too.

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/procsvc/procsvc/internal/egress"
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
// address procsvc does not connect to (egress.Refusal).
var ErrRefusedAddress = egress.ErrRefused

// allowHint is what a refusal of a private address adds: the flag that
// lifts it.
const allowHint = "--webhook-allow-private-addresses allows it"

// newClient returns the client of every delivery: a transport of its own
// (no proxy from the environment, keep-alive connections per endpoint
// host), redirects never followed, and every address checked as it is
// dialled (egress.Control), through resolver (nil: the default). Each request carries its own deadline
// (Options.Timeout) in its context.
func newClient(allowPrivate bool, idlePerHost int, resolver *net.Resolver) *http.Client {
	// Control runs whatever allowPrivate says: an address with a zone is
	// refused even then.
	dialer := &net.Dialer{Timeout: ConnectTimeout, KeepAlive: 30 * time.Second, Resolver: resolver,
		Control: egress.Control(allowPrivate, allowHint)}
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

// ValidateURL checks an endpoint's URL (the admin API checks it at
// registration, internal/core; each attempt checks it again before it
// connects): http or https, a host, no user information (credentials
// belong in the receiver's check of the signature), no fragment, at most
// MaxURLLength bytes, and a host egress.CheckHost accepts (with
// allowPrivate, private addresses and names too; a zone never).
func ValidateURL(raw string, allowPrivate bool) error {
	host, err := hostOf(raw)
	if err != nil {
		return err
	}
	return egress.CheckHost(host, allowPrivate)
}

// hostOf checks all of ValidateURL but the host, and returns the host.
func hostOf(raw string) (string, error) {
	if len(raw) > MaxURLLength {
		return "", fmt.Errorf("must be at most %d bytes", MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" {
		return "", errors.New("must be an absolute http or https URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", errors.New("must be an http or https URL")
	}
	if u.User != nil {
		return "", errors.New("must not hold a user name or password")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return "", errors.New("must not have a fragment (#…): it is never sent")
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "", errors.New("must have a port from 1 to 65535")
		}
	}
	return u.Hostname(), nil
}
