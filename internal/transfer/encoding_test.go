package transfer

import (
	"bytes"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/procsvc/procsvc/ent/migrate"
)

// TestPlanCoversTheSchema: every table of ent's schema is planned, each
// after the tables its foreign keys reference, with its key and its
// workspace column.
func TestPlanCoversTheSchema(t *testing.T) {
	if schemaErr != nil {
		t.Fatal(schemaErr)
	}
	pos := map[string]int{}
	for i, tb := range schemaTables {
		pos[tb.name] = i
	}
	for _, st := range migrate.Tables {
		i, ok := pos[st.Name]
		if !ok {
			t.Errorf("table %s of the schema is not planned", st.Name)
			continue
		}
		tb := schemaTables[i]
		if len(tb.columns) != len(st.Columns) {
			t.Errorf("%s: %d columns planned, the schema has %d", st.Name, len(tb.columns), len(st.Columns))
		}
		if tb.workspace < 0 {
			t.Errorf("%s: no workspace column (every table of procsvc's has one)", st.Name)
		}
		for _, fk := range st.ForeignKeys {
			if fk.RefTable.Name != st.Name && pos[fk.RefTable.Name] > i {
				t.Errorf("%s is planned before %s, which it references", st.Name, fk.RefTable.Name)
			}
		}
	}
	if len(schemaTables) != len(migrate.Tables) {
		t.Errorf("%d tables planned, the schema has %d", len(schemaTables), len(migrate.Tables))
	}
	var seq []string
	for _, tb := range schemaTables {
		if tb.sequence {
			seq = append(seq, tb.name)
		}
	}
	if want := []string{"idempotency_budgets", "idempotency_keys", "procedure_tallies"}; !slices.Equal(seq, want) {
		t.Errorf("tables keyed by a sequence: %v, want %v", seq, want)
	}
}

// TestCanonicalEncoding: what each dialect hands back for the same value
// encodes the same; different values (NULL and empty among them) do not.
func TestCanonicalEncoding(t *testing.T) {
	enc := func(k kind, raw any) []byte {
		t.Helper()
		v, err := normalise(k, raw)
		if err != nil {
			t.Fatalf("normalise %T %v: %v", raw, raw, err)
		}
		return appendValue(nil, k, v)
	}
	at := time.Date(2026, 12, 4, 18, 0, 0, 123456000, time.UTC)
	same := []struct {
		name string
		k    kind
		a, b any
	}{
		{"uuid text and bytes", kindUUID, "01A2424E-1580-7DC4-B3B2-0B7AD3994D01", []byte("01a2424e-1580-7dc4-b3b2-0b7ad3994d01")},
		{"a time in two zones", kindTime, at, at.In(time.FixedZone("X", 3600))},
		{"a time as SQLite text", kindTime, at, "2026-12-04 18:00:00.123456+00:00"},
		{"a time by a nanosecond", kindTime, at, at.Add(time.Nanosecond)},
		{"a bool as an integer", kindBool, true, int64(1)},
		{"an integer as text", kindInt, int64(42), []byte("42")},
		{"a float as text", kindFloat, 0.1, []byte("0.1")},
		{"jsonb's spelling", kindJSON, `{"b":1,"a":[1.50,"x"],"c":{"z":null,"y":true}}`, []byte(`{"a": [1.5, "x"], "b": 1, "c": {"y": true, "z": null}}`)},
		{"jsonb's numbers", kindJSON, `[1e2, 0.5]`, `[100, 5E-1]`},
		{"jsonb's strings", kindJSON, `"<é\u00e9>"`, `"<éé>"`},
	}
	for _, c := range same {
		if a, b := enc(c.k, c.a), enc(c.k, c.b); !bytes.Equal(a, b) {
			t.Errorf("%s: %q and %q encode differently", c.name, a, b)
		}
	}
	different := []struct {
		name string
		k    kind
		a, b any
	}{
		{"NULL and empty text", kindString, nil, ""},
		{"NULL and empty bytes", kindBytes, nil, []byte{}},
		{"NULL and JSON null", kindJSON, nil, "null"},
		{"a time by a microsecond", kindTime, at, at.Add(time.Microsecond)},
		{"floats a bit apart", kindFloat, 0.1, math.Nextafter(0.1, 1)},
		{"zero and minus zero", kindFloat, 0.0, math.Copysign(0, -1)},
		{"a JSON number and its string", kindJSON, `1`, `"1"`},
		{"JSON of other keys", kindJSON, `{"a":1}`, `{"b":1}`},
		{"JSON arrays in another order", kindJSON, `[1,2]`, `[2,1]`},
		{"text that is not JSON", kindJSON, `{`, `{ `},
	}
	for _, c := range different {
		if a, b := enc(c.k, c.a), enc(c.k, c.b); bytes.Equal(a, b) {
			t.Errorf("%s: both encode as %q", c.name, a)
		}
	}
	// Two columns: the boundary between values is part of the encoding.
	tb := &table{columns: []column{{"a", kindString}, {"b", kindString}}}
	if bytes.Equal(appendRow(nil, tb, row{values: []any{"ab", "c"}}), appendRow(nil, tb, row{values: []any{"a", "bc"}})) {
		t.Error(`("ab", "c") and ("a", "bc") encode alike`)
	}
	// A hostile exponent is kept as written, not expanded.
	if got := canonicalNumber("1e999999999"); got != "1e999999999" {
		t.Errorf("canonicalNumber of a huge exponent: %q", got)
	}
}

// TestSameDatabase: the spellings of one database are one; others are not.
func TestSameDatabase(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"postgres://u@localhost/db", "postgresql://v:pw@127.0.0.1:5432/db?sslmode=disable", true},
		{"postgres://u@db.example:5433/db", "postgres://u@db.example/db", false},
		{"postgres://u@h/db1", "postgres://u@h/db2", false},
		{"postgres://u@h/?dbname=x", "postgres://u@h/x", true},
		{"sqlite://data/a.db", "file:data/./a.db", true},
		{"sqlite://data/a.db", "data/b.db", false},
		{"sqlite://data/a.db", "postgres://u@h/a", false},
	} {
		if got := same(c.a, c.b); got != c.same {
			t.Errorf("same(%q, %q) = %v", c.a, c.b, got)
		}
	}
}
