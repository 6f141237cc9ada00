package jsontext

import "unicode/utf8"

// AppendString appends s to b as a JSON string, byte for byte as an
// encoding/json Encoder with SetEscapeHTML(false) writes it: ", \ and the
// control characters escaped (\b \f \n \r \t, else \u00xx in lower-case
// hex), bytes that are not UTF-8 replaced by \ufffd, U+2028 and U+2029
// escaped (JavaScript cannot hold them raw in a string literal), and
// everything else — <, > and & included — as it is. FuzzAppendString
// holds it to encoding/json.
//
// Both faces' hand-written encoders write their strings with it: REST's
// procedure shape (rest/encode.go), which must match encoding/json's bytes
// for the rest of its bodies, and GraphQL's inline fields
// (graph/internal/inline). HTML escaping is the transport's: the GraphQL
// transports escape <, > and & as json.Marshal does for every response,
// REST's bodies never do (middleware.WriteJSON).
func AppendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if plain[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// plain marks the ASCII bytes AppendString copies as they are.
var plain = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()
