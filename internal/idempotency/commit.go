package idempotency

// A keyed write's key commits with the write. Each write transaction of a
// keyed execution adds one to its key's row, commits, in that transaction
// (Claim.BeforeCommit), so the row tells whether the write committed: either both
// are durable or neither. That decides what an unknown commit outcome
// means — the connection died during COMMIT, as when a primary fails —
// instead of the response: the outcome is read back from the row, once any
// transaction still holding it is over, and the key is freed only when no
// write committed (docs/api.md, "Idempotency-Key": in doubt).

import (
	"context"
	"errors"
	"time"

	"entgo.io/ent/dialect"
	"entgo.io/ent/dialect/sql"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/idempotencykey"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/middleware"
)

// Resolving an unknown commit outcome before the write answers: attempts
// begin resolveFirstPause apart and back off to resolveMaxPause, for at
// most half the time the execution has left (resolveWithoutDeadline
// without a deadline), so that its answer can still be made and recorded.
const (
	resolveFirstPause      = 50 * time.Millisecond
	resolveMaxPause        = time.Second
	resolveWithoutDeadline = 10 * time.Second
)

// withClaim returns ctx carrying claim for the write transactions of its
// request: each runs Claim.BeforeCommit as its last step (database.TxStep:
// the core runs it without importing this package, which is also HTTP
// middleware).
func withClaim(ctx context.Context, claim *Claim) context.Context {
	return database.WithTxStep(ctx, claim)
}

// BeforeCommit makes the key of a keyed request commit with its write
// transaction tx: a write transaction runs it (database.BeforeCommit) once
// the write's statements have run, right before committing tx. It sends one
// statement in tx (the key's row counts the commit); a request without a
// key carries no claim and sends none. A commit of tx that then fails with
// its outcome unknown is resolved from the key's row before tx.Commit
// returns, for at most half the time the request has left: nil when it did
// commit (the write answers as usual), the commit's error when it did not,
// or when that could not be told (the key is then in doubt: it is not
// freed, and its retry resolves it).
//
// Errors: conflict when the key was taken over (tx must roll back: its
// claim's lock timeout passed); unavailable when an earlier write of the
// request is in doubt (a mutation's later root fields do not run once one
// is: the key's count would no longer tell them apart); or the statement's.
func (c *Claim) BeforeCommit(ctx context.Context, tx *ent.Tx) error {
	if _, doubt := c.outcome(); doubt {
		return &apperr.Error{Code: apperr.Unavailable,
			Message: "an earlier write of this request may or may not have committed; retry the request with its " + Header,
			Err:     errors.New("idempotency: an earlier write of the keyed request is in doubt")}
	}
	n, err := tx.IdempotencyKey.Update().
		Where(idempotencykey.ID(c.id), idempotencykey.Owner(c.owner)).
		AddCommits(1).
		Save(ctx)
	if err != nil {
		return err
	}
	if n == 0 {
		return &apperr.Error{Code: apperr.Conflict,
			Message: "a later request with this " + Header + " took it over; nothing was written",
			Fields:  []apperr.FieldError{{Field: Header, Message: "taken over by a later request"}},
			Err:     errClaimLost}
	}
	tx.OnCommit(c.resolving(ctx))
	return nil
}

// resolving is the commit hook of a keyed write transaction (BeforeCommit):
// the innermost, so that the hooks around it (the version the response
// reports, events) see the outcome it resolves.
func (c *Claim) resolving(reqCtx context.Context) ent.CommitHook {
	return func(next ent.Committer) ent.Committer {
		return ent.CommitFunc(func(ctx context.Context, tx *ent.Tx) error {
			err := next.Commit(ctx, tx)
			if err == nil {
				c.settle(true)
				return nil
			}
			until := time.Now().Add(resolveWithoutDeadline)
			if d, ok := reqCtx.Deadline(); ok {
				until = time.Now().Add(time.Until(d) / 2)
			}
			rctx, cancel := context.WithDeadline(context.WithoutCancel(reqCtx), until)
			defer cancel()
			committed, known := c.resolve(rctx, true)
			log := c.s.log.With("request_id", middleware.RequestID(reqCtx), "commit_error", err.Error())
			switch {
			case !known:
				log.WarnContext(rctx, "idempotency: a keyed write's commit failed, and its key could not tell whether it committed yet")
				return err
			case committed:
				log.WarnContext(rctx, "idempotency: a keyed write's commit failed, but its key shows it committed; answering it")
				return nil
			}
			log.InfoContext(rctx, "idempotency: a keyed write's commit failed, and its key shows it did not commit")
			return err
		})
	}
}

// outcome is how many write transactions of the claim are known to have
// committed, and whether one's outcome is unknown.
func (c *Claim) outcome() (commits int, doubt bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.commits, c.doubt
}

// settle records that the claim's latest write transaction committed, or
// is known not to have: its outcome is no longer in doubt.
func (c *Claim) settle(committed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if committed {
		c.commits++
	}
	c.doubt = false
}

// resolve tells whether the claim's latest write transaction committed,
// from the key's row (see commitsOf); known is false when the row could not
// be read or does not add up, and the claim is then in doubt. With retry it
// tries again until ctx ends (the database may be failing over), else once.
func (c *Claim) resolve(ctx context.Context, retry bool) (committed, known bool) {
	before, _ := c.outcome()
	pause := resolveFirstPause
	for {
		n, ok, err := c.commitsOf(ctx)
		switch {
		case err == nil && (!ok || n == before):
			// Not committed. A row no longer the claim's was taken over
			// while the write was not counted in it (see takeOver).
			c.settle(false)
			return false, true
		case err == nil && n == before+1:
			c.settle(true)
			return true, true
		case err == nil:
			c.s.log.ErrorContext(ctx, "idempotency: a key counts other commits than its execution made",
				"request_id", middleware.RequestID(ctx), "counted", n, "known", before)
		}
		if !retry || ctx.Err() != nil {
			break
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		if ctx.Err() != nil {
			break
		}
		pause = min(2*pause, resolveMaxPause)
	}
	c.mu.Lock()
	c.doubt = true
	c.mu.Unlock()
	return false, false
}

// commitsOf reads the commits the key's row counts, ok false when the row
// is no longer the claim's. On PostgreSQL the read locks the row (FOR
// SHARE), so it waits for a transaction still holding it — a write whose
// COMMIT is on its way, on a connection this process gave up on — to end,
// and reads what it left. On SQLite, whose writes are this process's own,
// a write's transaction is over once its commit returned.
func (c *Claim) commitsOf(ctx context.Context) (int, bool, error) {
	var rows []struct {
		Commits int `json:"commits"`
	}
	err := c.s.client.IdempotencyKey.Query().
		Where(idempotencykey.ID(c.id), idempotencykey.Owner(c.owner)).
		Modify(func(s *sql.Selector) {
			s.Select(s.C(idempotencykey.FieldCommits))
			if s.Dialect() == dialect.Postgres {
				s.For(sql.LockShare)
			}
		}).
		Scan(ctx, &rows)
	if err != nil {
		return 0, false, err
	}
	if len(rows) == 0 {
		return 0, false, nil
	}
	return rows[0].Commits, true, nil
}
