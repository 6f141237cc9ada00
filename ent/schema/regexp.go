package schema

import (
	"fmt"
	"regexp"
	"unicode/utf8"
)

// workspaceKey is 2–10 upper-case ASCII letters.
var workspaceKey = regexp.MustCompile(`^[A-Z]{2,10}$`)

// maxChars bounds a string in characters, as the API documents its limits
// (ent's MaxLen counts bytes, which would refuse valid multi-byte names).
func maxChars(n int) func(string) error {
	return func(s string) error {
		if utf8.RuneCountInString(s) > n {
			return fmt.Errorf("longer than %d characters", n)
		}
		return nil
	}
}
