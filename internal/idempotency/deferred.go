package idempotency

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/database"
)

// Deferred is a keyed GraphQL execution whose claim waits for the executor:
// only once the operation is known to be a mutation, has passed every
// check and has been charged to the rate limit is its key claimed
// (ClaimDeferred), so that a request refused before that touches no table
// and leaves its key free. It is the transport-neutral entry point: HTTP's
// middleware uses it, and so can any transport that carries mutations
// (a WebSocket's), as follows:
//
//	ctx, d := store.Defer(ctx, key, idempotency.Fingerprint(v, method, target, payload))
//	// run the operation with ctx: the executor calls ClaimDeferred
//	switch replay, err := d.Answer(); {
//	case err != nil:    // answer err (409 conflict, 400 for a malformed key, 503)
//	case replay != nil: // answer replay.Body, a replay
//	default:            // answer what ran, then:
//		d.Finish(ctx, idempotency.Response{Status: 200, ContentType: "application/json", Body: body})
//	}
//
// When the claim finds a replay or a refusal, the operation does not run
// and its output is to be dropped.
type Deferred struct {
	s           *Store
	key, fp     string
	keyErr      error
	mu          sync.Mutex
	claim       *Claim
	replay      *Response
	err         error
	secret      bool
	claimedOnce bool
}

// errAnswered stops an execution whose key's claim found what to answer
// instead (Deferred.Answer).
var errAnswered = errors.New("idempotency: answered from the key's record")

// Defer returns ctx carrying a deferred claim of key for the request of
// fingerprint (see Deferred), in the workspace of ctx's viewer. A key that
// is not 1 to MaxKeyLength printable ASCII characters refuses a mutation
// with validation_failed naming the header (an operation that writes
// nothing ignores it).
func (s *Store) Defer(ctx context.Context, key, fingerprint string) (context.Context, *Deferred) {
	key, err := checkKey([]string{key})
	return s.deferClaim(ctx, key, fingerprint, err)
}

func (s *Store) deferClaim(ctx context.Context, key, fingerprint string, keyErr error) (context.Context, *Deferred) {
	d := &Deferred{s: s, key: key, fp: fingerprint, keyErr: keyErr}
	return database.WithTxStep(ctx, d), d
}

// ClaimDeferred claims the key deferred in ctx (Store.Defer), if any, for
// a mutation about to run: call it once the operation has passed every
// check and has been charged, before it runs anything (an operation that
// writes nothing claims no key). holdsSecret reports whether the
// mutation's answer carries a bearer secret, which is never kept; it is
// asked only when a key is claimed. It returns nil when the operation may
// run; otherwise the operation must
// not run, and its transport answers Deferred.Answer instead: the recorded
// response, or the claim's refusal (409 conflict, or validation_failed for
// a malformed key) or failure. A second call for the same context is
// answered as the first.
func ClaimDeferred(ctx context.Context, holdsSecret func() bool) error {
	d, _ := database.TxStepOf(ctx).(*Deferred)
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.claimedOnce {
		if d.claim != nil {
			return nil
		}
		return errAnswered
	}
	d.claimedOnce = true
	if d.keyErr != nil {
		d.err = d.keyErr
		return errAnswered
	}
	d.secret = holdsSecret()
	// The claim is not cut short by the client leaving (see Store.serve).
	claimCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	d.claim, d.replay, d.err = d.s.Claim(claimCtx, d.key, d.fp)
	if d.claim == nil {
		return errAnswered
	}
	return nil
}

// AnsweredError is the error an executor reports for an operation
// ClaimDeferred stopped: a conflict, never shown (the transport answers
// Deferred.Answer), and never logged as a failure.
func AnsweredError() error {
	return &apperr.Error{Code: apperr.Conflict, Message: "answered from the " + Header + "'s record", Err: errAnswered}
}

// Answer is what the transport answers in place of the execution's own
// output: the recorded response to replay, or the claim's refusal or
// failure. Both are nil when the execution's output stands (the key was
// claimed, or never needed: not a mutation, or refused before its claim).
func (d *Deferred) Answer() (*Response, error) { return d.answer() }

func (d *Deferred) answer() (*Response, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.replay, d.err
}

// BeforeCommit is the claim's step in the write transactions of the
// execution (Claim.BeforeCommit), once claimed; nothing before (a
// mutation's writes follow its claim, ClaimDeferred).
func (d *Deferred) BeforeCommit(ctx context.Context, tx *ent.Tx) error {
	if c := d.claimed(); c != nil {
		return c.BeforeCommit(ctx, tx)
	}
	return nil
}

// claimed returns the claim made, nil before (or without) one.
func (d *Deferred) claimed() *Claim {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.claim
}

// RunBy returns when a claimed execution must be over, so that its outcome
// is recorded before another request may take its key over (the claim's
// deadline less a margin, as the HTTP middleware bounds its handler); false
// when nothing was claimed. A transport runs a claimed execution detached
// from its client until then: a client that leaves finds the outcome
// recorded when it retries.
func (d *Deferred) RunBy() (time.Time, bool) {
	c := d.claimed()
	if c == nil {
		return time.Time{}, false
	}
	return c.Deadline().Add(-d.s.handlerMargin()), true
}

// Finish records resp, the claimed execution's answer, for replay or
// releases the key, as an HTTP response is (see Middleware); without a
// claim it does nothing. Call it once the answer has been sent.
func (d *Deferred) Finish(ctx context.Context, resp Response) {
	d.finish(ctx, resp, len(resp.Body) > d.s.maxBody, false)
}

func (d *Deferred) finish(ctx context.Context, resp Response, overflow, panicked bool) {
	d.mu.Lock()
	claim, secret := d.claim, d.secret
	d.mu.Unlock()
	if claim == nil {
		return
	}
	if overflow {
		resp.Body = nil
	}
	d.s.finish(ctx, claim, resp, overflow, true, secret, panicked)
}
