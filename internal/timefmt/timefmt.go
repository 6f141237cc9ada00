// Package timefmt is the one place timestamps are parsed from and formatted
// for clients, so that GraphQL and REST agree to the character.
package timefmt

import (
	"errors"
	"strings"
	"time"
)

// Layout is SPEC's wire shape: UTC with milliseconds, e.g. 2026-01-02T15:04:05.000Z.
const Layout = "2006-01-02T15:04:05.000Z"

// Format renders t in Layout, converting to UTC.
func Format(t time.Time) string { return t.UTC().Format(Layout) }

// AppendFormat appends Layout's rendering of t to b, for allocation-free encoders.
func AppendFormat(b []byte, t time.Time) []byte { return t.UTC().AppendFormat(b, Layout) }

// ErrInvalid is returned for text that is not an accepted timestamp.
var ErrInvalid = errors.New("must be an RFC 3339 timestamp (e.g. 2026-01-02T15:04:05.000Z) or a date (YYYY-MM-DD)")

// Parse accepts RFC 3339 with or without a fraction and with any offset, or a
// bare date (midnight UTC), and returns UTC truncated to microseconds, the
// precision both databases keep.
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
	if t.Year() < 1 || t.Year() > 9999 {
		return time.Time{}, ErrInvalid
	}
	return t, nil
}
