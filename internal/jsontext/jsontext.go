// Package jsontext finds text that is not valid Unicode in a request before
// it is decoded. encoding/json and gqlparser both turn invalid UTF-8 bytes
// and unpaired UTF-16 surrogate escapes ("\ud800") into U+FFFD silently, and
// after decoding a replaced character cannot be told from a real U+FFFD, so
// the check must run on the raw bytes. Both faces share it: REST on its JSON
// bodies, GraphQL on its request body and on the string literals of its
// documents (CheckGraphQL). It also writes JSON strings for both faces'
// hand-written encoders, one way (AppendString, append.go).
package jsontext

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Error locates the first string that is not valid Unicode text.
type Error struct {
	// Path leads to the string: member names (string) and array indexes
	// (int), outermost first. When the bad string is itself a member name,
	// Path ends with that name (decoded, with U+FFFD in place of the bad
	// part). Empty for a document that is a bare string.
	Path []any
	// Offset is the byte offset of the offending byte or escape.
	Offset int
	// Reason says what is wrong, e.g. `\ud800 is an unpaired UTF-16 surrogate`.
	Reason string
}

// Field renders Path as a dotted path: "content.steps[2].text".
func (e *Error) Field() string {
	var b strings.Builder
	for _, p := range e.Path {
		switch v := p.(type) {
		case int:
			b.WriteString("[" + strconv.Itoa(v) + "]")
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(v)
		}
	}
	return b.String()
}

// Name returns the last member name of Path ("" if none): the input field
// a client would recognise, as GraphQL's coercion errors name it.
func (e *Error) Name() string {
	for i := len(e.Path) - 1; i >= 0; i-- {
		if s, ok := e.Path[i].(string); ok {
			return s
		}
	}
	return ""
}

// Message is the client-facing complaint, for a validation error naming
// the field.
func (e *Error) Message() string { return "must be valid UTF-8 text: " + e.Reason }

func (e *Error) Error() string {
	if f := e.Field(); f != "" {
		return f + ": " + e.Message()
	}
	return e.Message()
}

// frame is one open container while scanning.
type frame struct {
	array bool
	index int    // arrays: the current element
	key   []byte // objects: the current member's name, as raw JSON
}

// Check returns an *Error for the first string (member name or value) of
// the JSON document raw that holds bytes that are not UTF-8 or a \uXXXX
// escape of a UTF-16 surrogate that is not half of a pair (a high one
// followed at once by an escaped low one), and nil when every string is
// valid text. raw must be valid JSON (json.Valid); on anything else Check
// may report nothing.
func Check(raw []byte) error {
	var stack []frame
	expectKey := false
	for i := 0; i < len(raw); {
		c := raw[i]
		switch c {
		case '{':
			stack = append(stack, frame{})
			expectKey = true
			i++
		case '[':
			stack = append(stack, frame{array: true})
			i++
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			expectKey = false
			i++
		case ',':
			if n := len(stack); n > 0 {
				if stack[n-1].array {
					stack[n-1].index++
				} else {
					expectKey = true
				}
			}
			i++
		case '"':
			end, off, reason := scanString(raw, i)
			if n := len(stack); expectKey && n > 0 && !stack[n-1].array {
				// A member name: the path of a bad one ends with it.
				stack[n-1].key = raw[i:end]
				expectKey = false
			}
			if reason != "" {
				return &Error{Path: path(stack), Offset: off, Reason: reason}
			}
			i = end
		default:
			i++
		}
	}
	return nil
}

// path renders the open containers as a path: each object's current member
// name, each array's current index.
func path(stack []frame) []any {
	out := make([]any, 0, len(stack))
	for _, f := range stack {
		if f.array {
			out = append(out, f.index)
			continue
		}
		var name string
		_ = json.Unmarshal(f.key, &name) // U+FFFD where the name itself is bad
		out = append(out, name)
	}
	return out
}

// scanString scans the JSON string starting at raw[start] (its opening
// quote) and returns the index just past its closing quote and, for the
// first problem found, its offset and a reason.
func scanString(raw []byte, start int) (end, off int, reason string) {
	i := start + 1
	for i < len(raw) {
		c := raw[i]
		switch {
		case c == '"':
			return i + 1, off, reason
		case c == '\\':
			if i+1 >= len(raw) {
				return len(raw), off, reason
			}
			if raw[i+1] != 'u' {
				i += 2
				continue
			}
			n, o, why, ok := unicodeEscape(raw, i)
			if !ok {
				i += 2
				continue
			}
			if why != "" && reason == "" {
				off, reason = o, why
			}
			i += n
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				if reason == "" {
					off, reason = i, fmt.Sprintf("byte 0x%02x is not UTF-8", c)
				}
			}
			i += size
		}
	}
	return len(raw), off, reason
}

// unicodeEscape reads the \uXXXX escape at src[at]: n is the bytes it
// spans (12 for a surrogate pair, checked by surrogate), off and reason the
// problem of a lone surrogate, and ok false when no four hex digits follow.
func unicodeEscape[T ~string | ~[]byte](src T, at int) (n, off int, reason string, ok bool) {
	r, ok := hex4(src, at+2)
	switch {
	case !ok:
		return 0, 0, "", false
	case r >= 0xD800 && r <= 0xDFFF:
		if off, reason = surrogate(src, at, r); reason == "" {
			return 12, 0, "", true
		}
	}
	return 6, off, reason, true
}

// escapeAt reads a \uXXXX escape at raw[i].
func escapeAt[T ~string | ~[]byte](raw T, i int) (rune, bool) {
	if i+1 >= len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
		return 0, false
	}
	return hex4(raw, i+2)
}

// hex4 reads four hex digits at raw[i].
func hex4[T ~string | ~[]byte](raw T, i int) (rune, bool) {
	if i+4 > len(raw) {
		return 0, false
	}
	var r rune
	for k := i; k < i+4; k++ {
		c := raw[k]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
