package database

import (
	"context"

	"github.com/procsvc/procsvc/ent"
)

// A TxStep is one more statement a request's write transactions each run,
// last, right before COMMIT, that a layer above the core adds to the
// request: a keyed request's Idempotency-Key counting the commit
// (internal/idempotency, Claim.BeforeCommit). It rides the request's
// context, so that the core, which runs the transactions, imports nothing
// of what adds it — the idempotency store is also HTTP middleware, and the
// core imports no HTTP package (docs/design.md §1).
type TxStep interface {
	// BeforeCommit runs in tx once the write's statements have run; an
	// error rolls tx back. It may add commit hooks to tx.
	BeforeCommit(ctx context.Context, tx *ent.Tx) error
}

type txStepKey struct{}

// WithTxStep returns ctx whose write transactions run step before they
// commit (BeforeCommit), in place of any step ctx carried.
func WithTxStep(ctx context.Context, step TxStep) context.Context {
	return context.WithValue(ctx, txStepKey{}, step)
}

// TxStepOf returns the step ctx carries, nil without one.
func TxStepOf(ctx context.Context) TxStep {
	s, _ := ctx.Value(txStepKey{}).(TxStep)
	return s
}

// BeforeCommit runs the step of ctx's request in tx, if it carries one:
// a write transaction calls it right before committing tx. Without a step
// it sends nothing.
func BeforeCommit(ctx context.Context, tx *ent.Tx) error {
	if s := TxStepOf(ctx); s != nil {
		return s.BeforeCommit(ctx, tx)
	}
	return nil
}
