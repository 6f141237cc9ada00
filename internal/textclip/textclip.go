// Package textclip shortens text that is shown or logged but must stay
// bounded, such as user content quoted in a generated document or a
// provider's reply quoted in a log cause.
package textclip

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bytes cuts s to at most max bytes on a rune boundary, adding "…".
func Bytes(s string, max int) string {
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return strings.TrimRightFunc(s[:max], unicode.IsSpace) + "…"
}
