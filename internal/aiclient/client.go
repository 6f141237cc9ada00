// Package aiclient asks a server speaking the OpenAI chat-completions
// protocol (OpenAI's own or any compatible one) for one completion. It owns
// everything about talking to that server: the wire types, the endpoint URL,
// a per-attempt timeout, bounded retries with backoff and jitter on 429, 5xx
// and connection errors (after Retry-After when the server sends one), a
// validated, size-capped reply, and the classification of every failure.
//
// What to ask is the caller's business: internal/contentgen writes the
// prompts. Every failure is an *apperr.Error with code generation_failed
// whose message says what went wrong; no message or cause ever contains the
// API key.
package aiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/procsvc/procsvc/internal/textclip"
)

// Bounds of a Client.
const (
	maxReplyBytes = 4 << 20 // response body read
	baseBackoff   = 500 * time.Millisecond
	maxBackoff    = 10 * time.Second
	maxRetryAfter = 30 * time.Second
)

// Config says which server and model to ask, and how.
type Config struct {
	// URL is the server's base URL: the endpoint is {URL}/v1/chat/completions;
	// a URL already ending in /v1 or in /chat/completions is used as is.
	URL    string
	Model  string
	APIKey string // sent as a bearer token; "" sends no Authorization
	// Timeout bounds each attempt; it must be positive.
	Timeout time.Duration
	// MaxRetries is the number of retries after the first attempt (0: none).
	MaxRetries  int
	Temperature float64
	// MaxReplyRunes bounds the completion; a longer one is a failure.
	MaxReplyRunes int
}

// Client calls one chat-completions endpoint. It is safe for concurrent use.
type Client struct {
	cfg      Config
	endpoint string // full URL of chat/completions
	http     *http.Client
	// The clock and randomness of retries, replaced by the tests.
	sleep  func(ctx context.Context, d time.Duration) error
	jitter func(n int64) int64 // uniform in [0, n)
	now    func() time.Time
}

// New returns a Client for cfg. Its only error is an unusable URL; the error
// does not echo the URL (it may carry credentials).
func New(cfg Config) (*Client, error) {
	ep, err := chatURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	return &Client{cfg: cfg, endpoint: ep, http: &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()},
		sleep: sleepCtx, jitter: rand.Int64N, now: time.Now}, nil
}

// chatURL returns the chat-completions URL of base: {base}/v1/chat/completions,
// tolerating a trailing slash, a base already ending in /v1, or the full
// path.
func chatURL(base string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", errors.New("aiclient: the URL must be an absolute http:// or https:// URL")
	}
	p := strings.TrimRight(u.Path, "/")
	switch {
	case strings.HasSuffix(p, "/chat/completions"):
	case strings.HasSuffix(p, "/v1"):
		p += "/chat/completions"
	default:
		p += "/v1/chat/completions"
	}
	u.Path, u.RawPath, u.Fragment = p, "", ""
	return u.String(), nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Message is one message of a chat: Role is "system", "user" or "assistant".
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model       string    `json:"model"`
	Messages    []Message `json:"messages"`
	Temperature float64   `json:"temperature"`
}

type chatResponse struct {
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Error *providerError `json:"error"`
}

// Complete asks for the completion of messages and returns its content,
// trimmed; it retries 429, 5xx and connection failures up to MaxRetries
// times, but never past ctx's deadline.
func (c *Client) Complete(ctx context.Context, messages []Message) (string, error) {
	body, err := json.Marshal(chatRequest{Model: c.cfg.Model, Messages: messages, Temperature: c.cfg.Temperature})
	if err != nil {
		return "", c.fail(&failure{msg: "the request could not be encoded", cause: err}, 1)
	}
	for attempt := 1; ; attempt++ {
		out, f := c.attempt(ctx, body)
		if f == nil {
			return out, nil
		}
		if !f.retry || attempt > c.cfg.MaxRetries {
			return "", c.fail(f, attempt)
		}
		wait := c.backoff(attempt)
		if f.retryAfter > 0 {
			wait = f.retryAfter
		}
		if dl, ok := ctx.Deadline(); ok && c.now().Add(wait).After(dl) {
			f.msg += "; no time was left to retry before the request's deadline"
			return "", c.fail(f, attempt)
		}
		if err := c.sleep(ctx, wait); err != nil {
			return "", c.fail(ctxFailure(err), attempt)
		}
	}
}

// backoff is the wait before retry n (1-based): exponential from
// baseBackoff, capped, with the upper half jittered.
func (c *Client) backoff(n int) time.Duration {
	d := maxBackoff
	if n <= 8 {
		d = min(baseBackoff<<(n-1), maxBackoff)
	}
	half := d / 2
	return half + time.Duration(c.jitter(int64(half)+1))
}

// retryAfter parses Retry-After (seconds or an HTTP date), capped at
// maxRetryAfter; 0 when absent or unusable.
func (c *Client) retryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		if n <= 0 || n != n {
			return 0
		}
		if n >= maxRetryAfter.Seconds() {
			return maxRetryAfter
		}
		d = time.Duration(n * float64(time.Second))
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(c.now())
	} else {
		return 0
	}
	return min(max(d, 0), maxRetryAfter)
}

// attempt performs one request.
func (c *Client) attempt(ctx context.Context, body []byte) (string, *failure) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return "", &failure{msg: "the request to the AI provider could not be built", cause: err}
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set("User-Agent", "procsvc")
	if c.cfg.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.http.Do(hreq)
	if err != nil {
		return "", c.transportFailure(ctx, actx, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes+1))
	if err != nil {
		f := c.transportFailure(ctx, actx, err)
		if !strings.Contains(f.msg, "timeout") {
			f.msg = "the connection to the AI provider broke while reading its reply"
		}
		return "", f
	}
	if len(data) > maxReplyBytes {
		return "", &failure{msg: fmt.Sprintf("the AI provider's reply is larger than %d MiB", maxReplyBytes>>20)}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", c.statusFailure(resp, data)
	}
	var r chatResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return "", &failure{msg: "the AI provider's reply is malformed (not a chat-completions JSON object)", cause: err}
	}
	if r.Error != nil {
		return "", &failure{msg: "the AI provider's reply is an error", cause: errors.New(r.Error.String())}
	}
	if len(r.Choices) == 0 {
		return "", &failure{msg: "the AI provider's reply is empty (no choices)"}
	}
	ch := r.Choices[0]
	content := ""
	if ch.Message.Content != nil {
		content = strings.TrimSpace(strings.ReplaceAll(*ch.Message.Content, "\x00", ""))
	}
	if content == "" {
		var cause error
		if ch.FinishReason != "" {
			cause = fmt.Errorf("finish_reason %q", textclip.Bytes(ch.FinishReason, 40))
		}
		return "", &failure{msg: "the AI provider's reply is empty (no content)", cause: cause}
	}
	if n := utf8.RuneCountInString(content); n > c.cfg.MaxReplyRunes {
		return "", &failure{msg: fmt.Sprintf("the generated content is too long (%d characters; at most %d)", n, c.cfg.MaxReplyRunes)}
	}
	return content, nil
}
