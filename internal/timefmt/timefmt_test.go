package timefmt_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/timefmt"
)

func TestParse(t *testing.T) {
	// invalid and outOfRange mark cases that must fail with ErrInvalid and
	// ErrOutOfRange; they are not times Parse can return.
	invalid := time.Date(1, 2, 3, 4, 5, 6, 7, time.FixedZone("invalid", 1))
	outOfRange := time.Date(1, 2, 3, 4, 5, 6, 7, time.FixedZone("outOfRange", 2))
	utc := func(y int, mo time.Month, d, h, mi, s, ns int) time.Time {
		return time.Date(y, mo, d, h, mi, s, ns, time.UTC)
	}
	tests := []struct {
		name string
		in   string
		want time.Time
	}{
		{"utc without fraction", "2026-01-02T15:04:05Z", utc(2026, 1, 2, 15, 4, 5, 0)},
		{"positive offset normalised to utc", "2026-01-02T15:04:05+02:00", utc(2026, 1, 2, 13, 4, 5, 0)},
		{"negative half-hour offset normalised", "2026-01-02T15:04:05-05:30", utc(2026, 1, 2, 20, 34, 5, 0)},
		{"offset crossing midnight", "2026-01-01T01:00:00+03:00", utc(2025, 12, 31, 22, 0, 0, 0)},
		{"milliseconds", "2026-01-02T15:04:05.123Z", utc(2026, 1, 2, 15, 4, 5, 123_000_000)},
		{"one fractional digit", "2026-01-02T15:04:05.5Z", utc(2026, 1, 2, 15, 4, 5, 500_000_000)},
		{"microseconds kept", "2026-01-02T15:04:05.123456Z", utc(2026, 1, 2, 15, 4, 5, 123_456_000)},
		{"nanoseconds truncated to microseconds", "2026-01-02T15:04:05.123456789Z", utc(2026, 1, 2, 15, 4, 5, 123_456_000)},
		{"fraction with offset", "2026-01-02T15:04:05.999999999+01:00", utc(2026, 1, 2, 14, 4, 5, 999_999_000)},
		{"date only is midnight utc", "2026-01-02", utc(2026, 1, 2, 0, 0, 0, 0)},
		{"leap day", "2024-02-29", utc(2024, 2, 29, 0, 0, 0, 0)},
		{"earliest accepted instant", "1970-01-01T00:00:00Z", utc(1970, 1, 1, 0, 0, 0, 0)},
		{"earliest accepted date", "1970-01-01", utc(1970, 1, 1, 0, 0, 0, 0)},
		{"offset brings into range", "1969-12-31T23:00:00-01:00", utc(1970, 1, 1, 0, 0, 0, 0)},
		{"last representable instant", "9999-12-31T23:59:59.999999Z", utc(9999, 12, 31, 23, 59, 59, 999_999_000)},

		{"empty", "", invalid},
		{"garbage", "yesterday", invalid},
		{"no offset", "2026-01-02T15:04:05", invalid},
		{"space instead of T", "2026-01-02 15:04:05Z", invalid},
		{"month 13", "2026-13-01", invalid},
		{"day 30 of february", "2026-02-30", invalid},
		{"not a leap year", "2025-02-29", invalid},
		{"hour 24", "2026-01-02T24:00:00Z", invalid},
		{"surrounding spaces", " 2026-01-02 ", invalid},
		{"unix seconds", "1767366245", invalid},
		{"over 64 characters", "2026-01-02T15:04:05." + strings.Repeat("1", 50) + "Z", invalid},
		{"five-digit year", "10000-01-01T00:00:00Z", invalid},

		{"go's zero time", "0001-01-01T00:00:00Z", outOfRange},
		{"go's zero time as a date", "0001-01-01", outOfRange},
		{"just after go's zero time", "0001-01-01T00:00:00.001Z", outOfRange},
		{"year zero", "0000-01-01T00:00:00Z", outOfRange},
		{"year zero as a date", "0000-06-01", outOfRange},
		{"spreadsheet epoch", "1900-01-01", outOfRange},
		{"a microsecond before 1970", "1969-12-31T23:59:59.999999Z", outOfRange},
		{"offset pushes before 1970", "1970-01-01T00:30:00+01:00", outOfRange},
		{"offset pushes before year 1", "0001-01-01T00:30:00+01:00", outOfRange},
		{"offset pushes past year 9999", "9999-12-31T23:30:00-01:00", outOfRange},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := timefmt.Parse(tc.in)
			if tc.want == invalid || tc.want == outOfRange {
				want := timefmt.ErrInvalid
				if tc.want == outOfRange {
					want = timefmt.ErrOutOfRange
				}
				if !errors.Is(err, want) {
					t.Fatalf("Parse(%q) = %v, %v; want %v", tc.in, got, err, want)
				}
				if !got.IsZero() {
					t.Fatalf("Parse(%q) returned %v with its error; want the zero time", tc.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			if !got.Equal(tc.want) {
				t.Fatalf("Parse(%q) = %v; want %v", tc.in, got, tc.want)
			}
			if got.Location() != time.UTC {
				t.Fatalf("Parse(%q) location = %v; want UTC", tc.in, got.Location())
			}
		})
	}
}

func TestFormat(t *testing.T) {
	plus2 := time.FixedZone("+02:00", 2*60*60)
	minus530 := time.FixedZone("-05:30", -(5*60*60 + 30*60))
	tests := []struct {
		name string
		in   time.Time
		want string
	}{
		{"utc whole seconds get .000", time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC), "2026-01-02T15:04:05.000Z"},
		{"milliseconds", time.Date(2026, 1, 2, 15, 4, 5, 7_000_000, time.UTC), "2026-01-02T15:04:05.007Z"},
		{"sub-millisecond digits dropped", time.Date(2026, 1, 2, 15, 4, 5, 123_999_999, time.UTC), "2026-01-02T15:04:05.123Z"},
		{"positive offset converted", time.Date(2026, 1, 2, 15, 4, 5, 0, plus2), "2026-01-02T13:04:05.000Z"},
		{"negative offset converted across midnight", time.Date(2026, 1, 2, 20, 0, 0, 0, minus530), "2026-01-03T01:30:00.000Z"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := timefmt.Format(tc.in); got != tc.want {
				t.Fatalf("Format = %q; want %q", got, tc.want)
			}
			if got := string(timefmt.AppendFormat([]byte("x="), tc.in)); got != "x="+tc.want {
				t.Fatalf("AppendFormat = %q; want %q", got, "x="+tc.want)
			}
		})
	}
}

func TestFormatParseRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"milliseconds", "2026-01-02T15:04:05.123Z"},
		{"offset", "2026-07-01T00:00:00.500-07:00"},
		{"date", "2026-03-04"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			first, err := timefmt.Parse(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			again, err := timefmt.Parse(timefmt.Format(first))
			if err != nil {
				t.Fatalf("Parse(Format(%v)): %v", first, err)
			}
			if !again.Equal(first) {
				t.Fatalf("round trip changed %v into %v", first, again)
			}
		})
	}
}

// TestAppendFormatMatchesTime holds AppendFormat's hand-written digits to
// time's own rendering of Layout, for times in and out of its fast path
// (years 0–9999), in any zone and at every fraction.
func TestAppendFormatMatchesTime(t *testing.T) {
	zones := []*time.Location{time.UTC, time.FixedZone("east", 5*3600+1800), time.FixedZone("west", -11*3600)}
	times := []time.Time{
		{},
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 2, 15, 4, 5, 123_456_789, time.UTC),
		time.Date(2024, 2, 29, 9, 8, 7, 1_000_000, time.UTC),
		time.Date(2026, 12, 31, 23, 59, 59, 999_000_000, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 6, 15, 12, 0, 0, 0, time.UTC),
		time.Date(123456, 6, 15, 12, 0, 0, 0, time.UTC),
		time.Now(),
	}
	for ns := 0; ns < 1e9; ns += 999_983 {
		times = append(times, time.Date(2026, 3, 4, 5, 6, 7, ns, time.UTC))
	}
	for _, base := range times {
		for _, z := range zones {
			tm := base.In(z)
			want := tm.UTC().Format(timefmt.Layout)
			if got := string(timefmt.AppendFormat([]byte("x"), tm)); got != "x"+want {
				t.Fatalf("AppendFormat(%v) = %q, want %q", tm, got, "x"+want)
			}
			if got := timefmt.Format(tm); got != want {
				t.Fatalf("Format(%v) = %q, want %q", tm, got, want)
			}
		}
	}
}
