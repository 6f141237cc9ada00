package schema

import (
	"fmt"
	"unicode/utf8"
)

// maxChars bounds a string in characters, as the API documents its limits
// (ent's MaxLen counts bytes, which would refuse valid multi-byte names).
// The bounds come from internal/limits, which the core validates against.
func maxChars(n int) func(string) error {
	return func(s string) error {
		if utf8.RuneCountInString(s) > n {
			return fmt.Errorf("longer than %d characters", n)
		}
		return nil
	}
}
