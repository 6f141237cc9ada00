package rest_test

import (
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/rest"
)

// TestMalformedParameterNamesAreQuotedWholeRunes: the error naming a
// malformed parameter quotes at most 64 bytes of its name, cut on a rune
// boundary, and valid UTF-8 even when the name's escapes are not.
func TestMalformedParameterNamesAreQuotedWholeRunes(t *testing.T) {
	t.Parallel()
	const maxQuoted = 64
	twoByteRunes := "a" + strings.Repeat("é", 40) // the cut at 64 falls inside an é
	for _, tc := range []struct {
		name, rawName, want string
	}{
		{"cut inside a rune", url.QueryEscape(twoByteRunes), "a" + strings.Repeat("é", 31) + "…"},
		{"three-byte runes", url.QueryEscape(strings.Repeat("€", 30)), strings.Repeat("€", 21) + "…"},
		{"invalid escape bytes", "%FF" + url.QueryEscape(twoByteRunes), "\uFFFDa" + strings.Repeat("é", 30) + "…"},
		{"short", url.QueryEscape("é"), "é"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := rest.CheckQuery(tc.rawName + "=1;")
			e := apperr.From(err)
			if e.Code != apperr.ValidationFailed || len(e.Fields) != 1 {
				t.Fatalf("%v, want validation_failed naming one field", err)
			}
			got := e.Fields[0].Field
			if !utf8.ValidString(got) || len(strings.TrimSuffix(got, "…")) > maxQuoted || got != tc.want {
				t.Fatalf("field %q (%d bytes), want %q: valid UTF-8, at most %d bytes before …", got, len(got), tc.want, maxQuoted)
			}
		})
	}
}
