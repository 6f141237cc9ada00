package bench

// The load tool's HTTP client: each request timed, retried as LoadConfig
// allows (with its Idempotency-Key), and its failure classified by code.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// bodies are the buffers responses are read into (doKeyed).
var bodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// refs are the ids a write needs.
type refs struct{ project, category, member string }

type client struct {
	cfg   LoadConfig
	http  *http.Client
	refs  refs
	runID string
	// page2 is the GraphQL cursor after the first page (update mix).
	page2 string
	// keys numbers Idempotency-Keys; the counters below feed the Report.
	keys                                                  atomic.Int64
	attempts, timeouts, retries, replays, inProgressCount atomic.Int64
	// shapeChecked counts dashboard answers checked; shapeNotes describe
	// the first failed checks.
	shapeChecked atomic.Int64
	shapeMu      sync.Mutex
	shapeNotes   []string
}

type outcome struct {
	code    string // "" on success
	latency time.Duration
	write   bool
}

// target is a procedure of the update mix's pool. Each belongs to one
// client, so its last acknowledged priority is known.
type target struct {
	shortID  string
	priority string   // the last acknowledged (or, before any, the sampled) priority
	pending  []string // priorities of updates after it never acknowledged
	written  bool
}

// newKey returns a fresh Idempotency-Key for one write, "" without keys.
func (c *client) newKey() string {
	if !c.cfg.IdempotencyKeys {
		return ""
	}
	return fmt.Sprintf("load-%s-%d", c.runID, c.keys.Add(1))
}

// timed runs one request, retrying it as cfg allows, and measures it from
// the first attempt to the last answer.
func (c *client) timed(ctx context.Context, write bool, fn func(context.Context) (string, error)) outcome {
	t := time.Now()
	err := c.retry(ctx, write, fn)
	o := outcome{latency: time.Since(t), write: write}
	if err != nil {
		var ae *apiError
		switch {
		case errors.As(err, &ae):
			o.code = ae.code
		case ctx.Err() != nil:
			o.code = "canceled"
		default:
			o.code = "transport"
		}
	}
	return o
}

// errTimeout is an attempt cut by the client's RequestTimeout.
var errTimeout = &apiError{code: "timeout"}

// retry runs fn, each attempt bounded by RequestTimeout, and runs it again
// (with the same Idempotency-Key, which fn carries) after a client timeout,
// a transport error, a 503 or a 409 in progress, at most Retries times,
// backing off exponentially with jitter. Writes are retried only with keys.
func (c *client) retry(ctx context.Context, write bool, fn func(context.Context) (string, error)) error {
	backoff := c.cfg.RetryBackoff
	for attempt := 0; ; attempt++ {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if c.cfg.RequestTimeout > 0 {
			actx, cancel = context.WithTimeout(ctx, c.cfg.RequestTimeout)
		}
		c.attempts.Add(1)
		_, err := fn(actx)
		if err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
			c.timeouts.Add(1)
			err = errTimeout
		}
		cancel()
		var ae *apiError
		retryable := err != nil && ctx.Err() == nil && (err == errTimeout || !errors.As(err, &ae) ||
			ae.status == http.StatusServiceUnavailable || ae.code == codeInProgress)
		if !retryable || attempt >= c.cfg.Retries || (write && !c.cfg.IdempotencyKeys) {
			return err
		}
		c.retries.Add(1)
		pause := backoff/2 + rand.N(backoff/2+1)
		backoff = min(2*backoff, time.Second)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
	}
}

// codeInProgress is the code the client gives a 409 answered while the
// request's Idempotency-Key is in progress (the server adds Retry-After).
const codeInProgress = "in_progress"

type apiError struct {
	status int
	code   string
}

func (e *apiError) Error() string { return fmt.Sprintf("HTTP %d %s", e.status, e.code) }

// do sends body (JSON, nil for none) and reads a 200's answer into out:
// nil ignores it, a func([]byte) error is called with it (the bytes its
// own only until it returns), a *json.RawMessage gets a copy, anything
// else is decoded into. Any other status is an *apiError of its code.
func (c *client) do(ctx context.Context, method, path string, body any, out any) error {
	return c.doKeyed(ctx, method, path, "", body, out)
}

// doKeyed is do with an Idempotency-Key ("" for none).
func (c *client) doKeyed(ctx context.Context, method, path, key string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.cfg.URL+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// The body is read into a buffer of the pool: a list page is tens of
	// kilobytes, and reading each into a slice of its own (io.ReadAll)
	// made a third of the tool's CPU, with its collections, on the cores
	// it shares with the server it measures.
	buf := bodies.Get().(*bytes.Buffer)
	defer bodies.Put(buf)
	buf.Reset()
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return err
	}
	raw := buf.Bytes()
	if resp.Header.Get("Idempotent-Replayed") == "true" {
		c.replays.Add(1)
	}
	if resp.StatusCode == http.StatusConflict && resp.Header.Get("Retry-After") != "" {
		c.inProgressCount.Add(1)
		return &apiError{status: resp.StatusCode, code: codeInProgress}
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Code string }
		_ = json.Unmarshal(raw, &e)
		if e.Code == "" {
			var g struct {
				Errors []struct {
					Extensions struct{ Code string }
				}
			}
			if json.Unmarshal(raw, &g) == nil && len(g.Errors) > 0 {
				e.Code = g.Errors[0].Extensions.Code
			}
		}
		if e.Code == "" {
			e.Code = "http_" + strconv.Itoa(resp.StatusCode)
		}
		return &apiError{status: resp.StatusCode, code: e.Code}
	}
	switch o := out.(type) {
	case func(raw []byte) error:
		return o(raw) // raw is o's until it returns
	case *json.RawMessage:
		*o = bytes.Clone(raw) // raw's buffer goes back to the pool
		return nil
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

const loadListQuery = `query LoadList($first: Int!) { procedures(first: $first) { totalCount nodes {
  id shortId name priority state content categoryId doerId creatorId position dueAt createdAt updatedAt
  projectId workspaceId captureId displayVideo isFineTunedData
  category { id name } doer { id name email } project { id name } comments(last: 3) { nodes { id text createdAt } } } } }`

func (c *client) graphql(ctx context.Context, query string, vars map[string]any, out any) error {
	return c.graphqlKeyed(ctx, "", query, vars, out)
}

// graphqlKeyed is graphql with an Idempotency-Key ("" for none).
func (c *client) graphqlKeyed(ctx context.Context, key, query string, vars map[string]any, out any) error {
	if out == nil {
		// The list's body is large: a client measuring the server should
		// not spend its CPU parsing it. gqlgen writes "errors" first when
		// there are any, so a prefix check finds them.
		return c.doKeyed(ctx, http.MethodPost, "/graphql", key, map[string]any{"query": query, "variables": vars}, func(raw []byte) error {
			if !bytes.HasPrefix(raw, []byte(`{"errors"`)) {
				return nil
			}
			var failed struct {
				Errors []struct {
					Extensions struct{ Code string }
				}
			}
			if err := json.Unmarshal(raw, &failed); err != nil || len(failed.Errors) == 0 {
				return &apiError{status: 200, code: "malformed_response"}
			}
			return &apiError{status: 200, code: failed.Errors[0].Extensions.Code}
		})
	}
	var resp struct {
		Data   json.RawMessage
		Errors []struct {
			Extensions struct{ Code string }
		}
	}
	if err := c.doKeyed(ctx, http.MethodPost, "/graphql", key, map[string]any{"query": query, "variables": vars}, &resp); err != nil {
		return err
	}
	if len(resp.Errors) > 0 {
		return &apiError{status: 200, code: resp.Errors[0].Extensions.Code}
	}
	if out != nil {
		return json.Unmarshal(resp.Data, out)
	}
	return nil
}
