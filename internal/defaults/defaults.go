// Package defaults is the one rule of an option left zero: a count, a size
// or a duration that is not positive takes its documented default. Every
// package's Options apply it the same way (graph/live, internal/webhooks,
// internal/idempotency).
package defaults

import "time"

// Positive sets *v to def when *v is not positive: an option left zero (or
// set below zero) gets its default.
func Positive[T int | int64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}
