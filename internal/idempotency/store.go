// Package idempotency makes writes safe to retry: a write sent with an
// Idempotency-Key header runs once, and a retry with the same key replays
// its first response byte for byte (docs/api.md, "Idempotency-Key").
//
// The record of a key lives in the database (table idempotency_keys), so a
// retry is recognised by any replica and after a restart. A key is claimed by
// inserting its row, in state in_progress, before the write runs (for
// GraphQL, once the executor has checked and charged the operation: see
// Deferred); the unique (workspace, key) index makes concurrent duplicates
// execute once. Each write transaction of the execution counts itself in
// the row, in that transaction (Claim.BeforeCommit), so the row tells whether the
// write committed even when its answer cannot (a commit whose outcome is
// unknown: commit.go). The row is then completed with the response, or
// deleted when the write failed in a way a retry may overcome (a 5xx, a
// 429) and nothing it wrote committed, so that a key is never locked by a
// failure, nor freed by one that wrote. A response that may not or
// cannot be stored (it holds a secret, is over MaxStoredBody, or does not
// fit in its workspace's budget of stored bytes) completes the row with a
// marker instead, and a retry is answered 409 conflict. A row left in
// progress by a process that died is taken over once it is older than the
// lock timeout. Rows expire after the TTL and are purged in small batches
// in the background (StartPurger), giving their bytes back to their
// workspace's budget; lookups ignore expired rows.
package idempotency

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/idempotencykey"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/defaults"
	"github.com/procsvc/procsvc/internal/periodic"
	"github.com/procsvc/procsvc/internal/viewer"
)

// Defaults of Options.
const (
	// DefaultTTL is how long a key is remembered (Stripe's 24 hours).
	DefaultTTL = 24 * time.Hour
	// DefaultLockTimeout is how long an execution in progress holds its key
	// before it counts as abandoned: the server's default write timeout.
	DefaultLockTimeout = 60 * time.Second
	// DefaultPurgeEvery is the pause between two purges of expired keys.
	DefaultPurgeEvery = 5 * time.Minute
	// DefaultPurgeBatch is how many expired rows one DELETE removes.
	DefaultPurgeBatch = 500
	// DefaultWorkspaceBytes bounds the response bytes one workspace's keys
	// keep for replay at once (64 MiB): some 65 000 answers of a typical
	// kilobyte, or 80 of the largest single records. An answer that would
	// go over it is sent but not kept, like one over MaxStoredBody.
	DefaultWorkspaceBytes = 64 << 20
)

// Options configure a Store; zero values take the defaults above.
type Options struct {
	// TTL is how long a key is remembered after it was first claimed.
	TTL time.Duration
	// LockTimeout bounds an execution: it runs with a deadline of its claim
	// time plus LockTimeout, and a row still in progress after that is
	// taken over by the next request with its key. Use the request
	// timeout.
	LockTimeout time.Duration
	// MaxBody bounds a stored response body (0: MaxStoredBody).
	MaxBody int
	// WorkspaceBytes bounds the response bytes one workspace's keys keep
	// at once (0: DefaultWorkspaceBytes).
	WorkspaceBytes int64
	// Log receives failures to record an outcome (nil: discarded).
	Log *slog.Logger
	// Purged, if set, is told the outcome of each background purge
	// (StartPurger) once it is over.
	Purged func(deleted int, err error)
	// Deferred tells the requests whose claim their handler defers to its
	// executor (Store.Defer), which alone knows whether they write: it
	// returns the payload such a request's fingerprint covers, and true.
	// The GraphQL face gives it for its POSTs (nil: every keyed request is
	// claimed before its handler runs).
	Deferred func(r *http.Request) (payload []byte, ok bool)
	// HoldsSecret reports whether a response body holds a bearer secret,
	// which is never kept (secrets are stored only as hashes): the key is
	// completed with a marker, and a retry is answered 409 conflict (see
	// markerSecret). It covers what no executor tells (a persisted query
	// sent by hash alone does not show its root fields, and REST creates
	// tokens too). Nil: no body is taken for one.
	HoldsSecret func(body []byte) bool
}

// Store records keys in the database.
type Store struct {
	client         *ent.Client
	ttl            time.Duration
	lockTimeout    time.Duration
	maxBody        int
	workspaceBytes int64
	log            *slog.Logger
	purged         func(deleted int, err error)
	deferred       func(r *http.Request) ([]byte, bool)
	holdsSecret    func(body []byte) bool
}

// New returns a Store over client.
func New(client *ent.Client, o Options) *Store {
	s := &Store{client: client, ttl: o.TTL, lockTimeout: o.LockTimeout, maxBody: o.MaxBody, workspaceBytes: o.WorkspaceBytes,
		log: o.Log, purged: o.Purged, deferred: o.Deferred, holdsSecret: o.HoldsSecret}
	defaults.Positive(&s.maxBody, MaxStoredBody)
	defaults.Positive(&s.workspaceBytes, DefaultWorkspaceBytes)
	defaults.Positive(&s.ttl, DefaultTTL)
	defaults.Positive(&s.lockTimeout, DefaultLockTimeout)
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

// Response is a recorded response: what a retry replays.
type Response struct {
	Status      int
	ContentType string
	ETag        string
	Body        []byte
}

// Claim is the right to execute a keyed request, held until Complete or
// Release (or until the lock timeout, when another request may take it over).
type Claim struct {
	s         *Store
	id        int
	owner     string
	workspace uuid.UUID
	deadline  time.Time

	mu sync.Mutex
	// commits counts the execution's write transactions known to have
	// committed (see Claim.BeforeCommit); doubt is set while the latest one's
	// outcome is unknown.
	commits int
	doubt   bool
}

// Deadline is when the claim may be taken over: the execution must be over
// by then.
func (c *Claim) Deadline() time.Time { return c.deadline }

// errInProgress and errKeyReused are the causes of the two refusals of a
// claim (see IsInProgress).
var (
	errInProgress = errors.New("idempotency: key in progress")
	errKeyReused  = errors.New("idempotency: key reused for a different request")
	errNotKept    = errors.New("idempotency: the first response was not kept")
)

// keyReused is the 409 answered when a key comes back with a different
// request: its message and fields name the header.
func keyReused() error {
	return &apperr.Error{Code: apperr.Conflict,
		Message: Header + ": this key was already used for a different request; send a new key for a new request",
		Fields:  []apperr.FieldError{{Field: Header, Message: "already used for a different request"}},
		Err:     errKeyReused}
}

// inProgress is the 409 answered while the first request with a key runs.
func inProgress() error {
	return &apperr.Error{Code: apperr.Conflict,
		Message: "a request with this " + Header + " is still in progress",
		Fields:  []apperr.FieldError{{Field: Header, Message: "a request with this key is still in progress; retry shortly"}},
		Err:     errInProgress}
}

// The markers stored as a completed row's content type, with an empty body,
// when its response was not kept; a retry is answered 409 conflict.
// markerLost is also what a row in progress whose write committed means
// once its execution is over (its lock timeout passed): the answer was
// never recorded.
const (
	markerSecret   = "procsvc/not-kept; reason=secret"
	markerTooLarge = "procsvc/not-kept; reason=too-large"
	markerLost     = "procsvc/not-kept; reason=answer-lost"
)

// isMarker reports whether a stored content type is one of the markers.
func isMarker(contentType string) bool {
	return contentType == markerSecret || contentType == markerTooLarge || contentType == markerLost
}

// notKept is the 409 answered to a retry whose first response was not kept
// (see the markers). A response over its workspace's budget is too large
// to keep as well.
func notKept(marker string) error {
	msg := "the first response was too large to keep; fetch the record instead"
	switch marker {
	case markerSecret:
		msg = "the response held a secret and was not kept; list tokens or webhooks to find the one created"
	case markerLost:
		msg = "the write committed, but a database failure lost its answer; fetch the record instead"
	}
	return &apperr.Error{Code: apperr.Conflict, Message: msg,
		Fields: []apperr.FieldError{{Field: Header, Message: "already used; its response was not kept"}},
		Err:    errNotKept}
}

// IsInProgress reports whether err refused a claim because the first request
// with the key is still running.
func IsInProgress(err error) bool { return errors.Is(err, errInProgress) }

// maxClaimAttempts bounds the loop of Claim, which repeats only when a
// competing request changed the row between two statements.
const maxClaimAttempts = 5

// now is the store's clock: UTC, at the databases' microsecond precision.
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// Claim claims key for the request of fingerprint in the workspace of ctx's
// viewer. It returns exactly one of: a claim (execute the request, then
// Complete or Release it), the response recorded for the same request
// (replay it), or an error (409 conflict for a key reused by a different
// request or still in progress, see IsInProgress; or a storage
// error).
func (s *Store) Claim(ctx context.Context, key, fingerprint string) (*Claim, *Response, error) {
	v := viewer.FromContext(ctx)
	if v == nil {
		return nil, nil, viewer.ErrNoViewer
	}
	for range maxClaimAttempts {
		t := now()
		owner := newOwner()
		row, err := s.client.IdempotencyKey.Create().
			SetWorkspaceID(v.WorkspaceID).SetKey(key).SetFingerprint(fingerprint).
			SetState(idempotencykey.StateInProgress).SetOwner(owner).
			SetLockedAt(t).SetExpiresAt(t.Add(s.ttl)).
			Save(ctx)
		if err == nil {
			return s.claim(row.ID, owner, v.WorkspaceID, t), nil, nil
		}
		if !ent.IsConstraintError(err) {
			return nil, nil, err
		}
		// The key is taken: by this request before (replay), by another
		// (conflict), by one still running (in progress), or by an expired
		// or abandoned row (take it over).
		row, err = s.client.IdempotencyKey.Query().
			Where(idempotencykey.WorkspaceID(v.WorkspaceID), idempotencykey.Key(key)).
			Only(ctx)
		if ent.IsNotFound(err) {
			continue // released or purged in between: insert again
		}
		if err != nil {
			return nil, nil, err
		}
		switch {
		case !row.ExpiresAt.After(t):
			// Expired and not purged yet: as if absent.
		case row.Fingerprint != fingerprint:
			return nil, nil, keyReused()
		case row.State == idempotencykey.StateCompleted && isMarker(row.ContentType):
			return nil, nil, notKept(row.ContentType)
		case row.State == idempotencykey.StateCompleted:
			return nil, &Response{Status: row.Status, ContentType: row.ContentType, ETag: row.Etag, Body: row.Body}, nil
		case row.LockedAt.Add(s.lockTimeout).After(t):
			return nil, nil, inProgress()
		case row.Commits > 0:
			// Abandoned after a write of it committed (its answer was
			// never recorded): it must not run again.
			return nil, nil, notKept(markerLost)
		}
		// Take the row over, on the condition that nobody else did since
		// it was read (its owner and commits are unchanged), giving the
		// bytes it kept back to the workspace's budget.
		took, err := s.takeOver(ctx, row, fingerprint, owner, t)
		if err != nil {
			return nil, nil, err
		}
		if took {
			if row.State == idempotencykey.StateInProgress && row.ExpiresAt.After(t) {
				s.log.WarnContext(ctx, "idempotency: took over an abandoned key", "workspace_id", v.WorkspaceID.String(),
					"locked_at", row.LockedAt.Format(time.RFC3339Nano))
			}
			return s.claim(row.ID, owner, v.WorkspaceID, t), nil, nil
		}
	}
	return nil, nil, &apperr.Error{Code: apperr.Unavailable, Message: "the " + Header + " is contended; retry shortly",
		Err: errors.New("idempotency: claim attempts exhausted")}
}

func (s *Store) claim(id int, owner string, workspace uuid.UUID, lockedAt time.Time) *Claim {
	return &Claim{s: s, id: id, owner: owner, workspace: workspace, deadline: lockedAt.Add(s.lockTimeout)}
}

// takeOver claims row (expired, or abandoned in progress with nothing
// committed) for owner, on the condition that it is unchanged since it was
// read, and gives the bytes it kept back to its workspace's budget in the
// same transaction. The condition covers the row's commits: a write of
// the abandoned execution whose COMMIT is still on its way holds the row
// (Claim.BeforeCommit's statement), so the UPDATE waits for it and then finds the
// row changed, rather than running the write again.
func (s *Store) takeOver(ctx context.Context, row *ent.IdempotencyKey, fingerprint, owner string, t time.Time) (bool, error) {
	update := func(client *ent.Client) (int, error) {
		return client.IdempotencyKey.Update().
			Where(idempotencykey.ID(row.ID), idempotencykey.Owner(row.Owner), idempotencykey.Commits(row.Commits)).
			SetFingerprint(fingerprint).SetState(idempotencykey.StateInProgress).SetOwner(owner).
			SetLockedAt(t).SetExpiresAt(t.Add(s.ttl)).
			ClearStatus().ClearBody().SetContentType("").SetEtag("").SetStoredBytes(0).SetCommits(0).
			Save(ctx)
	}
	if row.StoredBytes == 0 {
		n, err := update(s.client)
		return n == 1, err
	}
	took := false
	err := s.inTx(ctx, func(tx *ent.Tx) error {
		n, err := update(tx.Client())
		if err != nil || n == 0 {
			return err
		}
		took = true
		return giveBack(ctx, tx, row.WorkspaceID, int64(row.StoredBytes))
	})
	return took && err == nil, err
}

// Complete records resp as the key's response. It returns false when the
// claim was lost (taken over after the lock timeout). A body over the
// store's limit, or one that does not fit in the workspace's budget, or a
// content type that is one of the markers, is not stored: the key is
// completed with the matching marker instead.
func (c *Claim) Complete(ctx context.Context, resp Response) (bool, error) {
	switch {
	case len(resp.Body) > c.s.maxBody:
		resp = Response{Status: resp.Status, ContentType: markerTooLarge}
	case isMarker(resp.ContentType):
		resp = Response{Status: resp.Status, ContentType: resp.ContentType}
	}
	return c.complete(ctx, resp)
}

// complete stores resp, charging its body to the workspace's budget in the
// same transaction; a body that would take the budget over is not stored
// (markerTooLarge).
func (c *Claim) complete(ctx context.Context, resp Response) (bool, error) {
	if len(resp.Body) == 0 {
		return c.update(ctx, c.s.client, resp)
	}
	for range 2 {
		kept := false
		err := c.s.inTx(ctx, func(tx *ent.Tx) error {
			fits, err := c.s.charge(ctx, tx, c.workspace, int64(len(resp.Body)))
			if err != nil {
				return err
			}
			stored := resp
			if !fits {
				stored = Response{Status: resp.Status, ContentType: markerTooLarge}
			}
			if kept, err = c.update(ctx, tx.Client(), stored); err == nil && !kept {
				return errClaimLost
			}
			return err
		})
		switch {
		case errors.Is(err, errClaimLost):
			return false, nil
		case errors.Is(err, errNoBudget):
			// The workspace's first kept response: create its budget,
			// then charge it.
			if err := c.s.createBudget(ctx, c.workspace); err != nil {
				return false, err
			}
			continue
		}
		return kept, err
	}
	return false, errors.New("idempotency: the workspace's budget could not be created")
}

// update completes the key's row with resp, its body's bytes counted as
// stored, on the condition that the claim still holds and the row has not
// expired (a purge gives an expired row's bytes back: see Purge).
func (c *Claim) update(ctx context.Context, client *ent.Client, resp Response) (bool, error) {
	n, err := client.IdempotencyKey.Update().
		Where(idempotencykey.ID(c.id), idempotencykey.Owner(c.owner), idempotencykey.ExpiresAtGT(now())).
		SetState(idempotencykey.StateCompleted).SetStatus(resp.Status).
		SetContentType(resp.ContentType).SetEtag(resp.ETag).SetBody(nonNil(resp.Body)).
		SetStoredBytes(len(resp.Body)).
		Save(ctx)
	return n == 1, err
}

// Release deletes the key's row, so that a retry executes again, unless a
// write of the execution committed (see Claim.BeforeCommit): a key is freed only
// when nothing it ran committed. On PostgreSQL the DELETE waits for a write
// still holding the row to end, and checks its commits as that write left
// them. It returns false when the row was not deleted: the claim was lost,
// or a write of it committed.
func (c *Claim) Release(ctx context.Context) (bool, error) {
	n, err := c.s.client.IdempotencyKey.Delete().
		Where(idempotencykey.ID(c.id), idempotencykey.Owner(c.owner), idempotencykey.Commits(0)).
		Exec(ctx)
	return n == 1, err
}

// maxPurgeRetries bounds how many times in a row Purge reads a batch again
// because another purge or a takeover changed it first.
const maxPurgeRetries = 5

// Purge deletes expired keys of every workspace, batch rows per statement,
// until none is left or ctx ends, and returns how many it deleted. Each
// batch is one short transaction of its own, so requests never wait on it
// for long: it deletes the batch and gives the bytes its rows kept back to
// their workspaces' budgets.
func (s *Store) Purge(ctx context.Context, batch int) (int, error) {
	if batch <= 0 {
		batch = DefaultPurgeBatch
	}
	ctx = viewer.System(ctx)
	total, retries := 0, 0
	for ctx.Err() == nil {
		t := now()
		rows, err := s.client.IdempotencyKey.Query().
			Where(idempotencykey.ExpiresAtLTE(t)).
			Select(idempotencykey.FieldID, idempotencykey.FieldWorkspaceID, idempotencykey.FieldStoredBytes).
			Limit(batch).All(ctx)
		if err != nil || len(rows) == 0 {
			return total, err
		}
		n, err := s.purgeBatch(ctx, rows, t)
		if errors.Is(err, errBatchChanged) && retries < maxPurgeRetries {
			retries++
			continue
		}
		total += n
		if err != nil {
			return total, err
		}
		retries = 0
		if len(rows) < batch {
			return total, nil
		}
	}
	return total, ctx.Err()
}

// errBatchChanged reports a batch of expired rows changed since it was read
// (purged by another replica, or taken over).
var errBatchChanged = errors.New("idempotency: the batch changed while being purged")

// purgeBatch deletes rows, expired at t, and gives the bytes they kept back
// to their workspaces. The expiry is checked again (a row taken over in
// between has a new one); if any row was not deleted, which rows were
// is unknown, so nothing is: errBatchChanged.
func (s *Store) purgeBatch(ctx context.Context, rows []*ent.IdempotencyKey, t time.Time) (int, error) {
	ids := make([]int, len(rows))
	freed := map[uuid.UUID]int64{}
	for i, row := range rows {
		ids[i] = row.ID
		if row.StoredBytes > 0 {
			freed[row.WorkspaceID] += int64(row.StoredBytes)
		}
	}
	del := func(client *ent.Client) (int, error) {
		return client.IdempotencyKey.Delete().
			Where(idempotencykey.IDIn(ids...), idempotencykey.ExpiresAtLTE(t)).
			Exec(ctx)
	}
	if len(freed) == 0 {
		// Nothing to give back: no need to know which rows went.
		return del(s.client)
	}
	deleted := 0
	err := s.inTx(ctx, func(tx *ent.Tx) error {
		n, err := del(tx.Client())
		if err != nil {
			return err
		}
		if n != len(rows) {
			return errBatchChanged
		}
		// In one order, so that two purges never wait on each other's
		// budget rows.
		for _, ws := range slices.SortedFunc(maps.Keys(freed), func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) }) {
			if err := giveBack(ctx, tx, ws, freed[ws]); err != nil {
				return err
			}
		}
		deleted = n
		return nil
	})
	return deleted, err
}

// StartPurger purges expired keys now and then every interval
// (DefaultPurgeEvery when 0), in a goroutine, until ctx ends or stop is
// called; stop waits for the goroutine to return. Start it with the server
// and stop it before closing the database. Failures are logged and retried
// at the next tick.
func (s *Store) StartPurger(ctx context.Context, every time.Duration) (stop func()) {
	if every <= 0 {
		every = DefaultPurgeEvery
	}
	return periodic.Start(ctx, every, func(ctx context.Context) {
		n, err := s.Purge(ctx, DefaultPurgeBatch)
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.WarnContext(ctx, "idempotency: purge of expired keys failed", "error", err.Error(), "deleted", n)
		case n > 0:
			s.log.InfoContext(ctx, "idempotency: purged expired keys", "deleted", n)
		}
		if s.purged != nil {
			s.purged(n, err)
		}
	})
}

func newOwner() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// nonNil keeps an empty body distinct from no body at all (NULL).
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
