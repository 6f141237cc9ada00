package schema

import "regexp"

// workspaceKey is 2–10 upper-case ASCII letters.
var workspaceKey = regexp.MustCompile(`^[A-Z]{2,10}$`)
