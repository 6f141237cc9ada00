package aiclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/aiclient"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/limits"
)

const testKey = "sk-test-SECRET-0123456789abcdef"

var testNow = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// recorded is what the fake server saw.
type recorded struct {
	mu       sync.Mutex
	paths    []string
	auth     []string
	bodies   []aiclient.ChatRequest
	ctypes   []string
	attempts atomic.Int32
}

func (r *recorded) record(req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var cr aiclient.ChatRequest
	_ = json.Unmarshal(body, &cr)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.paths = append(r.paths, req.Method+" "+req.URL.Path)
	r.auth = append(r.auth, req.Header.Get("Authorization"))
	r.ctypes = append(r.ctypes, req.Header.Get("Content-Type"))
	r.bodies = append(r.bodies, cr)
	r.attempts.Add(1)
}

// reply writes a chat-completions answer with content.
func reply(w http.ResponseWriter, content string) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}},
	})
}

// fakeServer answers attempt n (1-based) with handlers[min(n, len)-1].
func fakeServer(t *testing.T, handlers ...http.HandlerFunc) (*httptest.Server, *recorded) {
	t.Helper()
	rec := &recorded{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.record(r)
		n := int(rec.attempts.Load())
		handlers[min(n, len(handlers))-1](w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, rec
}

// client returns a Client whose sleeps are recorded, not slept.
func client(t *testing.T, url, key string, timeout time.Duration, retries int) (*aiclient.Client, *[]time.Duration) {
	t.Helper()
	c, err := aiclient.New(aiclient.Config{URL: url, Model: "test-model", APIKey: key, Timeout: timeout, MaxRetries: retries,
		Temperature: 0.2, MaxReplyRunes: limits.Content})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	slept := &[]time.Duration{}
	c.SetSleep(func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		*slept = append(*slept, d)
		mu.Unlock()
		return ctx.Err()
	})
	c.SetJitter(func(n int64) int64 { return 0 })
	c.SetNow(func() time.Time { return testNow })
	return c, slept
}

var messages = []aiclient.Message{
	{Role: "system", Content: "You write procedure documentation."},
	{Role: "user", Content: `Procedure name: Rotate keys

Supplied content:
{"method":"POST","path":"/keys"}`},
}

func TestCompleteSuccessAndRequest(t *testing.T) {
	for _, suffix := range []string{"", "/", "/v1", "/v1/"} {
		t.Run("base"+suffix, func(t *testing.T) {
			srv, rec := fakeServer(t, func(w http.ResponseWriter, r *http.Request) { reply(w, "\n# Rotate keys\n\nDone.\n\n") })
			c, slept := client(t, srv.URL+suffix, testKey, time.Second, 2)
			out, err := c.Complete(context.Background(), messages)
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if out != "# Rotate keys\n\nDone." {
				t.Errorf("content %q, want it trimmed", out)
			}
			if len(rec.paths) != 1 || rec.paths[0] != "POST /v1/chat/completions" || len(*slept) != 0 {
				t.Fatalf("requests %q, sleeps %v", rec.paths, *slept)
			}
			if rec.ctypes[0] != "application/json" {
				t.Errorf("Content-Type %q", rec.ctypes[0])
			}
			body := rec.bodies[0]
			if body.Model != "test-model" || body.Temperature != 0.2 || len(body.Messages) != 2 {
				t.Fatalf("body %+v", body)
			}
			for i, m := range body.Messages {
				if m != messages[i] {
					t.Errorf("message %d is %+v, want %+v", i, m, messages[i])
				}
			}
		})
	}
}

func TestCompleteAuthorization(t *testing.T) {
	for _, key := range []string{testKey, ""} {
		srv, rec := fakeServer(t, func(w http.ResponseWriter, r *http.Request) { reply(w, "ok") })
		c, _ := client(t, srv.URL, key, time.Second, 2)
		if _, err := c.Complete(context.Background(), messages); err != nil {
			t.Fatal(err)
		}
		want := ""
		if key != "" {
			want = "Bearer " + key
		}
		if rec.auth[0] != want {
			t.Errorf("key %q: Authorization %q, want %q", key, rec.auth[0], want)
		}
	}
}

func status(code int, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
		// providers echo parts of the key in errors; it must not leak
		_, _ = io.WriteString(w, `{"error":{"message":"Incorrect API key provided: `+testKey+`","type":"invalid_request_error","code":"invalid_api_key"}}`)
	}
}

func body(s string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, s)
	}
}

func ok(w http.ResponseWriter, r *http.Request) { reply(w, "# Generated") }

// checkFailure asserts err is generation_failed mentioning want and never
// the key.
func checkFailure(t *testing.T, err error, want ...string) {
	t.Helper()
	var ae *apperr.Error
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T) is not an *apperr.Error", err, err)
	}
	if ae.Code != apperr.GenerationFailed {
		t.Errorf("code %q, want %q", ae.Code, apperr.GenerationFailed)
	}
	for _, w := range want {
		if !strings.Contains(ae.Message, w) {
			t.Errorf("message %q does not mention %q", ae.Message, w)
		}
	}
	for _, s := range []string{ae.Message, ae.Error(), err.Error()} {
		if strings.Contains(s, testKey) || strings.Contains(s, "SECRET") {
			t.Errorf("error text contains the API key: %q", s)
		}
	}
}

func TestCompleteRetries(t *testing.T) {
	tests := []struct {
		name     string
		handlers []http.HandlerFunc
		retries  int
		attempts int
		sleeps   []time.Duration
		wantErr  []string // nil: success
	}{
		{"429 then success, Retry-After", []http.HandlerFunc{status(429, "Retry-After", "3"), ok}, 2, 2, []time.Duration{3 * time.Second}, nil},
		{"429 then success, backoff", []http.HandlerFunc{status(429), ok}, 2, 2, []time.Duration{250 * time.Millisecond}, nil},
		{"Retry-After capped", []http.HandlerFunc{status(503, "Retry-After", "86400"), ok}, 2, 2, []time.Duration{aiclient.MaxRetryAfter}, nil},
		{"Retry-After HTTP date", []http.HandlerFunc{status(502, "Retry-After", testNow.Add(7*time.Second).Format(http.TimeFormat)), ok}, 2, 2, []time.Duration{7 * time.Second}, nil},
		{"500 twice then success", []http.HandlerFunc{status(500), status(500), ok}, 2, 3, []time.Duration{250 * time.Millisecond, 500 * time.Millisecond}, nil},
		{"503 exhausted", []http.HandlerFunc{status(503)}, 2, 3, []time.Duration{250 * time.Millisecond, 500 * time.Millisecond}, []string{"HTTP 503", "after 3 attempts"}},
		{"503, retries disabled", []http.HandlerFunc{status(503)}, 0, 1, nil, []string{"HTTP 503"}},
		{"503 exhausted, 5 retries", []http.HandlerFunc{status(503)}, 5, 6, []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}, []string{"HTTP 503", "after 6 attempts"}},
		{"400 not retried", []http.HandlerFunc{status(400), ok}, 2, 1, nil, []string{"HTTP 400"}},
		{"401 not retried", []http.HandlerFunc{status(401), ok}, 2, 1, nil, []string{"HTTP 401"}},
		{"404 not retried", []http.HandlerFunc{status(404), ok}, 2, 1, nil, []string{"HTTP 404"}},
		{"malformed JSON not retried", []http.HandlerFunc{body("<html>oops</html>"), ok}, 2, 1, nil, []string{"malformed"}},
		{"truncated JSON", []http.HandlerFunc{body(`{"choices":[{"message":{"content":"# x`), ok}, 2, 1, nil, []string{"malformed"}},
		{"wrong JSON shape", []http.HandlerFunc{body(`{"choices":"nope"}`)}, 2, 1, nil, []string{"malformed"}},
		{"empty choices", []http.HandlerFunc{body(`{"choices":[]}`)}, 2, 1, nil, []string{"empty", "no choices"}},
		{"no choices key", []http.HandlerFunc{body(`{}`)}, 2, 1, nil, []string{"empty", "no choices"}},
		{"null content", []http.HandlerFunc{body(`{"choices":[{"message":{"content":null},"finish_reason":"content_filter"}]}`)}, 2, 1, nil, []string{"empty", "no content"}},
		{"blank content", []http.HandlerFunc{func(w http.ResponseWriter, r *http.Request) { reply(w, " \n\t ") }}, 2, 1, nil, []string{"empty", "no content"}},
		{"error object with 200", []http.HandlerFunc{body(`{"error":{"message":"` + testKey + `","type":"server_error"}}`)}, 2, 1, nil, []string{"error"}},
		{"content too long", []http.HandlerFunc{func(w http.ResponseWriter, r *http.Request) { reply(w, strings.Repeat("é", limits.Content+1)) }}, 2, 1, nil, []string{"too long"}},
		{"body too large", []http.HandlerFunc{func(w http.ResponseWriter, r *http.Request) { reply(w, strings.Repeat("a", aiclient.MaxReplyBytes)) }}, 2, 1, nil, []string{"larger than 4 MiB"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, rec := fakeServer(t, tt.handlers...)
			c, slept := client(t, srv.URL, testKey, time.Second, tt.retries)
			out, err := c.Complete(context.Background(), messages)
			if got := int(rec.attempts.Load()); got != tt.attempts {
				t.Errorf("%d attempts, want %d", got, tt.attempts)
			}
			if len(*slept) != len(tt.sleeps) {
				t.Errorf("sleeps %v, want %v", *slept, tt.sleeps)
			} else {
				for i := range tt.sleeps {
					if (*slept)[i] != tt.sleeps[i] {
						t.Errorf("sleeps %v, want %v", *slept, tt.sleeps)
						break
					}
				}
			}
			if tt.wantErr == nil {
				if err != nil || out != "# Generated" {
					t.Fatalf("Complete = %q, %v; want success", out, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Complete = %q, want error", out)
			}
			checkFailure(t, err, tt.wantErr...)
		})
	}
}

func TestCompleteTimeout(t *testing.T) {
	srv, rec := fakeServer(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	c, slept := client(t, srv.URL, testKey, 50*time.Millisecond, 2)
	start := time.Now()
	_, err := c.Complete(context.Background(), messages)
	checkFailure(t, err, "timeout", "50ms")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
	if n := rec.attempts.Load(); n != 1 || len(*slept) != 0 {
		t.Errorf("%d attempts, sleeps %v: a timeout is not retried", n, *slept)
	}
}

func TestCompleteRespectsCallerContext(t *testing.T) {
	// the caller's deadline ends the attempt even with a long per-attempt timeout
	srv, _ := fakeServer(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	c, _ := client(t, srv.URL, testKey, time.Minute, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Complete(ctx, messages)
	checkFailure(t, err, "timeout")

	// a cancelled caller
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	_, err = c.Complete(ctx, messages)
	checkFailure(t, err, "cancelled")

	// no retry when the wait would pass the caller's deadline
	srv2, rec := fakeServer(t, status(503, "Retry-After", "20"), ok)
	c2, slept := client(t, srv2.URL, testKey, time.Minute, 2)
	c2.SetNow(time.Now)
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = c2.Complete(ctx, messages)
	checkFailure(t, err, "HTTP 503", "deadline")
	if rec.attempts.Load() != 1 || len(*slept) != 0 {
		t.Errorf("%d attempts, sleeps %v", rec.attempts.Load(), *slept)
	}
}

func TestCompleteConnectionRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c, slept := client(t, url, testKey, time.Second, 2)
	_, err := c.Complete(context.Background(), messages)
	checkFailure(t, err, "refused", "after 3 attempts")
	if len(*slept) != 2 {
		t.Errorf("sleeps %v, want 2 (connection errors are retried)", *slept)
	}
}

func TestCompleteConnectionDropped(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close() // no answer at all
			}
			return
		}
		ok(w, r)
	}))
	defer srv.Close()
	c, slept := client(t, srv.URL, testKey, time.Second, 2)
	out, err := c.Complete(context.Background(), messages)
	if err != nil || out != "# Generated" || n.Load() != 2 || len(*slept) != 1 {
		t.Errorf("Complete = %q, %v after %d attempts, sleeps %v; want success on the retry", out, err, n.Load(), *slept)
	}
}

func TestRetryAfterAndBackoff(t *testing.T) {
	c, _ := client(t, "http://localhost:1", "", time.Second, 2)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0}, {"0", 0}, {"-5", 0}, {"abc", 0}, {"NaN", 0},
		{"1", time.Second}, {"1.5", 1500 * time.Millisecond}, {"29", 29 * time.Second},
		{"31", aiclient.MaxRetryAfter}, {"99999999999999999999", aiclient.MaxRetryAfter},
		{testNow.Add(4 * time.Second).Format(http.TimeFormat), 4 * time.Second},
		{testNow.Add(-time.Hour).Format(http.TimeFormat), 0},
		{testNow.Add(time.Hour).Format(http.TimeFormat), aiclient.MaxRetryAfter},
	}
	for _, tt := range tests {
		if got := c.RetryAfter(tt.in); got != tt.want {
			t.Errorf("retryAfter(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
	// jitter spreads the upper half of each exponential step
	for n, want := range []time.Duration{0, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, aiclient.MaxBackoff, aiclient.MaxBackoff} {
		if n == 0 {
			continue
		}
		c.SetJitter(func(m int64) int64 { return 0 })
		if got := c.Backoff(n); got != want/2 {
			t.Errorf("backoff(%d) with no jitter = %s, want %s", n, got, want/2)
		}
		c.SetJitter(func(m int64) int64 { return m - 1 })
		if got := c.Backoff(n); got != want {
			t.Errorf("backoff(%d) with full jitter = %s, want %s", n, got, want)
		}
	}
	if got := c.Backoff(1000); got > aiclient.MaxBackoff {
		t.Errorf("backoff(1000) = %s", got)
	}
}

func TestKeyNeverInErrors(t *testing.T) {
	// the key is also in the URL's user info and query: still never shown
	srv, _ := fakeServer(t, status(401))
	url := strings.Replace(srv.URL, "http://", "http://user:"+testKey+"@", 1) + "/?key=" + testKey
	c, _ := client(t, url, testKey, time.Second, 2)
	_, err := c.Complete(context.Background(), messages)
	checkFailure(t, err, "HTTP 401")
	var ae *apperr.Error
	errors.As(err, &ae)
	if ae.Err == nil || !strings.Contains(ae.Err.Error(), "invalid_api_key") {
		t.Errorf("cause %v should keep the provider's error code for the log", ae.Err)
	}

	// a transport error quoting the URL is scrubbed too
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := strings.Replace(dead.URL, "http://", "http://user:"+testKey+"@", 1) + "/?key=" + testKey
	dead.Close()
	c, _ = client(t, deadURL, testKey, time.Second, 2)
	_, err = c.Complete(context.Background(), messages)
	checkFailure(t, err, "refused")
}

func TestChatURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://h:8080", "http://h:8080/v1/chat/completions"},
		{"http://h:8080/", "http://h:8080/v1/chat/completions"},
		{"http://h:8080/v1", "http://h:8080/v1/chat/completions"},
		{"http://h:8080/v1/", "http://h:8080/v1/chat/completions"},
		{"https://h/openai", "https://h/openai/v1/chat/completions"},
		{"https://h/openai/v1//", "https://h/openai/v1/chat/completions"},
		{"https://h/v1/chat/completions", "https://h/v1/chat/completions"},
		{"https://h/?api-version=2024", "https://h/v1/chat/completions?api-version=2024"},
		{" https://h ", "https://h/v1/chat/completions"},
	}
	for _, tt := range tests {
		got, err := aiclient.ChatURL(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("aiclient.ChatURL(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "localhost:8080", "/v1", "ftp://h", "http://", "://x"} {
		if _, err := aiclient.ChatURL(bad); err == nil {
			t.Errorf("aiclient.ChatURL(%q): want error", bad)
		}
	}
}
