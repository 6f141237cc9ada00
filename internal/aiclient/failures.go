package aiclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/textclip"
)

// providerError is the error object of an OpenAI-style reply. Only its type
// and code are kept (its message may quote part of the key).
type providerError struct {
	Type string          `json:"type"`
	Code json.RawMessage `json:"code"`
}

func (p *providerError) String() string {
	if p == nil {
		return ""
	}
	var parts []string
	if p.Type != "" {
		parts = append(parts, "type "+strconv.Quote(textclip.Bytes(p.Type, 80)))
	}
	if c := strings.Trim(string(p.Code), `"`); c != "" && c != "null" {
		parts = append(parts, "code "+strconv.Quote(textclip.Bytes(c, 80)))
	}
	return strings.Join(parts, ", ")
}

// failure is one failed attempt.
type failure struct {
	msg        string // for the client: what went wrong
	cause      error  // for the log
	retry      bool
	retryAfter time.Duration
}

// transportFailure classifies an error of Do or of reading the body.
func (c *Client) transportFailure(ctx, actx context.Context, err error) *failure {
	if ctx.Err() != nil {
		return ctxFailure(ctx.Err())
	}
	var ne net.Error
	if errors.Is(actx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return &failure{msg: fmt.Sprintf("timeout: the AI provider did not answer within %s", c.cfg.Timeout), cause: err}
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return &failure{msg: "the AI provider refused the connection", cause: err, retry: true}
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return &failure{msg: "the AI provider's host name could not be resolved", cause: err, retry: !dns.IsNotFound}
	}
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var rh tls.RecordHeaderError
	if errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &rh) {
		return &failure{msg: "the TLS connection to the AI provider failed", cause: err}
	}
	return &failure{msg: "the connection to the AI provider failed", cause: err, retry: true}
}

// ctxFailure reports the caller's context ending.
func ctxFailure(err error) *failure {
	if errors.Is(err, context.DeadlineExceeded) {
		return &failure{msg: "timeout: the request's deadline passed before the AI provider answered", cause: err}
	}
	return &failure{msg: "the request was cancelled before the AI provider answered", cause: err}
}

// statusFailure reports a non-2xx answer; 429 and 5xx are retried, after
// Retry-After when the provider sent one.
func (c *Client) statusFailure(resp *http.Response, data []byte) *failure {
	code := resp.StatusCode
	msg := "the AI provider answered HTTP " + strconv.Itoa(code)
	if t := http.StatusText(code); t != "" {
		msg += " " + t
	}
	f := &failure{msg: msg, retry: code == http.StatusTooManyRequests || code >= 500}
	var r chatResponse
	if json.Unmarshal(data, &r) == nil && r.Error != nil {
		if s := r.Error.String(); s != "" {
			f.cause = errors.New("provider error " + s)
		}
	}
	if f.retry {
		f.retryAfter = c.retryAfter(resp.Header.Get("Retry-After"))
	}
	return f
}

// fail builds the caller-facing error, the key scrubbed from message and
// cause alike.
func (c *Client) fail(f *failure, attempts int) error {
	msg := "content generation failed: " + f.msg
	if attempts > 1 {
		msg += fmt.Sprintf(" (after %d attempts)", attempts)
	}
	e := &apperr.Error{Code: apperr.GenerationFailed, Message: c.scrub(msg)}
	if f.cause != nil {
		e.Err = &scrubbed{err: f.cause, text: c.scrub(f.cause.Error())}
	}
	return e
}

func (c *Client) scrub(s string) string {
	if c.cfg.APIKey == "" {
		return s
	}
	return strings.ReplaceAll(s, c.cfg.APIKey, "[redacted]")
}

// scrubbed is a cause whose text has the API key removed; errors.Is and
// errors.As still see the original.
type scrubbed struct {
	err  error
	text string
}

func (s *scrubbed) Error() string { return s.text }
func (s *scrubbed) Unwrap() error { return s.err }
