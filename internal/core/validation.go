package core

// Validation shared by every entity's writes and lists: required text,
// bounds, enumerations and ids, each reporting into an apperr.Validation so
// that one answer names every bad field.

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/limits"
)

// Bounds of free-text fields, in characters: internal/limits, which the ent
// schema enforces too.
const (
	MaxNameLen    = limits.Name
	MaxTitleLen   = limits.Title
	MaxContentLen = limits.Content
	MaxCommentLen = limits.Comment
)

// text validates a required single-line text field: trimmed, non-empty,
// storable, at most max characters.
func text(val *apperr.Validation, field, s string, max int) string {
	s = strings.TrimSpace(s)
	if s == "" {
		val.Add(field, "is required")
		return s
	}
	bounded(val, field, s, max)
	return s
}

// bounded records an error under field when s cannot be stored (see
// storable) or is longer than max characters. s may be empty.
func bounded(val *apperr.Validation, field, s string, max int) {
	if storable(val, field, s) && utf8.RuneCountInString(s) > max {
		val.Add(field, "must be at most %d characters", max)
	}
}

// storable reports a free-text value that PostgreSQL cannot store or compare
// (invalid UTF-8, or a NUL character, which text columns refuse), recording
// the error under field. SQLite would store it, so both databases refuse it
// here alike.
func storable(val *apperr.Validation, field, s string) bool {
	switch {
	case !utf8.ValidString(s):
		val.Add(field, "must be valid UTF-8")
	case strings.ContainsRune(s, 0):
		val.Add(field, "must not contain NUL characters")
	default:
		return true
	}
	return false
}

// searchTerm validates a list's search parameter, trimmed: a
// case-insensitive substring of at most MaxTitleLen characters.
func searchTerm(val *apperr.Validation, s string) string {
	s = strings.TrimSpace(s)
	bounded(val, "search", s, MaxTitleLen)
	return s
}

// oneOf records an error under field unless s is one of allowed.
func oneOf[T ~string](val *apperr.Validation, field, s string, allowed ...T) {
	if !slices.Contains(allowed, T(s)) {
		val.Add(field, "must be one of %s", joinValues(allowed))
	}
}

// joinValues lists enum values for a message: "A, B, C".
func joinValues[T ~string](values []T) string {
	var b strings.Builder
	for i, v := range values {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(v))
	}
	return b.String()
}

// validPriority and validState check a required enum value against the
// values the ent schema declares.
func validPriority(val *apperr.Validation, field, s string) {
	if s == "" {
		val.Add(field, "is required")
		return
	}
	oneOf(val, field, s, procedure.PriorityValues()...)
}

func validState(val *apperr.Validation, field, s string) {
	if s == "" {
		val.Add(field, "is required")
		return
	}
	oneOf(val, field, s, procedure.StateValues()...)
}

// optionalID parses an id field that may be empty.
func optionalID(val *apperr.Validation, field, s string) *uuid.UUID {
	if s == "" {
		return nil
	}
	id, err := ids.Parse(s)
	if err != nil {
		val.Add(field, "must be an id")
		return nil
	}
	return &id
}

func requiredID(val *apperr.Validation, field, s string) uuid.UUID {
	if s == "" {
		val.Add(field, "is required")
		return uuid.Nil
	}
	if id := optionalID(val, field, s); id != nil {
		return *id
	}
	return uuid.Nil
}

// clearableID validates an optional reference: null or "" clears it.
func clearableID(val *apperr.Validation, field string, o Optional[string]) Optional[uuid.UUID] {
	switch {
	case !o.Set:
		return Optional[uuid.UUID]{}
	case o.Value == nil || *o.Value == "":
		return Null[uuid.UUID]()
	}
	if id := optionalID(val, field, *o.Value); id != nil {
		return Some(*id)
	}
	return Optional[uuid.UUID]{}
}

func validCaptureID(val *apperr.Validation, s string) { bounded(val, "captureId", s, MaxTitleLen) }
