package middleware

import (
	"context"
	"time"
)

// deadlineBaseKey holds the context a request had before WithDeadline gave
// it its deadline.
type deadlineBaseKey struct{}

// WithDeadline returns a copy of ctx that ends d from now, as every
// request's context does (the server's request timeout), from which
// WithoutDeadline can lift that deadline again.
func WithDeadline(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	timed, cancel := context.WithTimeout(ctx, d)
	return context.WithValue(timed, deadlineBaseKey{}, ctx), cancel
}

// WithoutDeadline returns ctx, with every value it holds, but without the
// deadline WithDeadline gave it: it ends when the request's own context
// does (the client left, the server shut down) or when cancel is called.
// A handler that learns only after its first checks that it serves a
// long-lived stream (a subscription) uses it, since a stream is meant to
// outlive the request timeout. Without WithDeadline it is ctx with a
// cancel of its own.
func WithoutDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	base, ok := ctx.Value(deadlineBaseKey{}).(context.Context)
	if !ok {
		return context.WithCancel(ctx)
	}
	// A cancelCtx of its own (rather than lifted itself) keeps
	// context.Cause and further derived contexts off the deadline's
	// cancelCtx, which lifted would otherwise expose through Value.
	return context.WithCancel(lifted{Context: ctx, base: base})
}

// lifted is the values of Context with the deadline and cancellation of
// base.
type lifted struct {
	context.Context
	base context.Context
}

func (c lifted) Deadline() (time.Time, bool) { return c.base.Deadline() }
func (c lifted) Done() <-chan struct{}       { return c.base.Done() }
func (c lifted) Err() error                  { return c.base.Err() }
