package core

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/internal/apperr"
)

func intp(n int) *int { return &n }

func curp(c Cursor) *Cursor { return &c }

// rawCursor encodes arbitrary text as a cursor is encoded, to forge cursors.
func rawCursor(s string) *Cursor {
	return curp(Cursor(base64.RawURLEncoding.EncodeToString([]byte(s))))
}

// testKeys is the keyset of a list of procedures by createdAt, newest first.
var testKeys = procedureKeyset(ProcedureOrder{Field: SortCreatedAt, Desc: true}, scopeOf("test"))

func TestCursorRoundTrip(t *testing.T) {
	id := uuid.New()
	tests := []struct {
		name string
		key  any
	}{
		{"time", time.Date(2026, 11, 26, 10, 11, 12, 123456789, time.UTC)},
		{"time before 1970", time.Date(1960, 1, 1, 0, 0, 0, 1000, time.UTC)},
		{"text", "Deploy | rollback: stage 2"},
		{"empty text", ""},
		{"unicode text", "Ünïcödé ✓"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := encodeCursor("scope", tc.key, id)
			if strings.ContainsAny(string(c), "+/=") {
				t.Fatalf("cursor %q is not URL-safe unpadded base64", c)
			}
			got, err := c.decode("after", "scope")
			if err != nil {
				t.Fatalf("decode(%q): %v", c, err)
			}
			if got.id != id {
				t.Fatalf("id = %v; want %v", got.id, id)
			}
			if want, ok := tc.key.(time.Time); ok {
				if !got.key.(time.Time).Equal(want) {
					t.Fatalf("key = %v; want %v", got.key, want)
				}
			} else if got.key != tc.key {
				t.Fatalf("key = %q; want %q", got.key, tc.key)
			}
		})
	}
}

func TestCursorInvalid(t *testing.T) {
	id := uuid.New().String()
	tests := []struct {
		name   string
		cursor Cursor
	}{
		{"empty", ""},
		{"not base64", "!!!"},
		{"padded base64", Cursor(base64.URLEncoding.EncodeToString([]byte("k1|" + testKeys.scope + "|" + id + "|t5")))},
		{"an offset cursor of an older release", *rawCursor("o:55")},
		{"wrong version", *rawCursor("k9|" + testKeys.scope + "|" + id + "|t5")},
		{"no key", *rawCursor("k1|" + testKeys.scope + "|" + id + "|")},
		{"unknown key kind", *rawCursor("k1|" + testKeys.scope + "|" + id + "|x5")},
		{"time not a number", *rawCursor("k1|" + testKeys.scope + "|" + id + "|tabc")},
		{"time overflows", *rawCursor("k1|" + testKeys.scope + "|" + id + "|t99999999999999999999999")},
		{"text key on a time sort", *rawCursor("k1|" + testKeys.scope + "|" + id + "|sname")},
		{"not an id", *rawCursor("k1|" + testKeys.scope + "|nope|t5")},
		{"raw offset", "5"},
	}
	for _, tc := range tests {
		for _, field := range []string{"after", "before"} {
			t.Run(tc.name+"/"+field, func(t *testing.T) {
				w := Window{}
				if field == "after" {
					w.After = curp(tc.cursor)
				} else {
					w.Before = curp(tc.cursor)
				}
				_, err := testKeys.plan(w, 20, 100)
				assertInvalid(t, err, field)
			})
		}
	}
}

// A cursor of another list, filter, sort or parent is refused by name.
func TestCursorOfAnotherScope(t *testing.T) {
	p := &ent.Procedure{ID: uuid.New(), CreatedAt: time.Now()}
	other := procedureKeyset(ProcedureOrder{Field: SortCreatedAt, Desc: true}, scopeOf("other"))
	_, err := testKeys.plan(Window{After: curp(other.cursor(p))}, 20, 100)
	assertInvalid(t, err, "after")
	if !strings.Contains(err.Error(), "another list") {
		t.Fatalf("err = %v; want it to say the cursor is of another list", err)
	}
	if _, err := other.plan(Window{After: curp(other.cursor(p))}, 20, 100); err != nil {
		t.Fatalf("own cursor refused: %v", err)
	}
}

func assertInvalid(t *testing.T, err error, field string) {
	t.Helper()
	var ae *apperr.Error
	if !errors.As(err, &ae) {
		t.Fatalf("err = %v; want a validation_failed *apperr.Error", err)
	}
	if ae.Code != apperr.ValidationFailed {
		t.Fatalf("code = %s; want validation_failed (%v)", ae.Code, err)
	}
	for _, f := range ae.Fields {
		if f.Field == field {
			return
		}
	}
	t.Fatalf("fields = %+v; want one naming %q", ae.Fields, field)
}

func TestWindowPlan(t *testing.T) {
	const def, maxSize = 20, 100
	p := &ent.Procedure{ID: uuid.New(), CreatedAt: time.Now()}
	at := curp(testKeys.cursor(p))
	tests := []struct {
		name         string
		w            Window
		size, offset int
		backward     bool
		bounds       int
		wantField    string // non-empty: validation_failed naming it
	}{
		{name: "empty window is the first default page", w: Window{}, size: def},
		{name: "first", w: Window{First: intp(5)}, size: 5},
		{name: "start", w: Window{First: intp(5), Start: 10}, size: 5, offset: 10},
		{name: "first zero", w: Window{First: intp(0)}, size: 0},
		{name: "first at max", w: Window{First: intp(maxSize)}, size: maxSize},
		{name: "first after", w: Window{First: intp(5), After: at}, size: 5, bounds: 1},
		{name: "after and before", w: Window{First: intp(5), After: at, Before: at}, size: 5, bounds: 2},
		{name: "last", w: Window{Last: intp(3)}, size: 3, backward: true},
		{name: "last before", w: Window{Last: intp(3), Before: at}, size: 3, backward: true, bounds: 1},

		{name: "negative start", w: Window{First: intp(5), Start: -5}, wantField: "page"},
		{name: "start past any offset", w: Window{Start: 1<<40 + 1}, wantField: "page"},
		{name: "start with a cursor", w: Window{Start: 5, After: at}, wantField: "page"},
		{name: "start with last", w: Window{Start: 5, Last: intp(2)}, wantField: "page"},
		{name: "negative first", w: Window{First: intp(-1)}, wantField: "first"},
		{name: "first over max", w: Window{First: intp(maxSize + 1)}, wantField: "first"},
		{name: "negative last", w: Window{Last: intp(-1)}, wantField: "last"},
		{name: "last over max", w: Window{Last: intp(maxSize + 1)}, wantField: "last"},
		{name: "first with last", w: Window{First: intp(1), Last: intp(1)}, wantField: "last"},
		{name: "invalid after", w: Window{First: intp(1), After: curp("garbage!")}, wantField: "after"},
		{name: "invalid before", w: Window{Last: intp(1), Before: curp("garbage!")}, wantField: "before"},
		{name: "valid after invalid before", w: Window{After: at, Before: rawCursor("o:x")}, wantField: "before"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sl, err := testKeys.plan(tc.w, def, maxSize)
			if tc.wantField != "" {
				assertInvalid(t, err, tc.wantField)
				return
			}
			if err != nil {
				t.Fatalf("plan: %v", err)
			}
			if sl.size != tc.size || sl.limit != tc.size+1 || sl.offset != tc.offset || sl.backward != tc.backward || len(sl.bounds) != tc.bounds {
				t.Fatalf("plan = size %d limit %d offset %d backward %v bounds %d; want size %d offset %d backward %v bounds %d",
					sl.size, sl.limit, sl.offset, sl.backward, len(sl.bounds), tc.size, tc.offset, tc.backward, tc.bounds)
			}
		})
	}
}

func TestKeysetFinish(t *testing.T) {
	rows := func(n int) []*ent.Procedure {
		out := make([]*ent.Procedure, n)
		for i := range out {
			out[i] = &ent.Procedure{ID: uuid.New(), Name: string(rune('a' + i))}
		}
		return out
	}
	tests := []struct {
		name       string
		sl         slice
		read       int
		n          int
		next, prev bool
		reversed   bool
	}{
		{"forward, more", slice{size: 3, limit: 4}, 4, 3, true, false, false},
		{"forward, last page", slice{size: 3, limit: 4}, 2, 2, false, false, false},
		{"forward after a cursor", slice{size: 3, limit: 4, after: true}, 2, 2, false, true, false},
		{"forward from an offset", slice{size: 3, limit: 4, offset: 6}, 3, 3, false, true, false},
		{"backward, more", slice{size: 3, limit: 4, backward: true}, 4, 3, false, true, true},
		{"backward before a cursor", slice{size: 3, limit: 4, backward: true, before: true}, 1, 1, true, false, true},
		{"empty page with more", slice{size: 0, limit: 1}, 1, 0, true, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			read := rows(tc.read)
			first := read
			if len(first) > 0 {
				first = []*ent.Procedure{read[0]}
			}
			got, info := testKeys.finish(tc.sl, read)
			if len(got) != tc.n || info.HasNextPage != tc.next || info.HasPreviousPage != tc.prev {
				t.Fatalf("finish = %d rows, %+v; want %d, next %v, previous %v", len(got), info, tc.n, tc.next, tc.prev)
			}
			if tc.reversed && len(got) > 0 && got[len(got)-1] != first[0] {
				t.Fatal("a backward read was not put back in the list's order")
			}
		})
	}
}

func TestNextUpdatedAt(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 123_456_000, time.UTC)
	cases := []struct {
		name      string
		prev, now time.Time
		want      time.Time
	}{
		{"LaterMillisecond", base, base.Add(5 * time.Millisecond), base.Add(5 * time.Millisecond)},
		{"SameMillisecond", base, base.Add(300 * time.Microsecond), base.Truncate(time.Millisecond).Add(time.Millisecond)},
		{"ClockBehind", base, base.Add(-time.Second), base.Truncate(time.Millisecond).Add(time.Millisecond)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := nextUpdatedAt(tc.prev, tc.now)
			if !got.Equal(tc.want) || !got.Truncate(time.Millisecond).After(tc.prev.Truncate(time.Millisecond)) {
				t.Fatalf("nextUpdatedAt(%v, %v) = %v, want %v", tc.prev, tc.now, got, tc.want)
			}
		})
	}
}
