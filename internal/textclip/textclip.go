// Package textclip shortens text that is shown or logged but must stay
// bounded, such as user content quoted in a generated document, a
// provider's reply quoted in a log cause, a value quoted in an error
// message or a WebSocket close reason. It cuts on rune boundaries only: a
// cut through a multi-byte character would leave invalid UTF-8 (which a
// browser fails a WebSocket for, and which JSON replaces with U+FFFD).
package textclip

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Prefix returns the longest prefix of s of at most max bytes that ends on
// a rune boundary: valid UTF-8 when s is.
func Prefix(s string, max int) string {
	if len(s) <= max {
		return s
	}
	if max <= 0 {
		return ""
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max]
}

// Bytes cuts s to at most max bytes on a rune boundary, adding "…" (three
// bytes more) when it cut.
func Bytes(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return strings.TrimRightFunc(Prefix(s, max), unicode.IsSpace) + "…"
}
