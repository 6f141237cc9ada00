package scalar_test

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/graph/scalar"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/timefmt"
)

// onlyWriter hides bytes.Buffer's methods, as any writer but gqlgen's
// response buffer would.
type onlyWriter struct{ io.Writer }

// The marshalers write into gqlgen's *bytes.Buffer and into any other
// writer alike, and append to what the buffer holds.
func TestMarshalersWriteTheContractShape(t *testing.T) {
	id := uuid.MustParse("0192f0c4-7b1a-7c3e-9d2f-a1b2c3d4e5f6")
	at := time.Date(2026, 1, 2, 15, 4, 5, 678_901_000, time.FixedZone("CET", 3600))
	cases := []struct {
		name string
		m    graphql.Marshaler
		want string
	}{
		{"UUID", scalar.MarshalUUID(id), `"` + id.String() + `"`},
		{"NilUUID", scalar.MarshalUUID(uuid.Nil), `"00000000-0000-0000-0000-000000000000"`},
		{"Time", scalar.MarshalTime(at), `"2026-01-02T14:04:05.678Z"`},
		{"ZeroTime", scalar.MarshalTime(time.Time{}), `"` + timefmt.Format(time.Time{}) + `"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			buf := bytes.NewBufferString("[")
			tc.m.MarshalGQL(buf)
			if got := buf.String(); got != "["+tc.want {
				t.Errorf("into *bytes.Buffer: %s, want [%s", got, tc.want)
			}
			var sb strings.Builder
			tc.m.MarshalGQL(onlyWriter{&sb})
			if got := sb.String(); got != tc.want {
				t.Errorf("into another writer: %s, want %s", got, tc.want)
			}
		})
	}
}

// TestRejectedValuesAreQuotedWholeRunes: an error message quotes at most 64
// bytes of a rejected value, cut on a rune boundary. After an odd byte,
// two-byte runes put the 64-byte cut inside one.
func TestRejectedValuesAreQuotedWholeRunes(t *testing.T) {
	const maxQuoted = 64
	long := "a" + strings.Repeat("é", 60)
	for name, unmarshal := range map[string]func(any) error{
		// A Time's error quotes nothing: it says what a time must be, in
		// REST's words (timefmt).
		"ID": func(v any) error { _, err := scalar.UnmarshalUUID(v); return err },
	} {
		t.Run(name, func(t *testing.T) {
			err := unmarshal(long)
			if apperr.CodeOf(err) != apperr.ValidationFailed {
				t.Fatalf("%q: %v, want validation_failed", long, err)
			}
			msg := apperr.From(err).Message
			i := strings.IndexByte(msg, '"')
			if i < 0 {
				t.Fatalf("%q quotes nothing", msg)
			}
			q, err := strconv.QuotedPrefix(msg[i:])
			if err != nil {
				t.Fatalf("%q: %v", msg, err)
			}
			quoted, _ := strconv.Unquote(q)
			cut, clipped := strings.CutSuffix(quoted, "…")
			if !clipped || !utf8.ValidString(quoted) || len(cut) > maxQuoted || len(cut) < maxQuoted-1 || !strings.HasPrefix(long, cut) {
				t.Fatalf("quoted %q (%d bytes before …): want a valid UTF-8 prefix of the value, of %d or %d bytes, then …",
					quoted, len(cut), maxQuoted-1, maxQuoted)
			}
		})
	}
}
