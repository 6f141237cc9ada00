package auth

import "regexp"

// secretShape matches a secret as a JSON string: NewSecret's (with its
// checksum) or an older release's (without).
var secretShape = regexp.MustCompile(`"` + SecretPrefix + `[A-Za-z0-9_-]{43}(?:[0-9A-Za-z]{6})?"`)

// HoldsSecret reports whether a JSON document holds a string shaped like a
// secret, of either format: a response that must never be stored
// (internal/idempotency keeps none).
func HoldsSecret(body []byte) bool { return secretShape.Match(body) }
