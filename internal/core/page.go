package core

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"

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

// Page selects a window of a sorted list: Limit records after skipping Offset.
type Page struct {
	Offset int
	Limit  int
}

// Cursor is an opaque position in a list. procsvc's cursors are offsets into
// the sorted, filtered list: they let REST's page numbers and GraphQL's
// first/after/last/before share one implementation and support jumping to a
// page. A cursor stays valid across writes but may then shift by the number of
// records inserted or removed before it (docs/api.md).
type Cursor string

const cursorPrefix = "o:"

// CursorAt returns the cursor of the record at offset.
func CursorAt(offset int) Cursor {
	return Cursor(base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + strconv.Itoa(offset))))
}

// Offset decodes c. Errors: validation_failed naming field.
func (c Cursor) Offset(field string) (int, error) {
	raw, err := base64.RawURLEncoding.DecodeString(string(c))
	if err != nil || !strings.HasPrefix(string(raw), cursorPrefix) {
		return 0, apperr.Invalid(field, "is not a cursor returned by this API")
	}
	n, err := strconv.Atoi(string(raw[len(cursorPrefix):]))
	if err != nil || n < 0 || n > 1<<40 {
		return 0, apperr.Invalid(field, "is not a cursor returned by this API")
	}
	return n, nil
}

// Window is a Relay-style request: first/after or last/before. Start is
// the offset of the first record wanted when there is no after cursor: a
// client that pages by number (REST) asks for its page directly.
type Window struct {
	First  *int
	After  *Cursor
	Last   *int
	Before *Cursor
	Start  int
}

// resolve turns w into a Page. last without before needs the total, which
// the caller passes through totalFn only in that case.
func (w Window) resolve(defaultSize, maxSize int, totalFn func() (int, error)) (Page, error) {
	val := &apperr.Validation{}
	check := func(field string, n *int) {
		if n != nil && (*n < 0 || *n > maxSize) {
			val.Add(field, "must be between 0 and %d", maxSize)
		}
	}
	check("first", w.First)
	check("last", w.Last)
	if w.First != nil && w.Last != nil {
		val.Add("last", "cannot be combined with first")
	}
	// Start comes from a page number (REST's "page"), bounded as an
	// offset cursor is.
	if w.Start < 0 || w.Start > 1<<40 {
		val.Add("page", "is out of range")
	}
	if err := val.Err(); err != nil {
		return Page{}, err
	}
	start, end := w.Start, -1 // end < 0: unbounded
	if w.After != nil {
		o, err := w.After.Offset("after")
		if err != nil {
			return Page{}, err
		}
		start = o + 1
	}
	if w.Before != nil {
		o, err := w.Before.Offset("before")
		if err != nil {
			return Page{}, err
		}
		end = o
		if end < start {
			end = start
		}
	}
	switch {
	case w.First != nil:
		limit := *w.First
		if end >= 0 && start+limit > end {
			limit = end - start
		}
		return Page{Offset: start, Limit: limit}, nil
	case w.Last != nil:
		if end < 0 {
			total, err := totalFn()
			if err != nil {
				return Page{}, err
			}
			end = max(total, start)
		}
		off := max(end-*w.Last, start)
		return Page{Offset: off, Limit: end - off}, nil
	default:
		limit := defaultSize
		if end >= 0 && start+limit > end {
			limit = end - start
		}
		return Page{Offset: start, Limit: limit}, nil
	}
}

// PageInfo describes where a returned page sits in the whole list.
type PageInfo struct {
	Offset          int
	HasNextPage     bool
	HasPreviousPage bool
}

func pageInfo(p Page, n, total int) PageInfo {
	return PageInfo{Offset: p.Offset, HasNextPage: p.Offset+n < total, HasPreviousPage: p.Offset > 0}
}

// List is one page of a list and the count of all the records that match.
type List[T any] struct {
	Items    []*T
	Total    int
	PageInfo PageInfo
}

// listPage is the body every list shares: the exact total (counted once per
// workspace version and list key, see totals), the page w selects (sizes
// def and max), and that page's records, read only when it is not empty.
func listPage[T any](ctx context.Context, s *Service, list, key string, w Window, def, max int,
	count func() (int, error), read func(Page) ([]*T, error)) (*List[T], error) {
	total, err := s.totals.get(ctx, list, key, func() (int, error) {
		n, err := count()
		return n, apperr.Map(err)
	})
	if err != nil {
		return nil, err
	}
	page, err := w.resolve(def, max, func() (int, error) { return total, nil })
	if err != nil {
		return nil, err
	}
	out := &List[T]{Total: total}
	if page.Limit > 0 && page.Offset < total {
		if out.Items, err = read(page); err != nil {
			return nil, apperr.Map(err)
		}
	}
	out.PageInfo = pageInfo(page, len(out.Items), total)
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
// search term (all records when it is empty), sorted by name then id.
// Errors: unauthenticated, validation_failed.
func findNamed[T any, Q namedQuery[Q, T]](ctx context.Context, s *Service, list string, f ListFilter, w Window,
	query func(term string) Q) (*List[T], error) {
	if _, err := require(ctx, viewer.RoleViewer); err != nil {
		return nil, err
	}
	val := &apperr.Validation{}
	term := searchTerm(val, f.Search)
	if err := val.Err(); err != nil {
		return nil, err
	}
	return listPage(ctx, s, list, term, w, DefaultListPageSize, MaxListPageSize,
		func() (int, error) { return query(term).Count(ctx) },
		func(p Page) ([]*T, error) { return query(term).Offset(p.Offset).Limit(p.Limit).All(ctx) })
}
