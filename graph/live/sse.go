package live

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/procsvc/procsvc/graph/gqlrequest"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/middleware"
)

// sse is the Server-Sent Events transport (GraphQL over SSE, "distinct
// connections" mode): a POST with Accept: text/event-stream. Unlike
// gqlgen's, it answers a request refused before its stream starts (the
// document, the filter, the subscription cap) with an ordinary error body
// and status; it writes from the request's goroutine alone, each write
// bounded by Options.WriteTimeout, and starts no goroutine, so nothing
// of the stream outlives its handler.
type sse struct{ transport }

var _ graphql.Transport = sse{}

func (t sse) Supports(r *http.Request) bool { return isStreamRequest(r) }

func (t sse) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	l := t.live
	start := graphql.Now()
	ctx := markStream(r.Context())
	// The transport guard has read, decoded and checked the body: the
	// stream runs that request, decoded once for every transport
	// (gqlrequest), never the body decoded again by other rules.
	oc, errs, err := gqlrequest.Operation(ctx, r, middleware.MaxBodyBytes, exec, start)
	if err != nil {
		writeErrors(w, exec.DispatchError(ctx, gqlrequest.Refusal(err)))
		return
	}
	if errs != nil {
		writeErrors(w, exec.DispatchError(graphql.WithOperationContext(ctx, oc), errs))
		return
	}
	ctx = graphql.WithOperationContext(ctx, oc)
	if operationKind(oc) != ast.Subscription {
		t.once(w, ctx, exec, oc)
		return
	}
	if !t.connect(w, r) {
		return
	}
	defer l.dismiss()
	s, errs := l.open(ctx, exec, oc, r.Header.Get("Authorization"))
	if errs != nil {
		writeErrors(w, &graphql.Response{Errors: errs})
		return
	}
	defer s.close()

	// The stream outlives the server's read timeout, meant for ordinary
	// requests: past it, the server would cancel the request.
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", EventStreamType)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// The status is written and recorded by every wrapper (the access log,
	// the rate limit): the events go to the connection's own writer, not
	// through each wrapper's Write and Flush again.
	inner := innermost(w)
	out := &sseWriter{w: inner, rc: http.NewResponseController(inner), timeout: l.opts.WriteTimeout}
	if out.write(&rendered{frame: []byte(":\n\n")}) != nil {
		return
	}
	ping := func() error { return out.write(&rendered{frame: []byte(": ping\n\n")}) }
	end := func(err error) {
		_ = out.write(&rendered{frame: sseEvent(&graphql.Response{Errors: gqlerror.List{l.present(ctx, err)}})}, &rendered{frame: eventComplete})
	}
	var lastWrite time.Time
	pace := time.NewTimer(time.Hour)
	pace.Stop()
	defer pace.Stop()
	for {
		ev, err := s.next(ctx, l.opts.KeepAlive, ping)
		switch {
		case err == errIdle:
			return
		case err != nil:
			end(err)
			return
		case ev == nil:
			return // the client left
		}
		// A stream writes at most every FlushInterval: an event that comes
		// sooner waits for the rest of it, and every event ready by then
		// goes out with it, in one write (a write is a system call, and on
		// a busy server most of a delivery's cost).
		if wait := time.Until(lastWrite.Add(l.opts.FlushInterval)); wait > 0 {
			pace.Reset(wait)
			select {
			case <-pace.C:
			case <-ctx.Done():
				ev.done()
				return
			}
		}
		// A write takes at most maxFramesPerWrite events and QueueBytes of
		// them (the first whatever its size): what a stream holds while
		// its client reads it is a subscriber's lag, bounded as its queue
		// is, replayed events included.
		batch := append(batchPool.get(), ev)
		size := ev.size()
		for len(batch) < maxFramesPerWrite && size < l.opts.QueueBytes {
			more, ok, err := s.ready(ctx)
			if err != nil {
				_ = out.write(batch...)
				batchPool.put(batch)
				end(err)
				return
			}
			if !ok {
				break
			}
			batch, size = append(batch, more), size+more.size()
		}
		err = out.write(batch...)
		batchPool.put(batch)
		if err != nil {
			return
		}
		lastWrite = time.Now()
	}
}

// maxFramesPerWrite bounds the events a stream sends in one write.
const maxFramesPerWrite = 64

// batchPool holds the slices of events streams write at once.
var batchPool = slicePool{sync.Pool{New: func() any { b := make([]*rendered, 0, maxFramesPerWrite); return &b }}}

type slicePool struct{ sync.Pool }

func (p *slicePool) get() []*rendered { return (*p.Get().(*[]*rendered))[:0] }

// put gives b back, and each event in it to its holders (done): it has
// been written, or never will be.
func (p *slicePool) put(b []*rendered) {
	for i, r := range b {
		r.done()
		b[i] = nil
	}
	p.Put(&b)
}

// once answers a query or mutation that asked for an event stream as a
// stream of one event.
func (t sse) once(w http.ResponseWriter, ctx context.Context, exec graphql.GraphExecutor, oc *graphql.OperationContext) {
	responses, ctx := exec.DispatchOperation(ctx, oc)
	resp := responses(ctx)
	h := w.Header()
	h.Set("Content-Type", EventStreamType)
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if resp != nil {
		_, _ = w.Write(sseEvent(resp))
	}
	_, _ = w.Write(eventComplete)
}

// innermost returns the ResponseWriter w wraps, through every Unwrap.
func innermost(w http.ResponseWriter) http.ResponseWriter {
	for {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}

// sseWriter writes a stream's frames, each write flushed to the client
// within timeout or not at all (the write then fails, and the stream ends).
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	// deadline is the connection's write deadline, moved forward only once
	// less than half the timeout is left: each write has at least half the
	// timeout, and most writes set no deadline (a deadline is a timer).
	deadline time.Time
}

func (s *sseWriter) write(events ...*rendered) error {
	// A reader that takes nothing for the timeout is cut, one that reads
	// slowly is not.
	if now := time.Now(); s.deadline.Sub(now) < s.timeout/2 {
		s.deadline = now.Add(s.timeout)
		if err := s.rc.SetWriteDeadline(s.deadline); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
	}
	for _, r := range events {
		if _, err := s.w.Write(r.frame); err != nil {
			return err
		}
	}
	return s.rc.Flush()
}

func sseEvent(resp *graphql.Response) []byte {
	r, err := newRendered(resp)
	if err != nil {
		return slices.Concat(eventNext, []byte(`{"errors":[{"message":"internal error","extensions":{"code":"internal"}}]}`), eventEnd)
	}
	return r.frame
}

// writeErrors answers a request refused before it executed: its errors
// (already presented, with their codes) and the status of the first one's
// code, as POST answers it.
func writeErrors(w http.ResponseWriter, resp *graphql.Response) {
	code := apperr.ValidationFailed
	if len(resp.Errors) > 0 {
		if c, ok := resp.Errors[0].Extensions["code"].(string); ok && apperr.Known(apperr.Code(c)) {
			code = apperr.Code(c)
		}
	}
	middleware.WriteErrorJSON(w, code, map[string]any{"errors": resp.Errors})
}
