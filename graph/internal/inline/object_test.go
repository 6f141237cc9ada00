package inline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/graph/internal/inline"
	"github.com/procsvc/procsvc/graph/scalar"
)

// The inline writers must write the bytes gqlgen's marshalers write, which
// is what the executor wrote for these fields before they were inlined;
// strings excepted, written as encoding/json writes them (TestStringFields).

func marshal(m graphql.Marshaler) string {
	var b bytes.Buffer
	m.MarshalGQL(&b)
	return b.String()
}

var samples = []string{
	"", "plain", `quote " and backslash \`, "tab\tnewline\nreturn\r", "\x00\x01\x1f\x7f",
	"<html> & 'apostrophes'", "unicode é 日本 🎉 \u2028\u2029", "invalid \xff\xfe utf-8 \xc3\x22 split",
	"\xc3", "trailing \\", `"`,
}

// TestStringFields: a String field is written as encoding/json writes the
// string (without HTML escaping, which is the transport's), by
// jsontext.AppendString — invalid UTF-8 repaired and U+2028 escaped, as
// REST writes them — not as gqlgen's MarshalString.
func TestStringFields(t *testing.T) {
	for _, s := range samples {
		o := inline.New(context.Background(), 0)
		o.String("s", s)
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(map[string]string{"s": s}); err != nil {
			t.Fatal(err)
		}
		if got := marshal(o.Close()); got != strings.TrimSuffix(want.String(), "\n") {
			t.Errorf("String(%q) wrote %s; encoding/json writes %s", s, got, want.String())
		}
	}
}

func FuzzFloat(f *testing.F) {
	for _, v := range []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1.5, 3, 1e20, 1e21, 1e-6, 1e-7, 123456789.125,
		math.MaxFloat64, math.SmallestNonzeroFloat64, math.Inf(1), math.Inf(-1), math.NaN()} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		o := inline.New(context.Background(), 0)
		written := o.Float("f", v)
		got := marshal(o.Close())
		var b bytes.Buffer
		err := graphql.MarshalFloatContext(v).MarshalGQLContext(context.Background(), &b)
		if err != nil {
			// gqlgen refuses it: Float must write nothing and say so.
			if written || got != "{}" {
				t.Fatalf("Float(%v) wrote %s; gqlgen refuses it (%v)", v, got, err)
			}
			return
		}
		if want := `{"f":` + b.String() + `}`; !written || got != want {
			t.Fatalf("Float(%v) = %s, gqlgen writes %s", v, got, want)
		}
	})
}

func TestObject(t *testing.T) {
	id := uuid.MustParse("0192f0c4-7a3b-7c1d-9e2f-a0b1c2d3e4f5")
	at := time.Date(2026, 11, 26, 1, 2, 3, 456789000, time.FixedZone("X", 3600))
	s := "text"
	var nested graphql.Marshaler = graphql.MarshalString("nested")
	o := inline.New(context.Background(), 8)
	o.String("a", `x"y`)
	o.StringPtr("b", nil)
	o.StringPtr("c", &s)
	o.Bool("d", true)
	o.Bool("e", false)
	o.Int("f", -42)
	o.UUID("g", id)
	o.UUIDPtr("h", nil)
	o.UUIDPtr("i", &id)
	o.Time("j", at)
	o.TimePtr("k", nil)
	o.TimePtr("l", &at)
	o.Value("m", graphql.MarshalString("HIGH"))
	o.Field("n", nested)
	o.Field("o", graphql.Null)
	o.Float("p", 0.5)
	o.Field("q", graphql.MarshalInt(7))
	got := marshal(o.Close())
	want := `{"a":` + marshal(graphql.MarshalString(`x"y`)) + `,"b":null,"c":"text","d":true,"e":false,"f":-42,` +
		`"g":` + marshal(scalar.MarshalUUID(id)) + `,"h":null,"i":` + marshal(scalar.MarshalUUID(id)) +
		`,"j":` + marshal(scalar.MarshalTime(at)) + `,"k":null,"l":` + marshal(scalar.MarshalTime(at)) +
		`,"m":"HIGH","n":"nested","o":null,"p":0.5,"q":7}`
	if got != want {
		t.Fatalf("object =\n%s\nwant\n%s", got, want)
	}
	if got := marshal(inline.New(context.Background(), 0).Close()); got != "{}" {
		t.Fatalf("empty object = %s", got)
	}
	// Written twice (gqlgen writes once, but nothing should depend on it).
	if again := marshal(o); again != want {
		t.Fatalf("object written again =\n%s", again)
	}
}

// TestInlinedEdgesAreCountedOnce: an edge's object that Field writes into
// its parent at once (and reuses) counts against the budget exactly as one
// kept as a part does: its bytes once, as written or as sent. A response
// of exactly the bound passes neither way; one byte less passes both.
func TestInlinedEdgesAreCountedOnce(t *testing.T) {
	for _, asSent := range []bool{false, true} {
		// build writes a parent of three edges, each inlined or, wrapped in
		// a marshaler of another type, kept as a part.
		build := func(max int, inlined bool) (string, bool) {
			ctx, b := inline.WithBudget(context.Background(), max, asSent)
			parent := inline.New(ctx, 0)
			parent.String("name", "parent <&>")
			for i, alias := range []string{"category", "doer", "project"} {
				edge := inline.NewEdge(ctx, alias, 0)
				edge.String("id", strings.Repeat("x", i+1))
				edge.String("name", "edge \u2028 <b>")
				var m graphql.Marshaler = edge.Close()
				if !inlined {
					m = graphql.WriterFunc(edge.MarshalGQL)
				}
				parent.Field(alias, m)
			}
			parent.String("after", "tail")
			return marshal(parent.Close()), b.Passed()
		}
		whole, _ := build(1<<20, false)
		if got, _ := build(1<<20, true); got != whole {
			t.Fatalf("asSent %v: inlined edges wrote %s; kept as parts %s", asSent, got, whole)
		}
		size := len(whole)
		if asSent {
			size = len(whole) + 5*strings.Count(whole, "<") + 5*strings.Count(whole, ">") + 5*strings.Count(whole, "&") + 3*strings.Count(whole, "\u2028")
		}
		for _, inlined := range []bool{false, true} {
			if _, passed := build(size, inlined); passed {
				t.Errorf("asSent %v, inlined %v: a response of %d against a bound of %d passed it", asSent, inlined, size, size)
			}
			if _, passed := build(size-1, inlined); !passed {
				t.Errorf("asSent %v, inlined %v: a response of %d against a bound of %d did not pass it", asSent, inlined, size, size-1)
			}
		}
	}
}

// TestInlinedListsAreCountedOnce: a list of closed elements written into
// its parent at once (Field) writes the bytes the list would, and the
// budget counts them once, the list's brackets and commas included: a
// response of exactly the bound does not pass it, one byte less does, as
// written and as sent. Kept as a part instead, the list's punctuation is
// counted when the response is marshalled (MarshalInto).
func TestInlinedListsAreCountedOnce(t *testing.T) {
	for _, asSent := range []bool{false, true} {
		build := func(max int, inlined bool) (string, bool) {
			ctx, b := inline.WithBudget(context.Background(), max, asSent)
			parent := inline.New(ctx, 0)
			parent.String("name", "parent <&>")
			var list graphql.Array
			for i := range 3 {
				e := inline.NewElement(ctx, "items", i, 0)
				e.String("text", strings.Repeat("<y>\u2028", i+1))
				list = append(list, e.Close())
			}
			var m graphql.Marshaler = list
			if !inlined {
				m = graphql.WriterFunc(list.MarshalGQL)
			}
			parent.Field("items", m)
			parent.String("after", "tail")
			out := parent.Close()
			if asSent {
				return marshal(out), b.Passed()
			}
			var buf bytes.Buffer
			inline.MarshalInto(ctx, &buf, out)
			return buf.String(), b.Passed()
		}
		whole, _ := build(1<<20, false)
		if got, _ := build(1<<20, true); got != whole {
			t.Fatalf("asSent %v: the inlined list wrote %s; kept as a part %s", asSent, got, whole)
		}
		// MarshalInto bounds the response as sent, as the budget counted
		// as sent does.
		size := len(whole) + 5*strings.Count(whole, "<") + 5*strings.Count(whole, ">") + 5*strings.Count(whole, "&") + 3*strings.Count(whole, "\u2028")
		for _, inlined := range []bool{false, true} {
			if asSent && !inlined {
				continue // a part's punctuation is counted by MarshalInto, which a response counted as sent skips
			}
			if _, passed := build(size, inlined); passed {
				t.Errorf("asSent %v, inlined %v: a response of %d against a bound of %d passed it", asSent, inlined, size, size)
			}
			if _, passed := build(size-1, inlined); !passed {
				t.Errorf("asSent %v, inlined %v: a response of %d against a bound of %d did not pass it", asSent, inlined, size, size-1)
			}
		}
	}
}
