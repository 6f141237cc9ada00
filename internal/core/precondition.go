package core

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/timefmt"
)

// Precondition guards a write with what the client last read: the write
// happens only if the record's updatedAt is still one of UpdatedAt
// (optimistic concurrency: REST's If-Match, GraphQL's ifUpdatedAt). It is
// checked inside the write's transaction, after the workspace lock, so no
// other write can slip in between the check and the write.
type Precondition struct {
	UpdatedAt []time.Time
}

// IfUpdatedAt is the precondition "the record still has this updatedAt".
func IfUpdatedAt(t time.Time) Precondition { return Precondition{UpdatedAt: []time.Time{t}} }

// holds compares at the millisecond precision clients see (timestamps are
// rendered YYYY-MM-DDTHH:mm:ss.sssZ), so a value read from any response can be
// sent back as is.
func (p Precondition) holds(current time.Time) bool {
	for _, t := range p.UpdatedAt {
		if current.Truncate(time.Millisecond).Equal(t.Truncate(time.Millisecond)) {
			return true
		}
	}
	return false
}

// checkPreconditions answers precondition_failed when current does not
// satisfy every condition.
func checkPreconditions(kind string, current time.Time, conds []Precondition) error {
	for _, c := range conds {
		if !c.holds(current) {
			return apperr.New(apperr.PreconditionFailed,
				"the %s changed since it was read (its updatedAt is now %s); read it again and retry", kind, timefmt.Format(current))
		}
	}
	return nil
}

// Preconditions turns an optional expected updatedAt into the conditions of
// a write (none when nil).
func Preconditions(ifUpdatedAt *time.Time) []Precondition {
	if ifUpdatedAt == nil {
		return nil
	}
	return []Precondition{IfUpdatedAt(*ifUpdatedAt)}
}

// recheck reads the record's current updatedAt inside the write's
// transaction (only when there are conditions) and checks them. A record
// gone meanwhile is not_found. Writes that read the row in the transaction
// anyway (every update) call checkPreconditions on that row instead.
func recheck[T any](ctx context.Context, kind string, conds []Precondition,
	get func(context.Context, uuid.UUID) (T, error), id uuid.UUID, updatedAt func(T) time.Time) error {
	if len(conds) == 0 {
		return nil
	}
	cur, err := get(ctx, id)
	if ent.IsNotFound(err) {
		return apperr.NotFoundf(kind)
	}
	if err != nil {
		return err
	}
	return checkPreconditions(kind, updatedAt(cur), conds)
}

// nextUpdatedAt is the updatedAt of a record changed now that was last
// changed at prev: now, but always at least a millisecond after prev, so
// that every change is visible in the millisecond timestamps (and ETags)
// clients compare. prev must be read inside the write's transaction, after
// the workspace lock: from a row read before it, two writers that waited on
// the lock together would store the same updatedAt (one ETag for two
// versions, and a lost update behind If-Match).
func nextUpdatedAt(prev, now time.Time) time.Time {
	if floor := prev.Truncate(time.Millisecond).Add(time.Millisecond); now.Before(floor) {
		return floor
	}
	return now
}
