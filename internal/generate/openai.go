package generate

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/generation"
	"github.com/procsvc/procsvc/internal/limits"
)

// Bounds of the openai provider.
const (
	maxReplyBytes    = 4 << 20        // response body read
	maxReplyRunes    = limits.Content // generated content: what a procedure holds
	maxPromptContent = 256 << 10      // bytes of supplied content sent
	baseBackoff      = 500 * time.Millisecond
	maxBackoff       = 10 * time.Second
	maxRetryAfter    = 30 * time.Second
	temperature      = 0.2
)

// openAI calls a chat-completions endpoint: Config (with its defaults
// applied) and what it needs besides.
type openAI struct {
	Config
	endpoint string // full URL of chat/completions
	client   *http.Client
	// Injectable for tests.
	sleep  func(ctx context.Context, d time.Duration) error
	jitter func(n int64) int64 // uniform in [0, n)
	now    func() time.Time
}

func newOpenAI(c Config) (*openAI, error) {
	ep, err := chatURL(c.URL)
	if err != nil {
		return nil, err
	}
	return &openAI{Config: c, endpoint: ep, client: &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()},
		sleep: sleepCtx, jitter: rand.Int64N, now: time.Now}, nil
}

// chatURL returns the chat-completions URL of base: {base}/v1/chat/completions,
// tolerating a trailing slash, a base already ending in /v1, or the full
// path. Errors do not echo the URL (it may carry credentials).
func chatURL(base string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", errors.New("generate: PROCSVC_AI_URL must be an absolute http:// or https:// URL")
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

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model       string        `json:"model"`
	Messages    []chatMessage `json:"messages"`
	Temperature float64       `json:"temperature"`
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
		parts = append(parts, "type "+strconv.Quote(clip(p.Type, 80)))
	}
	if c := strings.Trim(string(p.Code), `"`); c != "" && c != "null" {
		parts = append(parts, "code "+strconv.Quote(clip(c, 80)))
	}
	return strings.Join(parts, ", ")
}

// systemPrompt states contentType, docStyle and language explicitly and
// describes the structure the template provider would produce.
func systemPrompt(o core.GenerateRequest) string {
	var b strings.Builder
	b.WriteString("You write procedure documentation for a team's procedure tracker. " +
		"Answer with one Markdown document and nothing else: no preamble, no closing remarks, no code fence around the whole document. " +
		"Start with a level-1 heading that is the procedure name.\n\n")
	fmt.Fprintf(&b, "Content type: %s\nDocumentation style: %s\nProgramming language: %s\n\n", o.ContentType, o.DocStyle, o.Language)
	tag := fenceTag(o.Language)
	switch o.ContentType {
	case generation.Process:
		b.WriteString("Content type process: write the procedure as numbered steps in order. After each step add a line starting with \"Check:\" that says how to confirm the step is done.\n")
	case generation.API:
		b.WriteString("Content type api: document each endpoint with the sections Endpoint (method and path), Parameters (a Markdown table with name, location, type, required and description), Request (body and an example) and Responses (status codes, their meaning and examples). Read JSON keys such as method, path, endpoint, params, parameters, body, response, responses and status as that information.\n")
	case generation.Code:
		b.WriteString("Content type code: write a walkthrough of the code: for each step a short explanation followed by the code in a fenced block")
		if tag != "" {
			b.WriteString(" tagged ```" + tag)
		}
		b.WriteString(". Explain what each block does and the identifiers it declares.\n")
	default:
		b.WriteString("Content type standard: write a general guide with the sections Overview, Steps (numbered) or Guidelines (bulleted), and Notes.\n")
	}
	switch o.DocStyle {
	case generation.Simplified:
		b.WriteString("Documentation style simplified: keep it short and plain; use few sections, everyday words and no jargon headings.\n")
	case generation.Detailed:
		b.WriteString("Documentation style detailed: be thorough; in addition add the sections Prerequisites, Edge cases and Troubleshooting.\n")
	default:
		b.WriteString("Documentation style technical: be precise; keep every term, identifier, name, value and command exactly as supplied.\n")
	}
	if n := langNames[o.Language]; n != "" {
		fmt.Fprintf(&b, "Programming language %s: write any code in %s and tag code fences ```%s.\n", o.Language, n, tag)
	} else {
		b.WriteString("Programming language other: no language was chosen; use plain code fences unless the supplied content shows its language.\n")
	}
	b.WriteString("\nUse only facts from the procedure name and the supplied content; when something needed is missing, say so briefly instead of inventing it. Write in the natural language of the supplied content.")
	return b.String()
}

func userPrompt(o core.GenerateRequest, content string) string {
	c, cut := sanitize(content, maxPromptContent)
	if strings.TrimSpace(c) == "" {
		c = "(none supplied)"
	}
	s := "Procedure name: " + o.Name + "\n\nSupplied content:\n" + c
	if cut {
		s += "\n\n(The supplied content was shortened.)"
	}
	return s
}

// failure is one failed attempt.
type failure struct {
	msg        string // for the client: what went wrong
	cause      error  // for the log
	retry      bool
	retryAfter time.Duration
}

// Generate asks the provider for the document, retrying 429, 5xx and
// connection failures up to maxRetries times.
func (c *openAI) Generate(ctx context.Context, req core.GenerateRequest) (string, error) {
	o := normalize(req)
	body, err := json.Marshal(chatRequest{
		Model: c.Model,
		Messages: []chatMessage{
			{Role: "system", Content: systemPrompt(o)},
			{Role: "user", Content: userPrompt(o, req.Content)},
		},
		Temperature: temperature,
	})
	if err != nil {
		return "", c.fail(&failure{msg: "the request could not be encoded", cause: err}, 1)
	}
	for attempt := 1; ; attempt++ {
		out, f := c.attempt(ctx, body)
		if f == nil {
			return out, nil
		}
		if !f.retry || attempt > c.MaxRetries {
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
func (c *openAI) backoff(n int) time.Duration {
	d := maxBackoff
	if n <= 8 {
		d = min(baseBackoff<<(n-1), maxBackoff)
	}
	half := d / 2
	return half + time.Duration(c.jitter(int64(half)+1))
}

// attempt performs one request.
func (c *openAI) attempt(ctx context.Context, body []byte) (string, *failure) {
	actx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return "", &failure{msg: "the request to the AI provider could not be built", cause: err}
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set("User-Agent", "procsvc")
	if c.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	resp, err := c.client.Do(hreq)
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
			cause = fmt.Errorf("finish_reason %q", clip(ch.FinishReason, 40))
		}
		return "", &failure{msg: "the AI provider's reply is empty (no content)", cause: cause}
	}
	if n := utf8.RuneCountInString(content); n > maxReplyRunes {
		return "", &failure{msg: fmt.Sprintf("the generated content is too long (%d characters; at most %d)", n, maxReplyRunes)}
	}
	return content, nil
}

// transportFailure classifies an error of Do or of reading the body.
func (c *openAI) transportFailure(ctx, actx context.Context, err error) *failure {
	if ctx.Err() != nil {
		return ctxFailure(ctx.Err())
	}
	var ne net.Error
	if errors.Is(actx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return &failure{msg: fmt.Sprintf("timeout: the AI provider did not answer within %s", c.Timeout), cause: err}
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
func (c *openAI) statusFailure(resp *http.Response, data []byte) *failure {
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

// retryAfter parses Retry-After (seconds or an HTTP date), capped at
// maxRetryAfter; 0 when absent or unusable.
func (c *openAI) retryAfter(v string) time.Duration {
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

// fail builds the client-facing error, the key scrubbed from message and
// cause alike.
func (c *openAI) fail(f *failure, attempts int) error {
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

func (c *openAI) scrub(s string) string {
	if c.APIKey == "" {
		return s
	}
	return strings.ReplaceAll(s, c.APIKey, "[redacted]")
}

// scrubbed is a cause whose text has the API key removed; errors.Is and
// errors.As still see the original.
type scrubbed struct {
	err  error
	text string
}

func (s *scrubbed) Error() string { return s.text }
func (s *scrubbed) Unwrap() error { return s.err }
