package ratelimit

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/middleware"
	"github.com/procsvc/procsvc/internal/viewer"
)

// The headers of every limited response (draft-ietf-httpapi-ratelimit-headers-06;
// docs/api.md, Rate limits):
//   - RateLimit-Limit: the bucket's size (the burst), the most a token may
//     spend at once (200 by default);
//   - RateLimit-Remaining: the whole tokens left after this request;
//   - RateLimit-Reset: the seconds until the bucket is full again;
//   - RateLimit-Policy: "<burst>;w=<seconds>", the bucket's size and the
//     seconds an empty bucket takes to refill ("200;w=4" by default: 200
//     per 4 s is the refill rate of 50 a second), so that a client learns
//     both numbers. The window is rounded up, so that a client spending at
//     most <burst> in any window is never refused.
//
// A refusal adds Retry-After: the seconds until the bucket holds what the
// request costs.
const (
	HeaderLimit     = "RateLimit-Limit"
	HeaderRemaining = "RateLimit-Remaining"
	HeaderReset     = "RateLimit-Reset"
	HeaderPolicy    = "RateLimit-Policy"
	HeaderRetry     = "Retry-After"
)

// seconds rounds d up to whole seconds.
func seconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }

func (d Decision) setHeaders(h http.Header) {
	h.Set(HeaderLimit, strconv.Itoa(d.Limit))
	h.Set(HeaderRemaining, strconv.Itoa(d.Remaining))
	h.Set(HeaderReset, strconv.FormatInt(seconds(d.Reset), 10))
	h.Set(HeaderPolicy, strconv.Itoa(d.Limit)+";w="+strconv.FormatInt(max(seconds(d.Window), 1), 10))
	if !d.Allowed {
		h.Set(HeaderRetry, strconv.FormatInt(max(seconds(d.RetryAfter), 1), 10))
	}
}

// Err is the refusal of d: rate_limited, answered 429.
func (d Decision) Err() error {
	return apperr.New(apperr.RateLimited, "this token is over its rate limit; retry in %d s", max(seconds(d.RetryAfter), 1))
}

// PerRequest returns middleware that charges each authenticated request one
// token of its token's bucket before next runs, sets the RateLimit headers,
// and answers a refusal through writeErr (next does not run). It must run
// after authentication. A nil Limiter's middleware is next itself.
func (l *Limiter) PerRequest(writeErr middleware.ErrorWriter) func(http.Handler) http.Handler {
	return l.limited(func(w http.ResponseWriter, r *http.Request, next http.Handler, b *bucket) {
		d := b.take(l.now(), 1)
		d.setHeaders(w.Header())
		if !d.Allowed {
			writeErr(w, r, d.Err())
			return
		}
		next.ServeHTTP(w, r)
	})
}

// PerOperation returns middleware for a handler that learns what a request
// costs only once it has parsed it (GraphQL): the handler calls Spend with
// the cost before it executes anything. A request whose response starts
// without a Spend (refused before its cost was known, or replayed from a
// cache) is charged one token then. Either way the RateLimit headers are
// set when the response starts, and a refusal is answered through writeErr
// in place of whatever the handler writes. It must run after
// authentication. A nil Limiter's middleware is next itself.
func (l *Limiter) PerOperation(writeErr middleware.ErrorWriter) func(http.Handler) http.Handler {
	return l.limited(func(w http.ResponseWriter, r *http.Request, next http.Handler, b *bucket) {
		c := &charge{now: l.now, b: b}
		before := make(map[string]bool, len(w.Header()))
		for k := range w.Header() {
			before[k] = true
		}
		cw := &chargedWriter{ResponseWriter: w, r: r, c: c, writeErr: writeErr, before: before}
		next.ServeHTTP(cw, r.WithContext(context.WithValue(r.Context(), chargeKey{}, c)))
		cw.begin()
	})
}

// limited returns middleware that hands the requests of a limited token to
// serve with the token's bucket, and any other request (anonymous, or of a
// workspace without limit) to next. A nil Limiter's middleware is next
// itself.
func (l *Limiter) limited(serve func(w http.ResponseWriter, r *http.Request, next http.Handler, b *bucket)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if l == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if b := l.viewerBucket(viewer.FromContext(r.Context())); b != nil {
				serve(w, r, next, b)
			} else {
				next.ServeHTTP(w, r)
			}
		})
	}
}

// viewerBucket is the bucket of v's token, or nil when v is nil or its
// workspace's tokens are not limited.
func (l *Limiter) viewerBucket(v *viewer.Viewer) *bucket {
	if v == nil {
		return nil
	}
	return l.bucket(v.Credential(), v.WorkspaceID)
}

type chargeKey struct{}

// charge is one request's spending: once, by Spend or when the response
// starts.
type charge struct {
	now func() time.Time
	b   *bucket

	mu   sync.Mutex
	done bool
	d    Decision
}

func (c *charge) spend(n int) Decision {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.done {
		c.d, c.done = c.b.take(c.now(), n), true
	}
	return c.d
}

// Spend charges the request of ctx n tokens of its token's bucket (at least
// 1, at most the bucket's size), under PerOperation; elsewhere, or when the
// request's workspace is not limited, it does nothing. A request is charged
// once: later calls return the first one's answer. The error is
// rate_limited when the bucket lacks the tokens; the caller must then stop
// (the middleware answers the refusal). Under Connection every call is
// charged: each is another operation on the connection.
func Spend(ctx context.Context, n int) error {
	if s, _ := ctx.Value(streamKey{}).(*stream); s != nil {
		if d := s.b.take(s.now(), n); !d.Allowed {
			return d.Err()
		}
		return nil
	}
	c, _ := ctx.Value(chargeKey{}).(*charge)
	if c == nil {
		return nil
	}
	if d := c.spend(n); !d.Allowed {
		return d.Err()
	}
	return nil
}

// chargedWriter charges its request when the response starts and, on a
// refusal, answers it through writeErr, dropping what the handler writes.
type chargedWriter struct {
	http.ResponseWriter
	r        *http.Request
	c        *charge
	writeErr middleware.ErrorWriter
	// before holds the header names set before the handler ran: a refusal
	// keeps those (request id, security headers) and drops the handler's.
	before           map[string]bool
	started, refused bool
}

func (w *chargedWriter) begin() {
	if w.started {
		return
	}
	w.started = true
	d := w.c.spend(1)
	h := w.ResponseWriter.Header()
	if !d.Allowed {
		w.refused = true
		for k := range h {
			if !w.before[k] {
				delete(h, k)
			}
		}
	}
	d.setHeaders(h)
	if w.refused {
		w.writeErr(w.ResponseWriter, w.r, d.Err())
	}
}

func (w *chargedWriter) WriteHeader(code int) {
	w.begin()
	if !w.refused {
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *chargedWriter) Write(b []byte) (int, error) {
	w.begin()
	if w.refused {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Flush starts the response (charging it) before flushing.
func (w *chargedWriter) Flush() {
	w.begin()
	if !w.refused {
		// Through the whole chain of wrappers (Unwrap), not just the
		// next one: Server-Sent Events must reach the client.
		_ = http.NewResponseController(w.ResponseWriter).Flush()
	}
}

func (w *chargedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// streamKey marks the context of a long-lived connection (a WebSocket):
// each operation it carries is charged on its own.
type streamKey struct{}

// stream is a long-lived connection's token bucket.
type stream struct {
	now func() time.Time
	b   *bucket
}

// Connection charges the opening of a long-lived connection of v's token
// (a WebSocket carrying subscriptions and operations) one token, and
// returns ctx under which Spend charges every call in full: one connection
// carries many operations, each of which pays its cost as an HTTP request
// would. Errors: rate_limited (the connection must be refused). A nil
// Limiter, or a workspace without limit, charges nothing.
func (l *Limiter) Connection(ctx context.Context, v *viewer.Viewer) (context.Context, error) {
	b := l.viewerBucket(v)
	if b == nil {
		return ctx, nil
	}
	if d := b.take(l.now(), 1); !d.Allowed {
		return ctx, d.Err()
	}
	return context.WithValue(ctx, streamKey{}, &stream{now: l.now, b: b}), nil
}

// Pace spends n tokens of v's token's bucket (as take counts them: at
// least 1, at most the bucket's size), waiting until the bucket holds them
// rather than refusing: work a long-lived connection asks for on its own
// (the events a resumed subscription replays) goes at the token's rate.
// It returns ctx's error if ctx ends first, nothing spent. A nil Limiter,
// or a workspace without limit, charges nothing.
func (l *Limiter) Pace(ctx context.Context, v *viewer.Viewer, n int) error {
	b := l.viewerBucket(v)
	if b == nil {
		return ctx.Err()
	}
	for {
		d := b.take(l.now(), n)
		if d.Allowed {
			return nil
		}
		wait := time.NewTimer(d.RetryAfter)
		select {
		case <-ctx.Done():
			wait.Stop()
			return ctx.Err()
		case <-wait.C:
		}
	}
}
