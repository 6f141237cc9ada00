package idempotency

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/middleware"
	"github.com/procsvc/procsvc/internal/viewer"
)

// The headers of docs/api.md's "Idempotency-Key".
const (
	// Header carries the client's key.
	Header = "Idempotency-Key"
	// ReplayedHeader is set to "true" on a replayed response.
	ReplayedHeader = "Idempotent-Replayed"
	// MaxKeyLength bounds a key, in characters (printable ASCII).
	MaxKeyLength = 255
)

// MaxStoredBody bounds a recorded response body, in bytes (1 MiB). A larger
// response is answered in full but not kept: its key is completed with a
// marker, and a retry is answered 409 conflict (see notKept) rather than
// running the write again. The recorder stops buffering past it. It is the
// size of the largest single record a write can answer (a procedure's
// 200 000-character content, up to 800 KB, escaped): only a selection
// repeating large fields goes over it. What all of a workspace's keys keep
// is bounded by its budget (Options.WorkspaceBytes).
const MaxStoredBody = 1 << 20

// MaxStoredRefusal bounds the body of a refusal that is kept for replay (4
// KiB): a 4xx answer, or a GraphQL answer in which every root field failed
// before writing. Refusals are error bodies of a few hundred bytes; one
// larger is not kept, and its key is freed, since a refusal wrote nothing
// and running its retry is safe.
const MaxStoredRefusal = 4 << 10

// handlerMargin is the share of the lock timeout by which a keyed request's
// handler must be done before its claim may be taken over (10%, at most
// maxHandlerMargin): the outcome is recorded before another request can
// take the key over and run the write again.
const (
	handlerMargin    = 10
	maxHandlerMargin = 5 * time.Second
)

// recordTimeout bounds recording an outcome, which runs even when the
// request's own context has ended.
const recordTimeout = 5 * time.Second

// Middleware applies Idempotency-Key to the requests it wraps, answering its
// own refusals (a malformed key, 400; a key reused or in progress, 409)
// through writeErr, the face's error writer. It must run after
// authentication (keys belong to the viewer's workspace) and after the rate
// limit's middleware. A nil Store disables it.
//
// Keyed are POST, PUT, PATCH and DELETE requests, except that a request
// Options.Deferred tells (a GraphQL POST) is keyed only when its executor
// finds it runs a mutation; on any other request the header is ignored. A request
// without the header, or whose body is over the server's limit (refused by
// the handler, which then runs nothing), passes through untouched.
//
// A REST request's key is claimed before its handler runs (the rate limit
// has been charged). A GraphQL request's operation, and its cost, are known
// only to the executor: its claim is deferred (Options.Deferred,
// Store.Defer), and the executor makes it once the operation has passed
// every check and been charged (ClaimDeferred). A GraphQL request refused before that (a
// document that does not parse or validate, a limit, the rate limit, a
// persisted-query miss) touches no table and leaves its key free; so does a
// query sent with a key.
//
// A keyed request's handler runs with a context detached from the client's
// connection, bounded by the claim's deadline: a client that times out and
// retries finds the first execution's response recorded rather than a
// write cut off half way.
func (s *Store) Middleware(writeErr middleware.ErrorWriter) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if s == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			values := r.Header.Values(Header)
			v := viewer.FromContext(r.Context())
			if len(values) == 0 || v == nil || !keyedMethod(r.Method) {
				next.ServeHTTP(w, r)
				return
			}
			key, err := checkKey(values)
			if payload, deferred := s.deferredPayload(r); deferred {
				// A malformed key refuses a mutation only: the
				// executor tells.
				s.serveDeferred(w, r, next, writeErr, key, Fingerprint(v, r.Method, r.URL.RequestURI(), payload), err)
				return
			}
			body, ok := readBody(r)
			if !ok {
				next.ServeHTTP(w, r)
				return
			}
			fp := Fingerprint(v, r.Method, r.URL.RequestURI(), body)
			if err != nil {
				writeErr(w, r, err)
				return
			}
			s.serve(w, r, next, writeErr, key, fp)
		})
	}
}

// deferredPayload returns what r's fingerprint covers when its claim is
// deferred to its executor (Options.Deferred).
func (s *Store) deferredPayload(r *http.Request) ([]byte, bool) {
	if s.deferred == nil {
		return nil, false
	}
	return s.deferred(r)
}

func (s *Store) serve(w http.ResponseWriter, r *http.Request, next http.Handler, writeErr middleware.ErrorWriter, key, fp string) {
	// The claim is not cut short by the client leaving: an INSERT that
	// committed while its caller gave up would hold the key until the lock
	// timeout.
	claimCtx, cancelClaim := context.WithTimeout(context.WithoutCancel(r.Context()), recordTimeout)
	claim, replay, err := s.Claim(claimCtx, key, fp)
	cancelClaim()
	switch {
	case err != nil:
		refuse(w, r, writeErr, err)
		return
	case replay != nil:
		writeReplay(w, replay)
		return
	}
	rec := &recorder{ResponseWriter: w, max: s.maxBody}
	finished := false
	defer func() {
		// A panic (answered by the server's recovery) releases the key.
		if !finished {
			s.finish(r.Context(), claim, rec.response(), rec.overflow, false, false, true)
		}
	}()
	// The handler must be over a margin before the claim may be taken
	// over, leaving time to record its outcome: a takeover never races a
	// commit.
	ctx, cancel := context.WithDeadline(context.WithoutCancel(r.Context()), claim.Deadline().Add(-s.handlerMargin()))
	defer cancel()
	next.ServeHTTP(rec, r.WithContext(withClaim(ctx, claim)))
	finished = true
	s.finish(r.Context(), claim, rec.response(), rec.overflow, false, false, false)
}

// serveDeferred serves a keyed GraphQL request: its claim is made by the
// executor, if it runs a mutation (Defer). What the executor writes passes
// through, recorded once the key is claimed; when the claim finds a replay
// or a refusal instead, the executor's output is dropped and that is
// answered.
func (s *Store) serveDeferred(w http.ResponseWriter, r *http.Request, next http.Handler, writeErr middleware.ErrorWriter, key, fp string, keyErr error) {
	ctx, d := s.deferClaim(r.Context(), key, fp, keyErr)
	rec := &recorder{ResponseWriter: w, max: s.maxBody, deferred: d}
	finished := false
	defer func() {
		if !finished {
			d.finish(r.Context(), rec.response(), rec.overflow, true)
		}
	}()
	// The claim comes later, with a deadline no earlier than this one.
	ctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), now().Add(s.lockTimeout-s.handlerMargin()))
	defer cancel()
	next.ServeHTTP(rec, r.WithContext(ctx))
	finished = true
	if replay, err := d.answer(); err != nil {
		refuse(w, r, writeErr, err)
	} else if replay != nil {
		writeReplay(w, replay)
	} else {
		d.finish(r.Context(), rec.response(), rec.overflow, false)
	}
}

// refuse answers a claim's refusal.
func refuse(w http.ResponseWriter, r *http.Request, writeErr middleware.ErrorWriter, err error) {
	if IsInProgress(err) {
		w.Header().Set("Retry-After", "1")
	}
	writeErr(w, r, err)
}

// handlerMargin is how long before its claim's deadline a keyed handler's
// context ends.
func (s *Store) handlerMargin() time.Duration {
	return min(s.lockTimeout*handlerMargin/100, maxHandlerMargin)
}

// verdict is what a finished execution's response says of it.
type verdict int

const (
	// failed: it failed in a way a retry may overcome, having written
	// nothing (a 5xx, a 429, a GraphQL error of such a code or a
	// persisted-query miss with nothing written): the key is released,
	// unless a write of it committed after all (see finish).
	failed verdict = iota
	// refused: it was refused, having written nothing (a 4xx, or a
	// GraphQL response whose every root field failed at itself).
	refused
	// ran: it ran, and may have written.
	ran
)

// finish records the execution's response, or releases the key when the
// request failed in a way a retry may overcome (see judge) or panicked,
// having committed nothing. A refusal is kept if its body is within
// MaxStoredRefusal, and released otherwise (it wrote nothing). A response
// that is kept for replay but holds a secret, is over MaxStoredBody, or
// does not fit in the workspace's budget, is not stored: the key is
// completed with a marker that answers a retry 409 conflict.
//
// What committed is known exactly (Claim.BeforeCommit): a failure after a write
// committed (a 5xx made by a read after the commit, a panic) completes the
// key with markerLost rather than freeing it. A commit whose outcome is
// still unknown is resolved from the key's row first; when it cannot be,
// the key is left in progress, in doubt, for its retry to resolve (Claim).
func (s *Store) finish(reqCtx context.Context, claim *Claim, resp Response, overflow, graphql, secret, panicked bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(reqCtx), recordTimeout)
	defer cancel()
	var (
		kept bool
		err  error
		what = "record"
	)
	v := judge(resp.Status, resp.Body, overflow, graphql)
	late := false
	if _, doubt := claim.outcome(); doubt {
		rctx, cancel := context.WithTimeout(ctx, recordTimeout/2)
		committed, known := claim.resolve(rctx, true)
		cancel()
		if !known {
			s.log.WarnContext(ctx, "idempotency: a keyed request's write may or may not have committed; its key stays in doubt until its retry resolves it",
				"request_id", middleware.RequestID(ctx))
			return
		}
		// Committed after all: the answer was made as if it had failed.
		late = committed
	}
	commits, _ := claim.outcome()
	switch {
	case late || (commits > 0 && (panicked || v == failed)):
		// Committed, but the answer does not show it (a read after the
		// commit failed, or the commit's outcome was learnt too late): a
		// retry must not run it again, nor be told that it failed.
		kept, err = claim.complete(ctx, Response{Status: resp.Status, ContentType: markerLost, Body: []byte{}})
	case commits == 0 && (panicked || v == failed || (v == refused && (overflow || len(resp.Body) > MaxStoredRefusal))):
		what = "release"
		kept, err = claim.Release(ctx)
	case overflow:
		// Too large to keep, and possibly committed (a 5xx or 429 is never
		// this large): a retry must not run it again.
		kept, err = claim.complete(ctx, Response{Status: resp.Status, ContentType: markerTooLarge, Body: []byte{}})
	case secret || (s.holdsSecret != nil && s.holdsSecret(resp.Body)):
		kept, err = claim.complete(ctx, Response{Status: resp.Status, ContentType: markerSecret, Body: []byte{}})
	default:
		kept, err = claim.Complete(ctx, resp)
	}
	switch {
	case err != nil:
		// The row stays in progress until the lock timeout, when a retry
		// takes it over.
		s.log.ErrorContext(ctx, "idempotency: could not "+what+" the outcome of a keyed request",
			"request_id", middleware.RequestID(ctx), "error", err.Error())
	case !kept:
		s.log.WarnContext(ctx, "idempotency: a keyed request outlived its lock timeout; its key was taken over",
			"request_id", middleware.RequestID(ctx))
	}
}

// judge tells what a response says of its execution (see verdict): every
// 5xx and 429 failed; other 4xx were refused; the rest ran. GraphQL
// answers resolver errors with 200, so a GraphQL response carrying an error
// of a 5xx or 429 code, or a persisted-query miss (which the client answers
// by resending the query text with the same key), failed too, and one whose
// every error is of another code refused — unless part of it was written:
// a mutation's root fields commit one by one, so a response where one root
// field has a result, or an error lies below a root field (its write
// committed, its selection failed to load), ran, lest a retry run the
// committed fields again. A response too large to have been kept
// (overflow) is judged by its status alone. The response tells what the
// answer shows; what committed is known exactly from the key (finish):
// a failed verdict does not free a key whose write committed.
func judge(status int, body []byte, overflow, graphql bool) verdict {
	switch {
	case status >= 500 || status == http.StatusTooManyRequests:
		return failed
	case status >= 400:
		return refused
	case !graphql || overflow || !bytes.Contains(body, []byte(`"errors"`)):
		return ran
	}
	var resp struct {
		Data   map[string]json.RawMessage `json:"data"`
		Errors []struct {
			Path       []json.RawMessage `json:"path"`
			Extensions struct {
				Code string `json:"code"`
			} `json:"extensions"`
		} `json:"errors"`
	}
	if json.Unmarshal(body, &resp) != nil {
		return ran
	}
	retry := false
	for _, e := range resp.Errors {
		if len(e.Path) > 1 {
			return ran
		}
		code := e.Extensions.Code
		if code == "PERSISTED_QUERY_NOT_FOUND" || code == "PERSISTED_QUERY_NOT_SUPPORTED" {
			retry = true
		}
		if c := apperr.Code(code); apperr.Known(c) {
			if st := middleware.HTTPStatus(c); st >= 500 || st == http.StatusTooManyRequests {
				retry = true
			}
		}
	}
	for _, v := range resp.Data {
		if !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			return ran
		}
	}
	if retry {
		return failed
	}
	return refused
}

func writeReplay(w http.ResponseWriter, resp *Response) {
	h := w.Header()
	if resp.ContentType != "" {
		h.Set("Content-Type", resp.ContentType)
	}
	if resp.ETag != "" {
		h.Set("ETag", resp.ETag)
	}
	h.Set(ReplayedHeader, "true")
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
}

// keyedMethod reports whether a request of method may be keyed.
func keyedMethod(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// checkKey returns the one key of values, or validation_failed naming the
// header.
func checkKey(values []string) (string, error) {
	if len(values) != 1 {
		return "", apperr.Invalid(Header, "send one %s header, not %d", Header, len(values))
	}
	key := values[0]
	if len(key) == 0 || len(key) > MaxKeyLength {
		return "", apperr.Invalid(Header, "must be 1 to %d printable ASCII characters, got %d bytes", MaxKeyLength, len(key))
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return "", apperr.Invalid(Header, "must be 1 to %d printable ASCII characters; byte %d is not", MaxKeyLength, i+1)
		}
	}
	return key, nil
}

// readBody reads the request's body (restoring it for the handler) when it
// is within the server's limit; ok is false otherwise.
func readBody(r *http.Request) (body []byte, ok bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, middleware.MaxBodyBytes+1))
	if err != nil || len(b) > middleware.MaxBodyBytes {
		r.Body = readCloser{io.MultiReader(bytes.NewReader(b), r.Body), r.Body}
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	return b, true
}

// readCloser reads from Reader and closes Closer.
type readCloser struct {
	io.Reader
	io.Closer
}

// Fingerprint identifies "the same request": the same member, in the same
// role, sending the same method, target (an HTTP request's path with
// query), and payload (its body). Another member of the workspace reusing a
// key is a different request (409), never a replay of a response it might
// not be allowed to see; so is the same member after a change of role (a
// response made under the old role is never replayed). A transport other
// than HTTP names its own method and target.
func Fingerprint(v *viewer.Viewer, method, target string, payload []byte) string {
	h := sha256.New()
	h.Write(v.MemberID[:])
	h.Write([]byte(v.Role))
	h.Write([]byte{0})
	h.Write([]byte(method))
	h.Write([]byte{0})
	h.Write([]byte(target))
	h.Write([]byte{0})
	h.Write(payload)
	return hex.EncodeToString(h.Sum(nil))
}

// recorder passes the response through and keeps what a replay needs. Under
// a deferred claim it keeps nothing until the key is claimed, and drops
// everything once the claim found a replay or a refusal to answer instead.
type recorder struct {
	http.ResponseWriter
	deferred    *Deferred
	status      int
	contentType string
	etag        string
	buf         bytes.Buffer
	max         int
	overflow    bool
}

// response is what the recorder kept.
func (r *recorder) response() Response {
	status := r.status
	if status == 0 {
		status = http.StatusOK
	}
	return Response{Status: status, ContentType: r.contentType, ETag: r.etag, Body: r.buf.Bytes()}
}

// dropped reports whether the handler's output is to be dropped.
func (r *recorder) dropped() bool {
	if r.deferred == nil {
		return false
	}
	replay, err := r.deferred.answer()
	return replay != nil || err != nil
}

// recording reports whether the handler's output is to be kept.
func (r *recorder) recording() bool { return r.deferred == nil || r.deferred.claimed() != nil }

func (r *recorder) WriteHeader(code int) {
	if r.dropped() {
		return
	}
	if r.status == 0 && r.recording() {
		r.status = code
		r.contentType = r.Header().Get("Content-Type")
		r.etag = r.Header().Get("ETag")
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.dropped() {
		return len(b), nil
	}
	if !r.recording() {
		return r.ResponseWriter.Write(b)
	}
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	if !r.overflow {
		if r.buf.Len()+len(b) > r.max {
			r.overflow = true
			r.buf = bytes.Buffer{}
		} else {
			r.buf.Write(b)
		}
	}
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
