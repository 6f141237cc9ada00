package gqlhttp

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/99designs/gqlgen/graphql"
)

// The response writeData writes is byte for byte what gqlgen's transports
// write for the same response (json.Marshal of graphql.Response).
func TestDirectWriteMatchesJSONMarshal(t *testing.T) {
	for _, s := range []string{
		"", "plain", "<script>alert(1)</script>", "a & b > c", "\u2028\u2029", "€ – …",
		"\xe2", "\xe2\x80", "\xe2\x80\xa8x", "quote \" backslash \\ tab \t", "日本語", "😀",
	} {
		checkDirectWrite(t, s)
	}
}

func FuzzDirectWrite(f *testing.F) {
	f.Add("<&>\u2028")
	f.Add("€")
	f.Fuzz(checkDirectWrite)
}

func checkDirectWrite(t *testing.T, s string) {
	t.Helper()
	// gqlgen writes strings without HTML escaping.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(map[string]any{"procedures": map[string]any{"nodes": []any{map[string]any{"name": s, "n": 1}}}}); err != nil {
		t.Fatal(err)
	}
	data := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	want, err := json.Marshal(&graphql.Response{Data: data})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	w := &directWriter{ResponseWriter: rec}
	w.writeData(data)
	// The transport's own write of the placeholder is dropped.
	_, _ = w.Write([]byte(`{"data":null}`))
	if got := rec.Body.Bytes(); !bytes.Equal(got, want) {
		t.Fatalf("%q: wrote\n%s\nwant\n%s", s, got, want)
	}
}
