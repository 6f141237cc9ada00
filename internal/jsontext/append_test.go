package jsontext_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/procsvc/procsvc/internal/jsontext"
)

// encodeNoHTML is what an encoding/json Encoder with SetEscapeHTML(false)
// writes for s: what REST's bodies hold (middleware.WriteJSON), and what
// GraphQL's data holds before its transport escapes <, > and &.
func encodeNoHTML(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// Every escaping rule of encoding/json's strings, and the bytes it repairs.
var stringSamples = []string{
	"", "plain", `quote " and backslash \`, "\b\f\n\r\t", "\x00\x01\x1f\x7f",
	"<html> & 'apostrophes'", "unicode é 日本 🎉", "\u2028 and \u2029",
	"invalid \xff\xfe utf-8 \xc3\x22 split", "\xc3", "\xe2\x80", "\xe2\x80\xa8x", "\xed\xa0\x80 (a surrogate)",
	"\xf4\x90\x80\x80 (past U+10FFFF)", "trailing \\", `"`,
}

func TestAppendString(t *testing.T) {
	for _, s := range stringSamples {
		if got, want := jsontext.AppendString(nil, s), encodeNoHTML(t, s); !bytes.Equal(got, want) {
			t.Errorf("AppendString(%q) = %s; encoding/json writes %s", s, got, want)
		}
	}
	// It appends: what b holds stays.
	if got := string(jsontext.AppendString([]byte(`{"a":`), "x")); got != `{"a":"x"` {
		t.Errorf("AppendString after a prefix = %s", got)
	}
}

// FuzzAppendString holds AppendString to encoding/json, byte for byte.
func FuzzAppendString(f *testing.F) {
	for _, s := range stringSamples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := jsontext.AppendString(nil, s), encodeNoHTML(t, s); !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q) = %s; encoding/json writes %s", s, got, want)
		}
	})
}

func BenchmarkAppendString(b *testing.B) {
	s := "Check the valve <A-3> & log its pressure, then close the line — twice.\nSee “the manual”."
	buf := make([]byte, 0, 256)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		buf = jsontext.AppendString(buf[:0], s)
	}
}
