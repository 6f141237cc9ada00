package database

import (
	"fmt"
	"strings"
	"time"
)

// Time scans a time column into *T for the hand-written reads that select
// it, on SQLite, as an expression (+"created_at"): SQLite then gives the
// column no declared type, so modernc.org/sqlite hands over the stored
// text instead of parsing it itself, which it does by trying the layout of
// time.Time's String first, a failed parse and an allocation for every
// value procsvc writes (_time_format=sqlite). Time parses the text as the
// driver would, the layout procsvc writes first; PostgreSQL's time.Time
// is taken as it is. Text no layout parses, and any other type, is an
// error, as scanning it into a time.Time is.
type Time struct{ T *time.Time }

// Scan implements sql.Scanner.
func (f Time) Scan(src any) error {
	switch s := src.(type) {
	case time.Time:
		*f.T = s
		return nil
	case string:
		if t, ok := parseSQLiteTime(s); ok {
			*f.T = t
			return nil
		}
		return fmt.Errorf("Scan: %q is not a time", s)
	}
	return fmt.Errorf("Scan: unable to scan type %T into time.Time", src)
}

// NullTime is Time for a nullable column: Valid is false for NULL.
type NullTime struct {
	Time  time.Time
	Valid bool
}

// Scan implements sql.Scanner.
func (n *NullTime) Scan(src any) error {
	if src == nil {
		*n = NullTime{}
		return nil
	}
	n.Valid = true
	return Time{T: &n.Time}.Scan(src)
}

// sqliteTimeLayouts are the layouts modernc.org/sqlite (v1.61) reads a
// DATETIME column's text with, in its order, after time.Time's String
// layout (sqliteStringLayout); the first is what _time_format=sqlite
// writes.
var sqliteTimeLayouts = [...]string{
	"2006-01-02 15:04:05.999999999-07:00",
	"2006-01-02T15:04:05.999999999-07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04",
	"2006-01-02T15:04",
	"2006-01-02",
}

const sqliteStringLayout = "2006-01-02 15:04:05.999999999 -0700 MST"

// parseSQLiteTime is what the driver makes of s: a text no two of its
// layouts both parse, so trying procsvc's own first gives the same time.
func parseSQLiteTime(s string) (time.Time, bool) {
	ts, _ := strings.CutSuffix(s, "Z")
	if t, ok := parseWritten(ts); ok {
		return t, true
	}
	if t, err := time.Parse(sqliteTimeLayouts[0], ts); err == nil {
		return t, true
	}
	str := s
	if x := strings.Index(s, "m="); x > 0 {
		str = s[:x] // a monotonic reading, as time.Time's String writes one
	}
	if t, err := time.Parse(sqliteStringLayout, strings.TrimSpace(str)); err == nil {
		return t, true
	}
	for _, layout := range sqliteTimeLayouts[1:] {
		if t, err := time.Parse(layout, ts); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// parseWritten is time.Parse(sqliteTimeLayouts[0], s) for the text that
// layout writes, "2006-01-02 15:04:05[.fraction]±07:00", a year of four
// digits and every field in range, without time.Parse's walk of the
// layout; anything else it leaves to time.Parse (ok false). The location
// is time.Parse's: Local where Local has the offset at that instant, else
// a fixed zone without a name.
func parseWritten(s string) (time.Time, bool) {
	const shortest = len("2006-01-02 15:04:05+07:00")
	if len(s) < shortest || s[4] != '-' || s[7] != '-' || s[10] != ' ' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	digits := func(from, to int) (int, bool) {
		n := 0
		for i := from; i < to; i++ {
			c := s[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	year, ok1 := digits(0, 4)
	month, ok2 := digits(5, 7)
	day, ok3 := digits(8, 10)
	hour, ok4 := digits(11, 13)
	minute, ok5 := digits(14, 16)
	second, ok6 := digits(17, 19)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 || month < 1 || month > 12 || day < 1 ||
		day > time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day() || hour > 23 || minute > 59 || second > 59 {
		return time.Time{}, false
	}
	i, nsec := 19, 0
	if s[i] == '.' {
		i++
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		n := i - start
		if n == 0 || n > 9 {
			return time.Time{}, false
		}
		nsec, _ = digits(start, i)
		for ; n < 9; n++ {
			nsec *= 10
		}
	}
	if len(s)-i != len("+07:00") || (s[i] != '+' && s[i] != '-') || s[i+3] != ':' {
		return time.Time{}, false
	}
	zh, ok1 := digits(i+1, i+3)
	zm, ok2 := digits(i+4, i+6)
	if !ok1 || !ok2 || zh > 24 || zm > 59 {
		return time.Time{}, false
	}
	offset := zh*3600 + zm*60
	if s[i] == '-' {
		offset = -offset
	}
	t := time.Date(year, time.Month(month), day, hour, minute, second, nsec, time.UTC).Add(-time.Duration(offset) * time.Second)
	if _, local := t.In(time.Local).Zone(); local == offset {
		return t.In(time.Local), true
	}
	return t.In(time.FixedZone("", offset)), true
}
