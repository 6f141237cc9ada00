package core

import (
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/apperr"
)

func intp(n int) *int { return &n }

func curp(c Cursor) *Cursor { return &c }

// rawCursor encodes arbitrary text the way CursorAt does, to forge cursors.
func rawCursor(s string) *Cursor {
	return curp(Cursor(base64.RawURLEncoding.EncodeToString([]byte(s))))
}

func TestCursorRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		offset int
	}{
		{"zero", 0},
		{"one", 1},
		{"page boundary", 99},
		{"large", 123456789},
		{"largest accepted", 1 << 40},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := CursorAt(tc.offset)
			if strings.ContainsAny(string(c), "+/=") {
				t.Fatalf("cursor %q is not URL-safe unpadded base64", c)
			}
			got, err := c.Offset("after")
			if err != nil {
				t.Fatalf("Offset(%q): %v", c, err)
			}
			if got != tc.offset {
				t.Fatalf("Offset(CursorAt(%d)) = %d", tc.offset, got)
			}
		})
	}
}

func TestCursorInvalid(t *testing.T) {
	tests := []struct {
		name   string
		cursor Cursor
	}{
		{"empty", ""},
		{"not base64", "!!!"},
		{"padded base64", Cursor(base64.URLEncoding.EncodeToString([]byte("o:55")))},
		{"standard alphabet", Cursor(base64.StdEncoding.EncodeToString([]byte("o:??>")))},
		{"wrong prefix", *rawCursor("x:5")},
		{"prefix only", *rawCursor("o:")},
		{"not a number", *rawCursor("o:abc")},
		{"negative", *rawCursor("o:-1")},
		{"plus sign", *rawCursor("o:+1x")},
		{"over the limit", *rawCursor("o:" + strconv.Itoa(1<<40+1))},
		{"overflows int", *rawCursor("o:99999999999999999999999")},
		{"raw offset", "5"},
	}
	for _, tc := range tests {
		for _, field := range []string{"after", "before"} {
			t.Run(tc.name+"/"+field, func(t *testing.T) {
				n, err := tc.cursor.Offset(field)
				assertInvalid(t, err, field)
				if n != 0 {
					t.Fatalf("Offset returned %d with its error", n)
				}
			})
		}
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

func TestWindowResolve(t *testing.T) {
	const def, maxSize = 20, 100
	tests := []struct {
		name      string
		w         Window
		total     int
		want      Page
		wantTotal bool   // totalFn must be called (and only then)
		wantField string // non-empty: validation_failed naming it
	}{
		{name: "empty window is the first default page", w: Window{}, want: Page{0, def}},
		{name: "first", w: Window{First: intp(5)}, want: Page{0, 5}},
		{name: "start", w: Window{First: intp(5), Start: 10}, want: Page{10, 5}},
		{name: "negative start", w: Window{First: intp(5), Start: -5}, wantField: "page"},
		{name: "start past any offset", w: Window{Start: 1<<40 + 1}, wantField: "page"},
		{name: "first zero", w: Window{First: intp(0)}, want: Page{0, 0}},
		{name: "first at max", w: Window{First: intp(maxSize)}, want: Page{0, maxSize}},
		{name: "first after", w: Window{First: intp(5), After: curp(CursorAt(9))}, want: Page{10, 5}},
		{name: "after alone uses default size", w: Window{After: curp(CursorAt(0))}, want: Page{1, def}},
		{name: "first after before clipped", w: Window{First: intp(5), After: curp(CursorAt(9)), Before: curp(CursorAt(12))}, want: Page{10, 2}},
		{name: "first before within", w: Window{First: intp(3), Before: curp(CursorAt(10))}, want: Page{0, 3}},
		{name: "before alone clips default size", w: Window{Before: curp(CursorAt(5))}, want: Page{0, 5}},
		{name: "before not after after is empty", w: Window{After: curp(CursorAt(5)), Before: curp(CursorAt(3))}, want: Page{6, 0}},
		{name: "before equal to after is empty", w: Window{First: intp(4), After: curp(CursorAt(5)), Before: curp(CursorAt(5))}, want: Page{6, 0}},
		{name: "last before", w: Window{Last: intp(3), Before: curp(CursorAt(10))}, want: Page{7, 3}},
		{name: "last before near start", w: Window{Last: intp(3), Before: curp(CursorAt(2))}, want: Page{0, 2}},
		{name: "last before first record", w: Window{Last: intp(3), Before: curp(CursorAt(0))}, want: Page{0, 0}},
		{name: "last after before", w: Window{Last: intp(5), After: curp(CursorAt(3)), Before: curp(CursorAt(6))}, want: Page{4, 2}},
		{name: "last without before uses total", w: Window{Last: intp(3)}, total: 10, want: Page{7, 3}, wantTotal: true},
		{name: "last larger than total", w: Window{Last: intp(20)}, total: 10, want: Page{0, 10}, wantTotal: true},
		{name: "last of empty list", w: Window{Last: intp(5)}, total: 0, want: Page{0, 0}, wantTotal: true},
		{name: "last zero without before", w: Window{Last: intp(0)}, total: 10, want: Page{10, 0}, wantTotal: true},
		{name: "last after without before", w: Window{Last: intp(3), After: curp(CursorAt(8))}, total: 10, want: Page{9, 1}, wantTotal: true},
		{name: "last after past the total", w: Window{Last: intp(3), After: curp(CursorAt(15))}, total: 10, want: Page{16, 0}, wantTotal: true},

		{name: "negative first", w: Window{First: intp(-1)}, wantField: "first"},
		{name: "first over max", w: Window{First: intp(maxSize + 1)}, wantField: "first"},
		{name: "negative last", w: Window{Last: intp(-1)}, wantField: "last"},
		{name: "last over max", w: Window{Last: intp(maxSize + 1)}, wantField: "last"},
		{name: "first with last", w: Window{First: intp(1), Last: intp(1)}, wantField: "last"},
		{name: "invalid after", w: Window{First: intp(1), After: curp("garbage!")}, wantField: "after"},
		{name: "forged after", w: Window{After: rawCursor("o:-5")}, wantField: "after"},
		{name: "invalid before", w: Window{Last: intp(1), Before: curp("garbage!")}, wantField: "before"},
		{name: "forged before", w: Window{Before: rawCursor("p:5")}, wantField: "before"},
		{name: "valid after invalid before", w: Window{After: curp(CursorAt(1)), Before: rawCursor("o:x")}, wantField: "before"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			called := false
			got, err := tc.w.resolve(def, maxSize, func() (int, error) {
				called = true
				return tc.total, nil
			})
			if tc.wantField != "" {
				assertInvalid(t, err, tc.wantField)
				if called {
					t.Fatal("totalFn was called for an invalid window")
				}
				return
			}
			if err != nil {
				t.Fatalf("resolve: %v", err)
			}
			if got != tc.want {
				t.Fatalf("resolve = %+v; want %+v", got, tc.want)
			}
			if called != tc.wantTotal {
				t.Fatalf("totalFn called = %v; want %v (it costs a query)", called, tc.wantTotal)
			}
			if got.Offset < 0 || got.Limit < 0 || got.Limit > maxSize {
				t.Fatalf("resolve gave an out-of-range page %+v", got)
			}
		})
	}
}

func TestWindowResolveTotalError(t *testing.T) {
	boom := apperr.New(apperr.Unavailable, "boom")
	tests := []struct {
		name string
		w    Window
	}{
		{"last", Window{Last: intp(3)}},
		{"last after", Window{Last: intp(3), After: curp(CursorAt(1))}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.w.resolve(20, 100, func() (int, error) { return 0, boom })
			if !errors.Is(err, boom) {
				t.Fatalf("err = %v; want the totalFn error", err)
			}
		})
	}
}

func TestPageInfo(t *testing.T) {
	tests := []struct {
		name          string
		page          Page
		n, total      int
		next, prevous bool
	}{
		{"only page", Page{0, 10}, 3, 3, false, false},
		{"first of several", Page{0, 10}, 10, 25, true, false},
		{"middle", Page{10, 10}, 10, 25, true, true},
		{"last", Page{20, 10}, 5, 25, false, true},
		{"past the end", Page{30, 10}, 0, 25, false, true},
		{"empty list", Page{0, 10}, 0, 0, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := pageInfo(tc.page, tc.n, tc.total)
			want := PageInfo{Offset: tc.page.Offset, HasNextPage: tc.next, HasPreviousPage: tc.prevous}
			if got != want {
				t.Fatalf("pageInfo = %+v; want %+v", got, want)
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
