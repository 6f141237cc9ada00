package core

import (
	"context"

	"entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/viewer"
)

// Page sizes.
const (
	DefaultProcedurePageSize = 20
	MaxProcedurePageSize     = 100
	DefaultListPageSize      = 100
	MaxListPageSize          = 500
)

// Window is a Relay-style request: first/after or last/before, read by
// keyset (cursor.go). Start is the offset of the first record wanted, for
// clients that page by number (REST): it cannot be combined with a cursor
// or last.
type Window struct {
	First  *int
	After  *Cursor
	Last   *int
	Before *Cursor
	Start  int
}

// PageInfo describes where a returned page sits in the whole list.
type PageInfo struct {
	HasNextPage     bool
	HasPreviousPage bool
}

// List is one page of a list and the count of all the records that match.
type List[T any] struct {
	Items    []*T
	Total    int
	PageInfo PageInfo
	// cursor makes the cursor of an item.
	cursor func(*T) Cursor
}

// Cursor is the cursor of item, one of l's Items.
func (l *List[T]) Cursor(item *T) Cursor { return l.cursor(item) }

// listPage is the body every list shares: the exact total (counted once per
// workspace version and list key, see totals: count is given the context to
// count under, which outlives ctx while other requests wait for the same
// count), and the page w selects (sizes
// def and max) of the list k orders, read by read for the slice the window
// takes; no read when the list is empty.
func listPage[T any](ctx context.Context, s *Service, list, key string, k keyset[T], w Window, def, max int,
	count func(context.Context) (int, error), read func(slice) ([]*T, error)) (*List[T], error) {
	sl, err := k.plan(w, def, max)
	if err != nil {
		return nil, err
	}
	total, err := s.totals.get(ctx, list, key, func(ctx context.Context) (int, error) {
		n, err := count(ctx)
		return n, apperr.Map(err)
	})
	if err != nil {
		// Mapped again: a request that gave up waiting for a count it
		// shared fails with its own context's error.
		return nil, apperr.Map(err)
	}
	out := &List[T]{Total: total, cursor: k.cursor}
	var rows []*T
	if total > 0 && sl.offset < total {
		if rows, err = read(sl); err != nil {
			return nil, apperr.Map(err)
		}
	}
	out.Items, out.PageInfo = k.finish(sl, rows)
	if out.Items == nil {
		out.Items = []*T{}
	}
	return out, nil
}

// ListFilter narrows the project, category and member lists.
type ListFilter struct {
	// Search is a case-insensitive substring of the name (for members, of
	// the name or the email address).
	Search string
}

// namedQuery is the part of a generated ent query (projects, categories,
// members) that findNamed pages through.
type namedQuery[Q, T any] interface {
	Count(context.Context) (int, error)
	Offset(int) Q
	Limit(int) Q
	All(context.Context) ([]*T, error)
}

// findNamed lists records by name for any viewer: the projects, categories
// and members lists. query returns a fresh query matching the validated
// search term (all records when it is empty), with sl's bounds and order
// when sl is not nil (see where and orderBy); id and name read a record's.
// Errors: unauthenticated, validation_failed.
func findNamed[T any, Q namedQuery[Q, T]](ctx context.Context, s *Service, list string, f ListFilter, w Window,
	id func(*T) uuid.UUID, name func(*T) string, query func(term string, sl *slice) Q) (*List[T], error) {
	if _, err := require(ctx, viewer.RoleViewer); err != nil {
		return nil, err
	}
	val := &apperr.Validation{}
	term := searchTerm(val, f.Search)
	if err := val.Err(); err != nil {
		return nil, err
	}
	k := keyset[T]{scope: scopeOf(list, term), column: "name", id: id, key: func(r *T) any { return name(r) }}
	return listPage(ctx, s, list, term, k, w, DefaultListPageSize, MaxListPageSize,
		func(ctx context.Context) (int, error) { return query(term, nil).Count(ctx) },
		func(sl slice) ([]*T, error) { return query(term, &sl).Offset(sl.offset).Limit(sl.limit).All(ctx) })
}

// where is sl's bounds as predicates of an ent query.
func where[P ~func(*sql.Selector)](sl *slice) []P {
	out := make([]P, len(sl.bounds))
	for i, b := range sl.bounds {
		out[i] = P(b)
	}
	return out
}

// orderBy is sl's order as an ent query's order option.
func orderBy[O ~func(*sql.Selector)](sl *slice) O { return O(sl.order) }
