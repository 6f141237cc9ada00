// Package ids makes the identifiers of every record: UUIDv7 strings whose last
// byte names the record's kind.
//
// The kind tag lets GraphQL's node(id:) go straight to one table instead of
// probing each, while the id stays a valid, time-ordered UUIDv7 that REST
// clients treat as an opaque string. Seven bits of randomness are given up;
// 66 remain.
package ids

import (
	"errors"

	"github.com/google/uuid"
)

// Kind is the type of record an id names.
type Kind byte

// The kinds. Values are persisted inside ids: never renumber them.
const (
	KindUnknown   Kind = 0
	KindWorkspace Kind = 1
	KindMember    Kind = 2
	KindToken     Kind = 3
	KindProject   Kind = 4
	KindCategory  Kind = 5
	KindProcedure Kind = 6
	KindComment   Kind = 7
	KindEvent     Kind = 8
	KindWebhook   Kind = 9
	KindDelivery  Kind = 10
)

// New returns a fresh UUIDv7 tagged with k.
func New(k Kind) uuid.UUID {
	id := uuid.Must(uuid.NewV7())
	id[15] = byte(k)
	return id
}

// KindOf returns the kind tagged in id, or KindUnknown for ids not made here.
func KindOf(id uuid.UUID) Kind {
	if id.Version() != 7 {
		return KindUnknown
	}
	k := Kind(id[15])
	if k > KindDelivery {
		return KindUnknown
	}
	return k
}

// Generator returns a function that makes ids of kind k, for ent defaults.
func Generator(k Kind) func() uuid.UUID {
	return func() uuid.UUID { return New(k) }
}

// ErrMalformed is Parse's error for a string that is not an id.
var ErrMalformed = errors.New("ids: not an id")

// Parse reads an id sent by a client. Only the canonical form this API writes
// is an id: 36 characters, hyphenated (either case). The other spellings
// uuid.Parse also takes (braces, a urn:uuid: prefix, no hyphens) are not, so
// that one record has one id. Every id string a client sends is read here.
func Parse(s string) (uuid.UUID, error) {
	if len(s) != 36 {
		return uuid.Nil, ErrMalformed
	}
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, ErrMalformed
	}
	return id, nil
}

// AppendText appends id's canonical text form (what id.String returns)
// without allocating, for writers of JSON and SQL array literals.
func AppendText(b []byte, id uuid.UUID) []byte {
	const hex = "0123456789abcdef"
	for i, c := range id {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hex[c>>4], hex[c&0x0f])
	}
	return b
}
