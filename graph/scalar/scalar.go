// Package scalar marshals procsvc's GraphQL scalars: Time in docs/contract.md's
// millisecond UTC shape and ID for UUID-typed fields.
package scalar

import (
	"io"
	"strconv"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/timefmt"
)

// MarshalTime writes t as YYYY-MM-DDTHH:mm:ss.sssZ.
func MarshalTime(t time.Time) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) {
		var buf [len(timefmt.Layout) + 2]byte
		b := append(buf[:0], '"')
		b = timefmt.AppendFormat(b, t)
		b = append(b, '"')
		_, _ = w.Write(b)
	})
}

// UnmarshalTime accepts what timefmt.Parse accepts.
func UnmarshalTime(v any) (time.Time, error) {
	s, ok := v.(string)
	if !ok {
		return time.Time{}, apperr.New(apperr.ValidationFailed, "a Time must be a string: %s", timefmt.ErrInvalid)
	}
	t, err := timefmt.Parse(s)
	if err != nil {
		return time.Time{}, apperr.New(apperr.ValidationFailed, "invalid Time %s: %s", strconv.Quote(truncate(s)), err)
	}
	return t, nil
}

// MarshalUUID writes id in its canonical string form.
func MarshalUUID(id uuid.UUID) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) {
		var buf [38]byte
		buf[0] = '"'
		copy(buf[1:], id.String())
		buf[37] = '"'
		_, _ = w.Write(buf[:])
	})
}

// UnmarshalUUID parses a canonical UUID string.
func UnmarshalUUID(v any) (uuid.UUID, error) {
	s, ok := v.(string)
	if !ok {
		return uuid.Nil, apperr.New(apperr.ValidationFailed, "an ID must be a string")
	}
	id, err := ids.Parse(s)
	if err != nil {
		return uuid.Nil, apperr.New(apperr.ValidationFailed, "invalid ID %s", strconv.Quote(truncate(s)))
	}
	return id, nil
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
