package idempotency

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"time"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/auth"
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

// graphqlPath is the GraphQL endpoint, whose POSTs are keyed only when they
// run a mutation.
const graphqlPath = "/graphql"

// maxTokens bounds the parse that finds a GraphQL request's operation: the
// executor's own token limit (graph.MaxTokens; a test holds them equal).
const maxTokens = 15_000

// MaxStoredBody bounds a recorded response body, in bytes (1 MiB). A larger
// response is answered in full but not kept: its key is completed with a
// marker, and a retry is answered 409 conflict (see errTooLarge) rather
// than running the write again. The recorder stops buffering past it.
const MaxStoredBody = 1 << 20

// secretFields are the GraphQL root fields whose result carries a bearer
// secret (CreateTokenPayload.secret). Their response is never kept (secrets
// are stored only as SHA-256 hashes): the key is completed with a marker,
// and a retry is answered 409 conflict (see errHeldSecret). A response
// holding a string shaped like a secret (auth.SecretPrefix followed by 43
// base64url characters) is not kept either, whatever ran: a persisted query
// sent by hash alone does not show its root fields.
var secretFields = map[string]bool{"createToken": true}

// secretShape matches a bearer secret as a JSON string: auth.NewSecret's
// (with a 6-character checksum) or an older release's (without).
var secretShape = regexp.MustCompile(`"` + auth.SecretPrefix + `[A-Za-z0-9_-]{43}(?:[0-9A-Za-z]{6})?"`)

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
// authentication: keys belong to the viewer's workspace. A nil Store
// disables it.
//
// Keyed are REST POST, PUT, PATCH and DELETE requests and GraphQL POSTs that
// run a mutation (or whose operation is only known to the executor: a
// persisted query sent by hash alone, a document that does not parse); on
// any other request the header is ignored. A request without the header, or
// whose body is over the server's limit (refused by the handler, which
// then runs nothing), passes through untouched.
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
			graphql := r.URL.Path == graphqlPath
			v := viewer.FromContext(r.Context())
			if len(values) == 0 || v == nil || !keyedMethod(r.Method, graphql) {
				next.ServeHTTP(w, r)
				return
			}
			body, ok := readBody(r)
			if !ok {
				next.ServeHTTP(w, r)
				return
			}
			secret := false
			if graphql {
				var mutation bool
				mutation, secret = inspect(body)
				if !mutation {
					next.ServeHTTP(w, r)
					return
				}
			}
			key, err := checkKey(values)
			if err != nil {
				writeErr(w, r, err)
				return
			}
			s.serve(w, r, next, writeErr, key, fingerprint(v, r, body), graphql, secret)
		})
	}
}

func (s *Store) serve(w http.ResponseWriter, r *http.Request, next http.Handler, writeErr middleware.ErrorWriter, key, fp string, graphql, secret bool) {
	// The claim is not cut short by the client leaving: an INSERT that
	// committed while its caller gave up would hold the key until the lock
	// timeout.
	claimCtx, cancelClaim := context.WithTimeout(context.WithoutCancel(r.Context()), recordTimeout)
	claim, replay, err := s.Claim(claimCtx, key, fp)
	cancelClaim()
	switch {
	case err != nil:
		if IsInProgress(err) {
			w.Header().Set("Retry-After", "1")
		}
		writeErr(w, r, err)
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
			s.finish(r.Context(), claim, rec, graphql, secret, true)
		}
	}()
	// The handler must be over a margin before the claim may be taken
	// over, leaving time to record its outcome: a takeover never races a
	// commit.
	ctx, cancel := context.WithDeadline(context.WithoutCancel(r.Context()), claim.Deadline().Add(-s.handlerMargin()))
	defer cancel()
	next.ServeHTTP(rec, r.WithContext(ctx))
	finished = true
	s.finish(r.Context(), claim, rec, graphql, secret, false)
}

// handlerMargin is how long before its claim's deadline a keyed handler's
// context ends.
func (s *Store) handlerMargin() time.Duration {
	return min(s.lockTimeout*handlerMargin/100, maxHandlerMargin)
}

// finish records the execution's response, or releases the key when the
// request failed in a way a retry may overcome: a 5xx (every write is one
// transaction, rolled back on failure), a 429 (not executed), a GraphQL
// response with such an error and nothing written (see replayable), or a
// panic. A response that is kept for replay but holds a secret, or is over
// MaxStoredBody, is not stored: the key is completed with a marker that
// answers a retry 409 conflict.
func (s *Store) finish(reqCtx context.Context, claim *Claim, rec *recorder, graphql, secret, panicked bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(reqCtx), recordTimeout)
	defer cancel()
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	var (
		kept bool
		err  error
		what = "record"
	)
	switch {
	case panicked || (!rec.overflow && !replayable(status, rec.buf.Bytes(), graphql)):
		what = "release"
		kept, err = claim.Release(ctx)
	case rec.overflow:
		// Too large to keep, and possibly committed (a 5xx or 429 is never
		// this large): a retry must not run it again.
		kept, err = claim.complete(ctx, Response{Status: status, ContentType: markerTooLarge, Body: []byte{}})
	case secret || secretShape.Match(rec.buf.Bytes()):
		kept, err = claim.complete(ctx, Response{Status: status, ContentType: markerSecret, Body: []byte{}})
	default:
		kept, err = claim.Complete(ctx, Response{Status: status, ContentType: rec.contentType, ETag: rec.etag, Body: rec.buf.Bytes()})
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

// replayable reports whether a response is recorded for replay: every
// status but 5xx and 429 (Stripe keeps 4xx answers too). GraphQL answers
// resolver errors with 200, so a GraphQL response is not recorded either
// when it carries an error of such a code or a persisted-query miss (which
// the client answers by resending the query text with the same key) —
// unless part of it was written: a mutation's root fields commit one by
// one, so a response where one root field has a result, or an error lies
// below a root field (its write committed, its selection failed to load),
// is recorded, lest a retry run the committed fields again.
func replayable(status int, body []byte, graphql bool) bool {
	if status >= 500 || status == http.StatusTooManyRequests {
		return false
	}
	if !graphql || !bytes.Contains(body, []byte(`"errors"`)) {
		return true
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
		return true
	}
	retry := false
	for _, e := range resp.Errors {
		if len(e.Path) > 1 {
			return true
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
			return true
		}
	}
	return !retry
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
func keyedMethod(method string, graphql bool) bool {
	if graphql {
		return method == http.MethodPost
	}
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

// fingerprint identifies "the same request": the same member, in the same
// role, sending the same method, path with query, and body. Another member
// of the workspace reusing a key is a different request (409), never a
// replay of a response it might not be allowed to see; so is the same
// member after a change of role (a response made under the old role is
// never replayed).
func fingerprint(v *viewer.Viewer, r *http.Request, body []byte) string {
	h := sha256.New()
	h.Write(v.MemberID[:])
	h.Write([]byte(v.Role))
	h.Write([]byte{0})
	h.Write([]byte(r.Method))
	h.Write([]byte{0})
	h.Write([]byte(r.URL.RequestURI()))
	h.Write([]byte{0})
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// runsMutation reports whether a GraphQL POST body may run a mutation (see
// inspect).
func runsMutation(body []byte) bool {
	m, _ := inspect(body)
	return m
}

// inspect reports whether a GraphQL POST body may run a mutation: its
// selected operation is one, or cannot be known before the executor (a
// persisted query sent by hash alone, a document that does not parse, an
// operation name that matches nothing); and whether that mutation selects
// a root field of secretFields (through fragments too). The transport guard
// has already checked that the body is one JSON object.
func inspect(body []byte) (mutation, secret bool) {
	var req struct {
		Query         string `json:"query"`
		OperationName string `json:"operationName"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Query == "" {
		return true, false
	}
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: req.Query}, maxTokens)
	if err != nil {
		return true, false
	}
	var op *ast.OperationDefinition
	switch {
	case req.OperationName != "":
		op = doc.Operations.ForName(req.OperationName)
	case len(doc.Operations) == 1:
		op = doc.Operations[0]
	}
	if op == nil {
		return true, false
	}
	if op.Operation != ast.Mutation {
		return false, false
	}
	return true, selectsSecret(doc, op.SelectionSet, map[string]bool{})
}

// selectsSecret reports whether set selects a field of secretFields,
// directly or through inline fragments and fragment spreads (seen guards
// against cycles, which the validator refuses anyway).
func selectsSecret(doc *ast.QueryDocument, set ast.SelectionSet, seen map[string]bool) bool {
	for _, sel := range set {
		switch sel := sel.(type) {
		case *ast.Field:
			if secretFields[sel.Name] {
				return true
			}
		case *ast.InlineFragment:
			if selectsSecret(doc, sel.SelectionSet, seen) {
				return true
			}
		case *ast.FragmentSpread:
			if seen[sel.Name] {
				continue
			}
			seen[sel.Name] = true
			if f := doc.Fragments.ForName(sel.Name); f != nil && selectsSecret(doc, f.SelectionSet, seen) {
				return true
			}
		}
	}
	return false
}

// recorder passes the response through and keeps what a replay needs.
type recorder struct {
	http.ResponseWriter
	status      int
	contentType string
	etag        string
	buf         bytes.Buffer
	max         int
	overflow    bool
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
		r.contentType = r.Header().Get("Content-Type")
		r.etag = r.Header().Get("ETag")
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
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
