package ids_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/internal/ids"
)

var allKinds = []struct {
	name string
	kind ids.Kind
}{
	{"workspace", ids.KindWorkspace},
	{"member", ids.KindMember},
	{"token", ids.KindToken},
	{"project", ids.KindProject},
	{"category", ids.KindCategory},
	{"procedure", ids.KindProcedure},
	{"comment", ids.KindComment},
	{"event", ids.KindEvent},
	{"webhook", ids.KindWebhook},
	{"delivery", ids.KindDelivery},
}

func TestNewKeepsVersionAndKind(t *testing.T) {
	for _, tc := range allKinds {
		t.Run(tc.name, func(t *testing.T) {
			for _, gen := range []struct {
				name string
				fn   func() uuid.UUID
			}{
				{"New", func() uuid.UUID { return ids.New(tc.kind) }},
				{"Generator", ids.Generator(tc.kind)},
			} {
				id := gen.fn()
				if id.Version() != 7 {
					t.Fatalf("%s: version = %d; want 7 (%s)", gen.name, id.Version(), id)
				}
				if id.Variant() != uuid.RFC4122 {
					t.Fatalf("%s: variant = %v; want RFC4122 (%s)", gen.name, id.Variant(), id)
				}
				if got := ids.KindOf(id); got != tc.kind {
					t.Fatalf("%s: KindOf = %d; want %d", gen.name, got, tc.kind)
				}
				// The textual form is what clients see: it must parse back to
				// the same id and the same kind.
				s := id.String()
				back, err := uuid.Parse(s)
				if err != nil {
					t.Fatalf("%s: parse %q: %v", gen.name, s, err)
				}
				if back != id || ids.KindOf(back) != tc.kind {
					t.Fatalf("%s: round trip of %s gave %s kind %d", gen.name, id, back, ids.KindOf(back))
				}
			}
		})
	}
}

func TestNewIsUniqueAndTimeOrdered(t *testing.T) {
	for _, tc := range allKinds {
		t.Run(tc.name, func(t *testing.T) {
			const n = 2000
			seen := make(map[uuid.UUID]bool, n)
			var prev uuid.UUID
			for i := 0; i < n; i++ {
				id := ids.New(tc.kind)
				if seen[id] {
					t.Fatalf("duplicate id %s after %d", id, i)
				}
				seen[id] = true
				// The tag overwrites only the last byte: the timestamp and
				// sequence in the first eight bytes still order the ids.
				if i > 0 && bytes.Compare(id[:8], prev[:8]) <= 0 {
					t.Fatalf("id %s does not sort after %s", id, prev)
				}
				prev = id
			}
		})
	}
}

func TestKindOfForeignIDs(t *testing.T) {
	v7WithTag := func(tag byte) uuid.UUID {
		id := uuid.Must(uuid.NewV7())
		id[15] = tag
		return id
	}
	v4WithTag := func(tag byte) uuid.UUID {
		id := uuid.New()
		id[15] = tag
		return id
	}
	tests := []struct {
		name string
		id   uuid.UUID
		want ids.Kind
	}{
		{"nil uuid", uuid.Nil, ids.KindUnknown},
		{"max uuid", uuid.Max, ids.KindUnknown},
		{"v4 with a procedure tag", v4WithTag(byte(ids.KindProcedure)), ids.KindUnknown},
		{"v7 with tag zero", v7WithTag(0), ids.KindUnknown},
		{"v7 with tag just past the last kind", v7WithTag(byte(ids.KindDelivery) + 1), ids.KindUnknown},
		{"v7 with tag 255", v7WithTag(255), ids.KindUnknown},
		{"v7 with procedure tag", v7WithTag(byte(ids.KindProcedure)), ids.KindProcedure},
		{"v7 with workspace tag", v7WithTag(byte(ids.KindWorkspace)), ids.KindWorkspace},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ids.KindOf(tc.id); got != tc.want {
				t.Fatalf("KindOf(%s) = %d; want %d", tc.id, got, tc.want)
			}
		})
	}
}

func TestKindValuesAreStable(t *testing.T) {
	// Kinds are persisted inside stored ids: renumbering one would make
	// existing ids resolve to the wrong table.
	want := map[string]ids.Kind{
		"unknown": 0, "workspace": 1, "member": 2, "token": 3,
		"project": 4, "category": 5, "procedure": 6, "comment": 7,
	}
	got := map[string]ids.Kind{"unknown": ids.KindUnknown}
	for _, k := range allKinds {
		got[k.name] = k.kind
	}
	for name, w := range want {
		t.Run(name, func(t *testing.T) {
			if got[name] != w {
				t.Fatalf("Kind %s = %d; want %d", name, got[name], w)
			}
		})
	}
}

func TestParse(t *testing.T) {
	id := ids.New(ids.KindProcedure)
	for _, s := range []string{id.String(), strings.ToUpper(id.String())} {
		if got, err := ids.Parse(s); err != nil || got != id {
			t.Fatalf("Parse(%q) = %s, %v; want %s", s, got, err, id)
		}
	}
	for _, s := range []string{
		"", "bob", "PRC-12",
		"{" + id.String() + "}",
		"urn:uuid:" + id.String(),
		strings.ReplaceAll(id.String(), "-", ""),
		id.String()[:35] + "g",
		id.String() + " ",
	} {
		if got, err := ids.Parse(s); !errors.Is(err, ids.ErrMalformed) || got != uuid.Nil {
			t.Fatalf("Parse(%q) = %s, %v; want ErrMalformed", s, got, err)
		}
	}
}
