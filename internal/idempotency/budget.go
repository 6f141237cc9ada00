package idempotency

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/idempotencybudget"
	"github.com/procsvc/procsvc/internal/viewer"
)

// Each workspace's keys keep at most Options.WorkspaceBytes of response
// bodies for replay. The running total is one row per workspace
// (idempotency_budgets), changed in the transaction that changes what a key
// keeps: charged when a key is completed with a body, given back when an
// expired key is purged or taken over. Checking the budget therefore costs
// one conditional UPDATE, whatever the number of keys.

var (
	// errNoBudget reports a workspace without its budget row yet.
	errNoBudget = errors.New("idempotency: the workspace has no budget row")
	// errClaimLost reports a claim taken over before its outcome was
	// recorded.
	errClaimLost = errors.New("idempotency: the claim was lost")
)

// charge adds n bytes to the stored bytes of workspace ws, within tx, if the
// total stays within the store's budget; fits is false (and nothing
// changes) when it would not. Errors: errNoBudget when ws has no row yet.
func (s *Store) charge(ctx context.Context, tx *ent.Tx, ws uuid.UUID, n int64) (fits bool, err error) {
	updated, err := tx.IdempotencyBudget.Update().
		Where(idempotencybudget.WorkspaceID(ws), idempotencybudget.UsedBytesLTE(s.workspaceBytes-n)).
		AddUsedBytes(n).
		Save(ctx)
	if err != nil || updated == 1 {
		return updated == 1, err
	}
	exists, err := tx.IdempotencyBudget.Query().Where(idempotencybudget.WorkspaceID(ws)).Exist(ctx)
	switch {
	case err != nil:
		return false, err
	case !exists:
		return false, errNoBudget
	}
	return false, nil
}

// giveBack takes n bytes off the stored bytes of workspace ws, within tx.
func giveBack(ctx context.Context, tx *ent.Tx, ws uuid.UUID, n int64) error {
	_, err := tx.IdempotencyBudget.Update().
		Where(idempotencybudget.WorkspaceID(ws)).
		AddUsedBytes(-n).
		Save(ctx)
	return err
}

// createBudget creates workspace ws's budget row, empty; one created
// concurrently by another request is as good.
func (s *Store) createBudget(ctx context.Context, ws uuid.UUID) error {
	err := s.client.IdempotencyBudget.Create().SetWorkspaceID(ws).Exec(viewer.System(ctx))
	if err != nil && !ent.IsConstraintError(err) {
		return err
	}
	return nil
}

// StoredBytes returns the response bytes the keys of ctx's viewer's
// workspace keep for replay, as counted against its budget.
func (s *Store) StoredBytes(ctx context.Context) (int64, error) {
	v := viewer.FromContext(ctx)
	if v == nil {
		return 0, viewer.ErrNoViewer
	}
	b, err := s.client.IdempotencyBudget.Query().Where(idempotencybudget.WorkspaceID(v.WorkspaceID)).Only(ctx)
	if ent.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return b.UsedBytes, nil
}

// inTx runs fn in a transaction, committed when fn returns nil and rolled
// back otherwise.
func (s *Store) inTx(ctx context.Context, fn func(tx *ent.Tx) error) error {
	tx, err := s.client.Tx(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		if rerr := tx.Rollback(); rerr != nil {
			return fmt.Errorf("%w (and rolling back: %v)", err, rerr)
		}
		return err
	}
	return tx.Commit()
}
