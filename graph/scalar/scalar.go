// Package scalar marshals procsvc's GraphQL scalars: Time in docs/contract.md's
// millisecond UTC shape, ID for UUID-typed fields, and JSON for values held
// as JSON text.
package scalar

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/textclip"
	"github.com/procsvc/procsvc/internal/timefmt"
)

// MarshalTime writes t as YYYY-MM-DDTHH:mm:ss.sssZ.
func MarshalTime(t time.Time) graphql.Marshaler { return timeValue(t) }

// timeValue and uuidValue are the scalars' marshalers. A list page writes
// hundreds of them: each costs its one boxing into graphql.Marshaler and
// writes straight into the response buffer (see writeQuoted), where a closure
// would add an allocation for its text.
type timeValue time.Time

func (t timeValue) MarshalGQL(w io.Writer) {
	writeQuoted(w, func(b []byte) []byte { return AppendTime(b, time.Time(t)) })
}

// AppendTime appends t in the form MarshalTime quotes.
func AppendTime(b []byte, t time.Time) []byte { return timefmt.AppendFormat(b, t) }

// UnmarshalTime accepts what timefmt.Parse accepts. Its error's message is
// what REST says of the same value in a body (timefmt's errors), which names
// the field: the HTTP face checks every Time value with it before anything
// runs and names the field (graph/gqlhttp, input_values.go).
func UnmarshalTime(v any) (time.Time, error) {
	s, ok := v.(string)
	if !ok {
		return time.Time{}, apperr.New(apperr.ValidationFailed, "%s", timefmt.ErrInvalid)
	}
	t, err := timefmt.Parse(s)
	if err != nil {
		return time.Time{}, apperr.New(apperr.ValidationFailed, "%s", err)
	}
	return t, nil
}

// MarshalUUID writes id in its canonical string form.
func MarshalUUID(id uuid.UUID) graphql.Marshaler { return uuidValue(id) }

type uuidValue uuid.UUID

func (id uuidValue) MarshalGQL(w io.Writer) {
	writeQuoted(w, func(b []byte) []byte { return AppendUUID(b, uuid.UUID(id)) })
}

// AppendUUID appends id's canonical form (what id.String returns), the text
// MarshalUUID quotes.
func AppendUUID(b []byte, id uuid.UUID) []byte { return ids.AppendText(b, id) }

// writeQuoted writes what text appends, as a JSON string (text holds
// nothing to escape), into the spare capacity of gqlgen's response buffer,
// or through a stack buffer for any other writer.
func writeQuoted(w io.Writer, text func([]byte) []byte) {
	quoted := func(b []byte) []byte {
		b = append(b, '"')
		return append(text(b), '"')
	}
	if buf, ok := w.(*bytes.Buffer); ok {
		buf.Write(quoted(buf.AvailableBuffer()))
		return
	}
	var scratch [64]byte
	_, _ = w.Write(quoted(scratch[:0]))
}

// UnmarshalUUID parses a canonical UUID string.
func UnmarshalUUID(v any) (uuid.UUID, error) {
	s, ok := v.(string)
	if !ok {
		return uuid.Nil, apperr.New(apperr.ValidationFailed, "an ID must be a string")
	}
	id, err := ids.Parse(s)
	if err != nil {
		return uuid.Nil, apperr.New(apperr.ValidationFailed, "invalid ID %s", strconv.Quote(textclip.Bytes(s, maxQuoted)))
	}
	return id, nil
}

// maxQuoted bounds, in bytes, the part of a rejected value an error
// message quotes (textclip adds "…" when it cuts, on a rune boundary).
const maxQuoted = 64

// MarshalRawJSON writes v, a JSON value (an event's logged value), as
// itself: compacted (PostgreSQL's jsonb spaces what it returns), with <, >
// and & escaped as in every string of a response; null when v is empty or
// not JSON.
func MarshalRawJSON(v json.RawMessage) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) {
		var compacted, escaped bytes.Buffer
		if len(v) == 0 || json.Compact(&compacted, v) != nil {
			_, _ = io.WriteString(w, "null")
			return
		}
		json.HTMLEscape(&escaped, compacted.Bytes())
		_, _ = w.Write(escaped.Bytes())
	})
}

// UnmarshalRawJSON takes any JSON value as its JSON text (no argument
// takes one; gqlgen needs both directions of a scalar).
func UnmarshalRawJSON(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, apperr.New(apperr.ValidationFailed, "not a JSON value")
	}
	return b, nil
}
