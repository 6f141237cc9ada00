package rest

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/procsvc/procsvc/internal/apperr"
)

// ETag and If-Match are the HTTP form of the core's precondition (an
// expected updatedAt): a record's ETag is its updatedAt to the millisecond,
// like every timestamp clients see, and If-Match sends one back.

// ETag is the entity tag of a record last updated at updatedAt.
func ETag(updatedAt time.Time) string {
	return `"` + strconv.FormatInt(updatedAt.UnixMilli(), 36) + `"`
}

// withETag answers v with the record's ETag, for If-Match on a later write.
func withETag(w http.ResponseWriter, updatedAt time.Time, v any) error {
	w.Header().Set("ETag", ETag(updatedAt))
	return ok(w, v)
}

// parseIfMatch reads an If-Match header: one ETag returned by this API (weak
// or strong; compared strongly), or "*" / nothing for no condition. It
// returns the updatedAt the write expects.
// Errors: validation_failed naming If-Match.
func parseIfMatch(header string) (*time.Time, error) {
	header = strings.TrimSpace(header)
	if header == "" || header == "*" {
		return nil, nil
	}
	tag := strings.TrimPrefix(header, "W/")
	if len(tag) < 3 || len(tag) > 32 || tag[0] != '"' || tag[len(tag)-1] != '"' {
		return nil, apperr.Invalid("If-Match", "must be one ETag returned by this API, or *")
	}
	millis, err := strconv.ParseInt(tag[1:len(tag)-1], 36, 64)
	if err != nil {
		return nil, apperr.Invalid("If-Match", "must be one ETag returned by this API, or *")
	}
	t := time.UnixMilli(millis).UTC()
	return &t, nil
}
