package database

import (
	"fmt"
	"strings"
	"time"
)

// Packed columns, on SQLite: a hand-written read selects a row's short
// texts of fixed form (UUIDs, times, enum values, integers) as one text,
// joined by PackSeparator, rather than as a column each. modernc.org/sqlite
// makes a Go string of every text column of every row and boxes it in an
// interface, two allocations and a round of calls into the engine each; a
// nested page's procedures have nine such columns and its comments three
// (docs/performance.md, "Packed columns"). Free text (names, comment
// texts) is never packed: it may hold the separator.

// PackSeparator separates the fields of a packed column; no UUID, time
// text, enum value or integer holds it.
const PackSeparator = '|'

// PackSQLite is the SQLite expression of exprs as one text, joined by
// PackSeparator: each expression whose nullable[i] is set is ” when NULL
// (concat_ws leaves a NULL out, which would shift the fields after it).
// concat_ws sizes its result once; a chain of || grows it at every step,
// an allocation of the engine's each (most of the packing's cost).
func PackSQLite(exprs []string, nullable []bool) string {
	var b strings.Builder
	b.WriteString("concat_ws('" + string(PackSeparator) + "'")
	for i, e := range exprs {
		b.WriteString(", ")
		if nullable[i] {
			b.WriteString("ifnull(" + e + ", '')")
			continue
		}
		b.WriteString(e)
	}
	b.WriteString(")")
	return b.String()
}

// Unpack splits packed into len(fields) fields, each a part of packed (no
// copy). A text of another number of fields is an error.
func Unpack(packed string, fields []string) error {
	for i := range fields {
		if i == len(fields)-1 {
			if strings.IndexByte(packed, PackSeparator) >= 0 {
				return fmt.Errorf("database: packed column of more than %d fields", len(fields))
			}
			fields[i] = packed
			return nil
		}
		f, rest, ok := strings.Cut(packed, string(PackSeparator))
		if !ok {
			return fmt.Errorf("database: packed column of %d fields, want %d", i+1, len(fields))
		}
		fields[i], packed = f, rest
	}
	return nil
}

// TimeText is the time of a DATETIME column's stored text, read as
// modernc.org/sqlite reads the column (Time).
func TimeText(s string) (time.Time, error) {
	if t, ok := parseSQLiteTime(s); ok {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("database: %q is not a time", s)
}
