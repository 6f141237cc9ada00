package core

// Keyset cursors (docs/api.md, "Cursors"). A cursor names a row of one list
// by its sort key and id, so the page after it starts right after that row
// however many rows were inserted or deleted before it: pages neither skip
// nor repeat as people work. Offsets (REST's page numbers) stay for clients
// that jump to a page.

import (
	"encoding/base64"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/internal/apperr"
)

// Cursor is an opaque position in one list: base64url of
// "k1|scope|id|key", where scope digests the list, its filter, its sort and
// its parent, id is the row's and key its sort key ("t" and Unix
// nanoseconds for a time, "s" and the text for a text, "i" and the decimal
// for an integer: an event's version).
type Cursor string

const cursorVersion = "k1"

// position is a decoded cursor.
type position struct {
	id  uuid.UUID
	key any // time.Time, string or int64
}

// scopeOf digests what a cursor belongs to: one from another list, filter,
// sort or parent is refused rather than silently misread. The digest is
// not a secret: a client that forges one only pages its own list (every
// read is confined to its workspace) from a place it chose, so a fast
// 64-bit FNV-1a serves, computed for every procedure of a page.
func scopeOf(parts ...string) string {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(strconv.Quote(p)))
	}
	return strconv.FormatUint(h.Sum64(), 36)
}

func encodeCursor(scope string, key any, id uuid.UUID) Cursor {
	var k string
	switch v := key.(type) {
	case time.Time:
		k = "t" + strconv.FormatInt(v.UnixNano(), 10)
	case string:
		k = "s" + v
	case int64:
		k = "i" + strconv.FormatInt(v, 10)
	}
	raw := cursorVersion + "|" + scope + "|" + id.String() + "|" + k
	return Cursor(base64.RawURLEncoding.EncodeToString([]byte(raw)))
}

// decode reads c as a cursor of the list scope.
// Errors: validation_failed naming field.
func (c Cursor) decode(field, scope string) (position, error) {
	invalid := apperr.Invalid(field, "is not a cursor returned by this API")
	raw, err := base64.RawURLEncoding.DecodeString(string(c))
	if err != nil {
		return position{}, invalid
	}
	parts := strings.SplitN(string(raw), "|", 4)
	if len(parts) != 4 || parts[0] != cursorVersion || len(parts[3]) == 0 {
		return position{}, invalid
	}
	if parts[1] != scope {
		return position{}, apperr.Invalid(field, "is a cursor of another list, filter or order; page with the arguments that returned it")
	}
	id, err := uuid.Parse(parts[2])
	if err != nil {
		return position{}, invalid
	}
	p := position{id: id}
	switch k := parts[3]; k[0] {
	case 't':
		n, err := strconv.ParseInt(k[1:], 10, 64)
		if err != nil {
			return position{}, invalid
		}
		p.key = time.Unix(0, n).UTC()
	case 's':
		p.key = k[1:]
	case 'i':
		n, err := strconv.ParseInt(k[1:], 10, 64)
		if err != nil {
			return position{}, invalid
		}
		p.key = n
	default:
		return position{}, invalid
	}
	return p, nil
}

// keyset is how a list is ordered for its cursors: by one column, then id,
// both in one direction. Every list of the API has such an order, and an
// index that serves it.
type keyset[T any] struct {
	// scope digests the list, filter, sort and parent its cursors belong to.
	scope  string
	column string
	desc   bool
	// key is a row's value of column (a time.Time, a string or an int64,
	// as read).
	key func(*T) any
	id  func(*T) uuid.UUID
	// unique: no two rows of the list share a value of column (an event's
	// version in its workspace), so the column alone orders them and bounds
	// a page, and the index on it alone serves the order; the cursor still
	// names the row's id.
	unique bool
}

// slice is the read a window takes of a keyset list: rows past bounds, in
// order, after skipping offset, at most limit (one more than the page, to
// learn whether there is more).
type slice struct {
	bounds   []func(*sql.Selector)
	order    func(*sql.Selector)
	offset   int
	limit    int
	backward bool
	// size is the page size asked for; after and before are whether the
	// window had those cursors.
	size          int
	after, before bool
}

// plan checks w (page sizes def and max) and returns the read it takes.
// Errors: validation_failed naming the argument.
func (k keyset[T]) plan(w Window, def, max int) (slice, error) {
	val := &apperr.Validation{}
	check := func(field string, n *int) {
		if n != nil && (*n < 0 || *n > max) {
			val.Add(field, "must be between 0 and %d", max)
		}
	}
	check("first", w.First)
	check("last", w.Last)
	if w.First != nil && w.Last != nil {
		val.Add("last", "cannot be combined with first")
	}
	// Start comes from a page number (REST's "page").
	if w.Start < 0 || w.Start > 1<<40 {
		val.Add("page", "is out of range")
	}
	if w.Start > 0 && (w.After != nil || w.Before != nil || w.Last != nil) {
		val.Add("page", "cannot be combined with a cursor or last")
	}
	if err := val.Err(); err != nil {
		return slice{}, err
	}
	sl := slice{offset: w.Start, backward: w.Last != nil, size: def, after: w.After != nil, before: w.Before != nil}
	switch {
	case w.First != nil:
		sl.size = *w.First
	case w.Last != nil:
		sl.size = *w.Last
	}
	sl.limit = sl.size + 1
	for _, c := range []struct {
		field string
		at    *Cursor
		// past: rows after the cursor in the list's order (after), or
		// before it (before).
		past bool
	}{{"after", w.After, true}, {"before", w.Before, false}} {
		if c.at == nil {
			continue
		}
		p, err := c.at.decode(c.field, k.scope)
		if err != nil {
			return slice{}, err
		}
		if keyKind(p.key) != k.keyKind() {
			return slice{}, apperr.Invalid(c.field, "is not a cursor returned by this API")
		}
		sl.bounds = append(sl.bounds, k.beyond(p, c.past))
	}
	desc := k.desc != sl.backward
	sl.order = func(s *sql.Selector) {
		dir := sql.Asc
		if desc {
			dir = sql.Desc
		}
		if k.unique {
			s.OrderBy(dir(s.C(k.column)))
			return
		}
		s.OrderBy(dir(s.C(k.column)), dir(s.C("id")))
	}
	return sl, nil
}

// keyKind is the kind of sort key the list's column holds: 't' (times),
// 'i' (an event's version) or 's' (texts), as a cursor spells it.
func (k keyset[T]) keyKind() byte {
	switch k.column {
	case "created_at", "due_at":
		return 't'
	case "version":
		return 'i'
	}
	return 's'
}

// keyKind is the kind of a decoded cursor's key.
func keyKind(key any) byte {
	switch key.(type) {
	case time.Time:
		return 't'
	case int64:
		return 'i'
	}
	return 's'
}

// beyond is the predicate of the rows past p: after it in the list's order
// when later, else before it. A row value comparison, so that both
// databases bound the index range with it.
func (k keyset[T]) beyond(p position, later bool) func(*sql.Selector) {
	op := " > "
	if later == k.desc {
		op = " < "
	}
	return func(s *sql.Selector) {
		s.Where(sql.P(func(b *sql.Builder) {
			if k.unique {
				b.WriteString(s.C(k.column) + op).Arg(p.key)
				return
			}
			b.WriteString("(" + s.C(k.column) + ", " + s.C("id") + ")" + op + "(")
			b.Args(p.key, p.id)
			b.WriteString(")")
		}))
	}
}

// finish makes the page of the rows read for sl (in sl's order, at most
// sl.limit): in the list's order, at most sl.size, and where it sits.
// hasPreviousPage going forward (and hasNextPage going back) says whether
// the window started at a cursor or an offset: a row at or before it
// existed when the cursor was made (docs/api.md).
func (k keyset[T]) finish(sl slice, rows []*T) ([]*T, PageInfo) {
	more := len(rows) > sl.size
	if more {
		rows = rows[:sl.size]
	}
	if !sl.backward {
		return rows, PageInfo{HasNextPage: more, HasPreviousPage: sl.after || sl.offset > 0}
	}
	for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
		rows[i], rows[j] = rows[j], rows[i]
	}
	return rows, PageInfo{HasPreviousPage: more, HasNextPage: sl.before}
}

// cursor is the cursor of row r.
func (k keyset[T]) cursor(r *T) Cursor {
	return encodeCursor(k.scope, k.key(r), k.id(r))
}
