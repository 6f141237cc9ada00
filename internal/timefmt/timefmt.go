// Package timefmt is the one place timestamps are parsed from and formatted
// for clients, so that GraphQL and REST agree to the character.
package timefmt

import (
	"errors"
	"strings"
	"time"
)

// Layout is the wire shape of docs/contract.md: UTC with milliseconds, e.g. 2026-01-02T15:04:05.000Z.
const Layout = "2006-01-02T15:04:05.000Z"

// Format renders t in Layout, converting to UTC.
func Format(t time.Time) string { return t.UTC().Format(Layout) }

// AppendFormat appends Layout's rendering of t to b, for allocation-free encoders.
// It writes the digits itself for years 0–9999 (every time Parse accepts, and
// every stored one): time.Time.AppendFormat interprets the layout on every
// call, and a list page formats hundreds of timestamps. Other years take
// AppendFormat's own path, so the output is always exactly its output
// (TestAppendFormatMatchesTime).
func AppendFormat(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, Layout)
	}
	hour, minute, sec := t.Clock()
	ms := t.Nanosecond() / 1e6 // Layout's .000 truncates, as time's does
	return append(b,
		byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+int(month)/10), byte('0'+int(month)%10), '-',
		byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':',
		byte('0'+minute/10), byte('0'+minute%10), ':',
		byte('0'+sec/10), byte('0'+sec%10), '.',
		byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}

// ErrInvalid is returned for text that is not an accepted timestamp.
var ErrInvalid = errors.New("must be an RFC 3339 timestamp (e.g. 2026-01-02T15:04:05.000Z) or a date (YYYY-MM-DD)")

// Earliest and Latest bound the instants Parse accepts. A time before 1970 is
// almost always a client's mistake (0001-01-01T00:00:00Z is the zero value
// of Go's time.Time and of .NET's DateTime, 1900-01-01 a spreadsheet's), and
// one after 9999 has no four-digit year for Layout. Accepting the zero time
// would also make it indistinguishable from an absent value downstream.
var (
	Earliest = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	Latest   = time.Date(9999, 12, 31, 23, 59, 59, 999_999_000, time.UTC)
)

// ErrOutOfRange is returned for a well-formed timestamp outside
// [Earliest, Latest].
var ErrOutOfRange = errors.New("must be a time from 1970-01-01 to 9999-12-31 (UTC)")

// Parse accepts RFC 3339 with or without a fraction and with any offset, or a
// bare date (midnight UTC), and returns UTC truncated to microseconds, the
// precision both databases keep. Errors: ErrInvalid, ErrOutOfRange.
func Parse(s string) (time.Time, error) {
	if len(s) > 64 {
		return time.Time{}, ErrInvalid
	}
	// RFC 3339 allows lower-case t and z; Go's parser does not.
	s = strings.ToUpper(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return normalize(t)
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return normalize(t)
	}
	return time.Time{}, ErrInvalid
}

func normalize(t time.Time) (time.Time, error) {
	t = t.UTC().Truncate(time.Microsecond)
	if t.Before(Earliest) || t.After(Latest) {
		return time.Time{}, ErrOutOfRange
	}
	return t, nil
}
