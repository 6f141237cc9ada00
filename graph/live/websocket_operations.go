package live

// The operations a WebSocket carries (websocket.go is the connection): each
// subscribe message runs on a goroutine of its own, re-authenticated,
// charged and bounded as an HTTP request is, its id free again once it ends.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/procsvc/procsvc/graph/gqlrequest"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/idempotency"
	"github.com/procsvc/procsvc/internal/middleware"
	"github.com/procsvc/procsvc/internal/textclip"
	"github.com/procsvc/procsvc/internal/viewer"
)

// subscribe starts the operation of a subscribe (graphql-ws: start)
// message.
func (c *socket) subscribe(m wsMessage) {
	if m.ID == "" || len(m.ID) > maxOperationID {
		c.shut(CloseBadMessage, fmt.Sprintf("Invalid message: an operation id is 1 to %d bytes", maxOperationID))
		return
	}
	params, err := operationParams(m.Payload)
	if err != nil {
		c.shut(CloseBadMessage, "Invalid message: "+err.Error())
		return
	}
	c.mu.Lock()
	if _, dup := c.ops[m.ID]; dup {
		c.mu.Unlock()
		c.shut(CloseDuplicateID, "Subscriber for "+textclip.Bytes(m.ID, 80)+" already exists")
		return
	}
	if len(c.ops) >= c.live.opts.MaxPerToken+c.live.opts.OperationsPerSocket {
		c.mu.Unlock()
		c.send(c.errorFrame(m.ID, gqlerror.List{c.live.present(c.ctx, apperr.New(apperr.RateLimited, "this WebSocket runs as many operations as it may: complete one first"))}))
		return
	}
	ctx, cancel := context.WithCancel(c.base)
	op := &operation{cancel: cancel}
	c.ops[m.ID] = op
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer cancel()
		c.run(ctx, m.ID, op, params)
	}()
}

// operationParams decodes a subscribe message's payload.
func operationParams(payload json.RawMessage) (*graphql.RawParams, error) {
	// Decoded and checked as a POST's body is, by the one decoder of every
	// transport (numbers kept as sent).
	req, err := gqlrequest.Decode(payload)
	if err != nil {
		return nil, errors.New(apperr.From(err).Message)
	}
	return req.Params(), nil
}

// stop ends the client's operation id (graphql-transport-ws: complete;
// graphql-ws: stop). The id is free again at once.
func (c *socket) stop(id string) {
	c.mu.Lock()
	op := c.ops[id]
	delete(c.ops, id)
	c.mu.Unlock()
	if op != nil {
		op.cancel()
	}
}

// finish frees op's id, unless the client freed it already (and may have
// reused it), and sends msgs if it still runs.
func (c *socket) finish(id string, op *operation, msgs ...message) {
	c.mu.Lock()
	mine := c.ops[id] == op
	if mine {
		delete(c.ops, id)
	}
	c.mu.Unlock()
	if !mine {
		return
	}
	for _, m := range msgs {
		c.send(m)
	}
}

// run runs one operation: re-authenticated as every HTTP request is (a
// credential no longer valid closes the socket, 4403), charged to the
// connection's rate limit, then streamed (a subscription) or answered
// within the request timeout (a query or mutation).
func (c *socket) run(ctx context.Context, id string, op *operation, params *graphql.RawParams) {
	l := c.live
	defer func() {
		if p := recover(); p != nil {
			l.opts.Log.ErrorContext(ctx, "panic in a WebSocket operation", "request_id", middleware.RequestID(ctx), "panic", fmt.Sprint(p))
			c.finish(id, op, c.errorFrame(id, gqlerror.List{l.present(ctx, apperr.New(apperr.Internal, "internal error"))}))
		}
	}()
	v, err := l.reauthenticate(ctx, c.credential, c.viewer, false)
	if err != nil {
		c.shut(CloseForbidden, forbidden(err))
		return
	}
	ctx = l.opts.Loaders(viewer.NewContext(ctx, v))
	params.Headers = c.req.Header
	now := graphql.Now()
	params.ReadTime = graphql.TraceTiming{Start: now, End: now}
	keyed := c.keyed(ctx, v, params)
	if keyed != nil {
		ctx = keyed.ctx
		// A claimed key whose operation then does not run to its answer
		// (refused, or a panic) is freed, so that the retry runs.
		defer keyed.abandon(ctx)
	}
	oc, errs := c.exec.CreateOperationContext(ctx, params)
	if keyed != nil {
		// The key's claim (made once the operation passed every check and
		// was charged) may have found what to answer instead.
		switch replay, err := keyed.d.Answer(); {
		case err != nil:
			c.finish(id, op, c.errorFrame(id, gqlerror.List{l.present(ctx, err)}))
			return
		case replay != nil:
			c.finish(id, op, message{raw: frame(c.nextType(), id, replay.Body)}, message{raw: frame("complete", id, nil)})
			return
		}
	}
	if errs != nil {
		c.finish(id, op, c.errorFrame(id, c.exec.DispatchError(graphql.WithOperationContext(ctx, oc), errs).Errors))
		return
	}
	ctx = graphql.WithOperationContext(ctx, oc)
	if operationKind(oc) == ast.Subscription {
		c.stream(ctx, id, op, oc)
		return
	}
	if !c.startRequest() {
		c.finish(id, op, c.errorFrame(id, gqlerror.List{l.present(ctx, apperr.New(apperr.RateLimited, "this WebSocket runs %d queries and mutations at once, the most allowed: wait for one to complete", l.opts.OperationsPerSocket))}))
		return
	}
	defer c.endRequest()
	var claimed bool
	if keyed != nil {
		var runBy time.Time
		if runBy, claimed = keyed.d.RunBy(); claimed {
			// A keyed write runs to its end even if its client leaves, so
			// that a retry finds its outcome recorded.
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(context.WithoutCancel(ctx), runBy)
			defer cancel()
		}
	}
	if !claimed && l.opts.RequestTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.opts.RequestTimeout)
		defer cancel()
	}
	responses, ctx := c.exec.DispatchOperation(ctx, oc)
	var answer []byte
	for resp := responses(ctx); resp != nil; resp = responses(ctx) {
		b := mustMarshal(resp)
		if answer == nil {
			answer = b
		}
		if !c.send(message{raw: frame(c.nextType(), id, b)}) {
			break
		}
	}
	if claimed {
		keyed.finish(ctx, idempotency.Response{Status: http.StatusOK, ContentType: "application/json", Body: answer})
	}
	c.finish(id, op, message{raw: frame("complete", id, nil)})
}

// keyedOperation is an operation sent with an idempotency key.
type keyedOperation struct {
	ctx      context.Context
	d        *idempotency.Deferred
	finished bool
}

// finish records the answer of the claimed operation.
func (k *keyedOperation) finish(ctx context.Context, resp idempotency.Response) {
	k.finished = true
	k.d.Finish(ctx, resp)
}

// abandon frees the key of a claimed operation that did not finish: as a
// failed request's (5xx), which did not write (a write commits only as its
// answer is made), so its retry runs.
func (k *keyedOperation) abandon(ctx context.Context) {
	if _, claimed := k.d.RunBy(); claimed && !k.finished {
		k.finish(context.WithoutCancel(ctx), idempotency.Response{Status: http.StatusInternalServerError})
	}
}

// keyed defers the claim of an operation's idempotency key, sent as
// extensions.idempotencyKey (a WebSocket message has no headers): a
// mutation runs once per key, as with the Idempotency-Key header over
// HTTP, and its retries (over either transport, with the same payload)
// get its first answer. Nil without a key or a store.
func (c *socket) keyed(ctx context.Context, v *viewer.Viewer, params *graphql.RawParams) *keyedOperation {
	raw, ok := params.Extensions[idempotencyKeyExtension]
	store := c.live.opts.Idempotency
	if !ok || store == nil {
		return nil
	}
	key, _ := raw.(string)
	// The same request as an HTTP POST of the same query, operation name
	// and variables: a retry over either transport replays.
	extensions := maps.Clone(params.Extensions)
	delete(extensions, idempotencyKeyExtension)
	req := gqlrequest.Request{Query: params.Query, OperationName: params.OperationName, Variables: params.Variables, Extensions: extensions}
	// The upgrade request's path is the endpoint's, which an HTTP POST's
	// fingerprint names.
	kctx, d := store.Defer(ctx, key, idempotency.Fingerprint(v, http.MethodPost, c.req.URL.Path, req.Payload()))
	return &keyedOperation{ctx: kctx, d: d}
}

// idempotencyKeyExtension names a WebSocket operation's idempotency key in
// its payload's extensions.
const idempotencyKeyExtension = "idempotencyKey"

func (c *socket) startRequest() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running >= c.live.opts.OperationsPerSocket {
		return false
	}
	c.running++
	return true
}

func (c *socket) endRequest() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running--
}

// stream runs a subscription until it, its client or the socket ends it.
func (c *socket) stream(ctx context.Context, id string, op *operation, oc *graphql.OperationContext) {
	l := c.live
	s, errs := l.open(ctx, c.exec, oc, c.credential)
	if errs != nil {
		if refusal := lostAccessErrors(errs); refusal != nil {
			c.shut(CloseForbidden, forbidden(refusal))
			return
		}
		c.finish(id, op, c.errorFrame(id, errs))
		return
	}
	defer s.close()
	quoted := mustMarshal(id)
	next := c.nextType()
	var lastWrite time.Time
	pace := time.NewTimer(time.Hour)
	pace.Stop()
	defer pace.Stop()
	for {
		ev, err := s.next(ctx, 0, nil)
		if ev == nil {
			c.endStream(ctx, id, op, err)
			return
		}
		// As a Server-Sent Events stream (sse.go): a subscription writes at
		// most every FlushInterval, an event that comes sooner waiting for
		// the rest of it, and every event ready by then goes out with it
		// in one write. Its goroutine sleeps meanwhile: the events handed
		// to it in the interval wake it once, not once each.
		if wait := time.Until(lastWrite.Add(c.live.opts.FlushInterval)); wait > 0 {
			pace.Reset(wait)
			select {
			case <-pace.C:
			case <-ctx.Done():
				ev.done()
				c.finish(id, op)
				return
			}
		}
		// A write takes at most maxFramesPerWrite events and QueueBytes of
		// them (the first whatever its size), as a stream's: what a
		// subscription holds while its client reads is its lag, bounded
		// as its queue is.
		batch := append(batchPool.get(), ev)
		size := ev.size()
		for len(batch) < maxFramesPerWrite && size < c.live.opts.QueueBytes {
			more, ok, rerr := s.ready(ctx)
			if rerr != nil || !ok {
				err = rerr
				break
			}
			batch, size = append(batch, more), size+more.size()
		}
		sent := c.sendNext(quoted, next, batch)
		batchPool.put(batch)
		switch {
		case !sent:
			return
		case err != nil:
			// The events before the error are sent; then it ends the
			// subscription, as from next.
			c.endStream(ctx, id, op, err)
			return
		}
		lastWrite = time.Now()
	}
}

// endStream ends the subscription id as err (from its stream's next or
// ready) says: nil when the client completed it or the socket closes, the
// loss of access (4403), the server shutting down (1001), or an error for
// its client.
func (c *socket) endStream(ctx context.Context, id string, op *operation, err error) {
	switch {
	case err == nil:
		c.finish(id, op) // completed by the client, or the socket closes
	case lostAccess(err):
		c.shut(CloseForbidden, forbidden(err))
	case err == errClosing:
		c.shut(CloseGoingAway, "server shutting down")
	default:
		c.finish(id, op, c.errorFrame(id, gqlerror.List{c.live.present(ctx, err)}))
	}
}

// lostAccessErrors returns the refusal of a credential among errs, if any,
// with its code and reason.
func lostAccessErrors(errs gqlerror.List) *apperr.Error {
	for _, e := range errs {
		code, _ := e.Extensions["code"].(string)
		if code == string(apperr.Disconnected) || code == string(apperr.Unauthenticated) {
			reason, _ := e.Extensions["reason"].(string)
			return &apperr.Error{Code: apperr.Code(code), Message: e.Message, Reason: apperr.Reason(reason)}
		}
	}
	return nil
}

// errorFrame is the error message of operation id.
func (c *socket) errorFrame(id string, errs gqlerror.List) message {
	return message{raw: frame("error", id, mustMarshal(errs))}
}
