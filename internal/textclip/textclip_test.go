package textclip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBytes(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"one two three", 8, "one two…"},
		{"one two three", 4, "one…"}, // the space before the cut goes
		{"héllo", 2, "h…"},           // é is two bytes: not split
		{"éé", 1, "…"},
		{"", 0, ""},
	}
	for _, tt := range tests {
		if got := Bytes(tt.in, tt.max); got != tt.want {
			t.Errorf("Bytes(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

// TestPrefixCutsOnRuneBoundaries cuts strings of 2-, 3- and 4-byte runes
// at every byte count, so that most cuts fall inside a rune: each result is
// valid UTF-8, within the bound, a prefix of the input, and the longest
// such (no whole rune dropped).
func TestPrefixCutsOnRuneBoundaries(t *testing.T) {
	for _, s := range []string{
		"a" + strings.Repeat("é", 70),  // 2-byte runes after an odd byte
		strings.Repeat("€", 50),        // 3-byte
		"ab" + strings.Repeat("😀", 40), // 4-byte
		"x€é😀y",
	} {
		for max := -1; max <= len(s)+1; max++ {
			got := Prefix(s, max)
			if !utf8.ValidString(got) || len(got) > max && max >= 0 || !strings.HasPrefix(s, got) {
				t.Fatalf("Prefix(%q, %d) = %q: not a valid UTF-8 prefix within the bound", s, max, got)
			}
			if rest := s[len(got):]; rest != "" {
				_, size := utf8.DecodeRuneInString(rest)
				if len(got)+size <= max {
					t.Fatalf("Prefix(%q, %d) = %q drops a whole rune it had room for", s, max, got)
				}
			}
		}
	}
}
