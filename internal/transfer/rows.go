package transfer

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// querier is what reads: a read transaction, or a pool.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// execer is what writes: a batch's transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

const postgres = "postgres"

func quote(name string) string { return `"` + name + `"` }

// param is the n-th (from 1) placeholder of dialect.
func param(dialect string, n int) string {
	if dialect == postgres {
		return "$" + strconv.Itoa(n)
	}
	return "?"
}

// row is one row read, its values normalised (normalise): the same Go
// value whichever dialect it was read from.
type row struct {
	values []any
	// size is what the row holds in memory, roughly: the batch's byte
	// budget counts it.
	size int64
}

func (t *table) keyOf(r row) any { return r.values[t.key] }

// workspaceOf is the workspace a row is verified under.
func (t *table) workspaceOf(r row) string {
	if t.workspace < 0 {
		return "-"
	}
	if s, ok := r.values[t.workspace].(string); ok {
		return s
	}
	return "-"
}

// compareKeys orders two keys as both databases order them: integers by
// value, uuids by their bytes, which is the order of their canonical
// lower-case text (SQLite compares the text, PostgreSQL the bytes).
func compareKeys(a, b any) int {
	switch x := a.(type) {
	case int64:
		return cmp.Compare(x, b.(int64))
	case string:
		return strings.Compare(x, b.(string))
	}
	panic(fmt.Sprintf("transfer: key of type %T", a))
}

func (t *table) columnList() string {
	names := make([]string, len(t.columns))
	for i, c := range t.columns {
		names[i] = quote(c.name)
	}
	return strings.Join(names, ", ")
}

// readPage reads, in key order, at most limit rows of t with a key above
// after (nil: from the first) and not above upto (nil: no bound). It stops
// early once the rows hold budget bytes (at least one row is read, however
// large): keyset pagination, never OFFSET, so that each page costs the
// same wherever it starts.
func readPage(ctx context.Context, q querier, dialect string, t *table, after, upto any, limit int, budget int64) ([]row, error) {
	var (
		where []string
		args  []any
	)
	key := quote(t.columns[t.key].name)
	if after != nil {
		args = append(args, after)
		where = append(where, key+" > "+param(dialect, len(args)))
	}
	if upto != nil {
		args = append(args, upto)
		where = append(where, key+" <= "+param(dialect, len(args)))
	}
	query := "SELECT " + t.columnList() + " FROM " + quote(t.name)
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY " + key + " LIMIT " + strconv.Itoa(limit)
	rs, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", t.name, err)
	}
	defer rs.Close()
	var (
		out  []row
		held int64
		raw  = make([]any, len(t.columns))
		dest = make([]any, len(t.columns))
	)
	for i := range raw {
		dest[i] = &raw[i]
	}
	for rs.Next() {
		if err := rs.Scan(dest...); err != nil {
			return nil, fmt.Errorf("read %s: %w", t.name, err)
		}
		r := row{values: make([]any, len(t.columns)), size: 24}
		for i, c := range t.columns {
			v, err := normalise(c.kind, raw[i])
			if err != nil {
				return nil, fmt.Errorf("read %s, column %s: %w", t.name, c.name, err)
			}
			r.values[i] = v
			r.size += 16 + valueSize(v)
		}
		out = append(out, r)
		if held += r.size; held >= budget {
			break
		}
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", t.name, err)
	}
	return out, nil
}

func valueSize(v any) int64 {
	switch x := v.(type) {
	case string:
		return int64(len(x))
	case []byte:
		return int64(len(x))
	}
	return 8
}

// timeLayouts are the spellings of a time SQLite may hand back as text
// (the driver parses the columns it knows to be times itself).
var timeLayouts = []string{
	"2006-01-02 15:04:05.999999999-07:00",
	time.RFC3339Nano,
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
}

// normalise turns a value as a driver scanned it into the one Go value of
// its kind: nil for NULL; a uuid as its canonical text; a time in UTC; a
// bool; an int64; a float64; []byte; a string (JSON as its text).
func normalise(k kind, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	text := func() (string, bool) {
		switch x := v.(type) {
		case string:
			return x, true
		case []byte:
			return string(x), true
		}
		return "", false
	}
	switch k {
	case kindUUID:
		if b, ok := v.([]byte); ok && len(b) == 16 {
			u, err := uuid.FromBytes(b)
			return u.String(), err
		}
		if s, ok := text(); ok {
			u, err := uuid.Parse(s)
			if err != nil {
				return nil, fmt.Errorf("not a uuid: %q", s)
			}
			return u.String(), nil
		}
	case kindTime:
		if t, ok := v.(time.Time); ok {
			return t.UTC(), nil
		}
		if s, ok := text(); ok {
			for _, l := range timeLayouts {
				if t, err := time.Parse(l, s); err == nil {
					return t.UTC(), nil
				}
			}
			return nil, fmt.Errorf("not a time: %q", s)
		}
	case kindBool:
		switch x := v.(type) {
		case bool:
			return x, nil
		case int64:
			return x != 0, nil
		}
		if s, ok := text(); ok {
			b, err := strconv.ParseBool(s)
			return b, err
		}
	case kindInt:
		switch x := v.(type) {
		case int64:
			return x, nil
		case float64:
			if x == float64(int64(x)) {
				return int64(x), nil
			}
		}
		if s, ok := text(); ok {
			return strconv.ParseInt(s, 10, 64)
		}
	case kindFloat:
		switch x := v.(type) {
		case float64:
			return x, nil
		case int64:
			return float64(x), nil
		}
		if s, ok := text(); ok {
			return strconv.ParseFloat(s, 64)
		}
	case kindBytes:
		switch x := v.(type) {
		case []byte:
			return x, nil
		case string:
			return []byte(x), nil
		}
	case kindString, kindJSON:
		if s, ok := text(); ok {
			return s, nil
		}
	}
	return nil, fmt.Errorf("unexpected %T for a column of kind %d", v, k)
}

// writeValue is v as it is written to dialect. PostgreSQL keeps times to
// the microsecond: rounded here, as the digest rounds them, rather than
// left to the server.
func writeValue(dialect string, k kind, v any) any {
	if t, ok := v.(time.Time); ok && dialect == postgres {
		return t.Round(time.Microsecond)
	}
	return v
}

// appendRow appends the canonical encoding of r to b: per column, 0 for
// NULL, or 1, the length of the value's canonical text and the text. It is
// the same on both dialects for the same data, so that a digest of it
// proves two databases equal.
func appendRow(b []byte, t *table, r row) []byte {
	for i, c := range t.columns {
		b = appendValue(b, c.kind, r.values[i])
	}
	return b
}

func appendValue(b []byte, k kind, v any) []byte {
	if v == nil {
		return append(b, 0)
	}
	text := canonical(k, v)
	b = append(b, 1)
	b = binary.AppendUvarint(b, uint64(len(text)))
	return append(b, text...)
}

// canonical is a value's text for the digest: times as UTC microseconds
// since the epoch, bools as t or f, floats in the shortest form that
// reads back exactly, JSON re-encoded with sorted keys and exact numbers.
func canonical(k kind, v any) []byte {
	switch x := v.(type) {
	case time.Time:
		return strconv.AppendInt(nil, x.Round(time.Microsecond).UnixMicro(), 10)
	case bool:
		if x {
			return []byte("t")
		}
		return []byte("f")
	case int64:
		return strconv.AppendInt(nil, x, 10)
	case float64:
		return strconv.AppendFloat(nil, x, 'g', -1, 64)
	case []byte:
		return x
	case string:
		if k == kindJSON {
			return canonicalJSON(x)
		}
		return []byte(x)
	}
	panic(fmt.Sprintf("transfer: value of type %T", v))
}

// canonicalJSON re-encodes a JSON text so that PostgreSQL's jsonb spelling
// of it and the text as written compare equal: objects with sorted keys
// (the last of duplicates, as jsonb keeps), no spaces, numbers as exact
// rationals (jsonb writes 1e2 as 100). Text that is not JSON is kept as it
// is, marked, so that it still compares byte for byte.
func canonicalJSON(s string) []byte {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return append([]byte("\x00raw:"), s...)
	}
	if _, err := dec.Token(); err != io.EOF {
		return append([]byte("\x00raw:"), s...)
	}
	return appendJSON(nil, v)
}

func appendJSON(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, x)
	case json.Number:
		return append(b, canonicalNumber(string(x))...)
	case string:
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(x)
		return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, e)
		}
		return append(b, ']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, k)
			b = append(b, ':')
			b = appendJSON(b, x[k])
		}
		return append(b, '}')
	}
	panic(fmt.Sprintf("transfer: JSON value of type %T", v))
}

// canonicalNumber is a JSON number as an exact fraction in lowest terms.
// A number whose exponent would make the fraction huge is kept as written.
func canonicalNumber(n string) string {
	if i := strings.IndexAny(n, "eE"); i >= 0 {
		if e, err := strconv.Atoi(strings.TrimPrefix(n[i+1:], "+")); err != nil || e > 400 || e < -400 {
			return n
		}
	}
	r, ok := new(big.Rat).SetString(n)
	if !ok {
		return n
	}
	return r.RatString()
}
