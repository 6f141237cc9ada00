package jsontext_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/procsvc/procsvc/internal/jsontext"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name   string
		raw    string
		path   []any  // nil: valid
		field  string // Field() of the error
		reason string // a part of Reason
	}{
		{"ascii", `{"name":"Rotate the keys"}`, nil, "", ""},
		{"utf-8 text", `{"name":"Grüße, 東京 😀"}`, nil, "", ""},
		{"real U+FFFD is text", `{"name":"a\ufffdb","raw":"a` + "\uFFFD" + `b"}`, nil, "", ""},
		{"valid surrogate pair", `{"name":"\ud83d\ude00"}`, nil, "", ""},
		{"valid surrogate pair upper case", `{"name":"x\uD83D\uDE00y"}`, nil, "", ""},
		{"escaped backslash before u", `{"name":"\\ud800"}`, nil, "", ""},
		{"escaped backslash twice then real pair", `{"name":"\\\\\ud83d\ude00"}`, nil, "", ""},
		{"bmp escapes", `{"name":"\u00e9\u4e1c\uffff\u0000"}`, nil, "", ""},
		{"numbers and literals", `{"a":[1,-2.5e3,true,false,null],"b":{}}`, nil, "", ""},
		{"empty containers before a string", `[{},[],"ok"]`, nil, "", ""},
		{"bare valid string", `"fine"`, nil, "", ""},

		{"lone high surrogate", `{"name":"\ud800"}`, []any{"name"}, "name", `\ud800 is an unpaired`},
		{"lone low surrogate", `{"name":"\udc00"}`, []any{"name"}, "name", `\udc00 is an unpaired`},
		{"high then non-surrogate escape", `{"name":"\ud83d\u0041"}`, []any{"name"}, "name", `\ud83d`},
		{"high then high", `{"name":"\ud83d\ud83d\ude00"}`, []any{"name"}, "name", `\ud83d`},
		{"reversed pair", `{"name":"\ude00\ud83d"}`, []any{"name"}, "name", `\ude00`},
		{"high at the end", `{"name":"abc\ud83d"}`, []any{"name"}, "name", `\ud83d`},
		{"escaped backslash then lone surrogate", `{"name":"\\\ud800"}`, []any{"name"}, "name", `\ud800`},
		{"invalid byte", "{\"name\":\"a\xffb\"}", []any{"name"}, "name", "byte 0xff"},
		{"truncated sequence", "{\"name\":\"caf\xc3\"}", []any{"name"}, "name", "byte 0xc3"},
		{"utf-8 encoded surrogate", "{\"name\":\"\xed\xa0\x80\"}", []any{"name"}, "name", "byte 0xed"},
		{"overlong encoding", "{\"name\":\"\xc0\xaf\"}", []any{"name"}, "name", "byte 0xc0"},
		{"second field", `{"ok":"fine","state":"x\udfffy"}`, []any{"state"}, "state", `\udfff`},
		{"nested", `{"content":{"steps":[{"text":"ok"},{"text":"\ud800"}]}}`, []any{"content", "steps", 1, "text"}, "content.steps[1].text", `\ud800`},
		{"array after an empty object", `[{},"\ud800"]`, []any{1}, "[1]", `\ud800`},
		{"graphql variables", `{"query":"mutation($in: X!) { f(input: $in) { id } }","variables":{"in":{"name":"\udead"}}}`,
			[]any{"variables", "in", "name"}, "variables.in.name", `\udead`},
		{"bad member name", `{"na\ud800me":"x"}`, []any{"na\uFFFDme"}, "na\uFFFDme", `\ud800`},
		{"bad nested member name", "{\"a\":{\"k\xff\":1}}", []any{"a", "k\uFFFD"}, "a.k\uFFFD", "byte 0xff"},
		{"bare bad string", `"\ud800"`, []any{}, "", `\ud800`},
		{"first of two problems", `{"a":"\ud800","b":"` + "\xff" + `"}`, []any{"a"}, "a", `\ud800`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !json.Valid([]byte(tc.raw)) {
				t.Fatalf("test input is not JSON: %s", tc.raw)
			}
			err := jsontext.Check([]byte(tc.raw))
			if tc.path == nil {
				if err != nil {
					t.Fatalf("Check(%s) = %v, want nil", tc.raw, err)
				}
				return
			}
			var e *jsontext.Error
			if !errors.As(err, &e) {
				t.Fatalf("Check(%s) = %v, want an *Error", tc.raw, err)
			}
			if !reflect.DeepEqual(e.Path, tc.path) {
				t.Errorf("Path = %#v, want %#v", e.Path, tc.path)
			}
			if e.Field() != tc.field {
				t.Errorf("Field() = %q, want %q", e.Field(), tc.field)
			}
			if !strings.Contains(e.Reason, tc.reason) || !strings.HasPrefix(e.Message(), "must be valid UTF-8 text") {
				t.Errorf("Reason %q, Message %q; want a reason with %q", e.Reason, e.Message(), tc.reason)
			}
			if e.Offset < 0 || e.Offset >= len(tc.raw) {
				t.Errorf("Offset %d outside the input", e.Offset)
			}
		})
	}
}

// TestCheckAgreesWithDecoder: a document Check accepts decodes without any
// U+FFFD the input did not spell; one it refuses gains one on decoding (the
// silent replacement the check exists to catch).
func TestCheckAgreesWithDecoder(t *testing.T) {
	for _, raw := range []string{
		`"\ud83d\ude00"`, `"\\ud800"`, `"\ud800"`, `"\udc00x"`, "\"a\xffb\"", `"plain"`, `"\ud800\ud800"`, `"\ud83d\ude00\ude00"`,
	} {
		var s string
		if err := json.Unmarshal([]byte(raw), &s); err != nil {
			t.Fatal(err)
		}
		replaced := strings.ContainsRune(s, '\uFFFD')
		if refused := jsontext.Check([]byte(raw)) != nil; refused != replaced {
			t.Errorf("%s: Check refused=%v but decoding replaced=%v (%q)", raw, refused, replaced, s)
		}
	}
}

func TestErrorName(t *testing.T) {
	for _, tc := range []struct {
		path []any
		name string
	}{
		{[]any{"variables", "in", "name"}, "name"},
		{[]any{"variables", "ids", 2}, "ids"},
		{[]any{"query"}, "query"},
		{[]any{}, ""},
	} {
		if got := (&jsontext.Error{Path: tc.path}).Name(); got != tc.name {
			t.Errorf("Name() of %v = %q, want %q", tc.path, got, tc.name)
		}
	}
}

func TestCheckGraphQL(t *testing.T) {
	tests := []struct {
		name   string
		src    string
		path   []any // nil: valid
		reason string
	}{
		{"no strings", `{ viewer { name } }`, nil, ""},
		{"plain literal", `mutation { createCategory(input: {name: "Ops"}) { id } }`, nil, ""},
		{"utf-8 literal", `mutation { createCategory(input: {name: "Grüße 😀"}) { id } }`, nil, ""},
		{"surrogate pair escape", `mutation { createCategory(input: {name: "\ud83d\ude00"}) { id } }`, nil, ""},
		{"braced escape", `mutation { createCategory(input: {name: "\u{1F600}"}) { id } }`, nil, ""},
		{"escaped backslash", `mutation { createCategory(input: {name: "\\ud800"}) { id } }`, nil, ""},
		{"surrogate escape in a comment", "# \\ud800 \xff\n{ viewer { name } }", nil, ""},
		{"surrogate escape in a block string", `mutation { addComment(input: {procedureId: "x", text: """\ud800"""}) { id } }`, nil, ""},

		{"lone surrogate in an input field", `mutation { createCategory(input: {name: "a\ud800"}) { id } }`, []any{"input", "name"}, `\ud800`},
		{"lone low surrogate in an argument", `{ procedure(id: "\udc00") { id } }`, []any{"id"}, `\udc00`},
		{"second literal", `mutation { createProcedure(input: {name: "ok", content: "x\ude00"}) { id } }`, []any{"input", "content"}, `\ude00`},
		{"in a list", `{ nodes(ids: ["a", "b\ud800"]) { id } }`, []any{"ids", 1}, `\ud800`},
		{"after non-ascii text", `mutation { createCategory(input: {name: "東京", other: "😀\udbff"}) { id } }`, []any{"input", "other"}, `\udbff`},
		{"invalid byte", "mutation { createCategory(input: {name: \"a\xffb\"}) { id } }", []any{"input", "name"}, "byte 0xff"},
		{"invalid byte after invalid bytes in a comment", "# \xfe\xfe\nmutation { createCategory(input: {name: \"\xff\"}) { id } }", []any{"input", "name"}, "byte 0xff"},
		{"invalid byte in a block string", "mutation { addComment(input: {text: \"\"\"a\xffb\"\"\"}) { id } }", []any{"input", "text"}, "byte 0xff"},
		{"variable default", `query($q: String = "\ud800") { procedures(filter: {search: $q}) { totalCount } }`, []any{"q"}, `\ud800`},
		{"directive argument", `{ viewer @include(if: true) { name @skip(if: false) } procedure(id: "ok") @deprecated(reason: "\ud800") { id } }`, []any{"reason"}, `\ud800`},
		{"does not parse", `{ procedure(id: "\ud800" `, []any{"query"}, `\ud800`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := jsontext.CheckGraphQL(tc.src)
			if tc.path == nil {
				if err != nil {
					t.Fatalf("CheckGraphQL(%q) = %v, want nil", tc.src, err)
				}
				return
			}
			var e *jsontext.Error
			if !errors.As(err, &e) {
				t.Fatalf("CheckGraphQL(%q) = %v, want an *Error", tc.src, err)
			}
			if !reflect.DeepEqual(e.Path, tc.path) {
				t.Errorf("Path = %#v, want %#v", e.Path, tc.path)
			}
			if !strings.Contains(e.Reason, tc.reason) {
				t.Errorf("Reason %q, want %q in it", e.Reason, tc.reason)
			}
		})
	}
}

// TestCheckGraphQLAgreesWithParser: a literal CheckGraphQL refuses is one
// gqlparser decodes with a U+FFFD the source did not spell, and one it
// accepts decodes without.
func TestCheckGraphQLAgreesWithParser(t *testing.T) {
	for _, lit := range []string{
		`"\ud83d\ude00"`, `"\\ud800"`, `"\ud800"`, `"\udc00x"`, "\"a\xffb\"", `"plain"`, `"\ud800\ud800"`,
		`"\ud83d\ude00\ude00"`, `"""\ud800"""`, "\"\"\"a\xffb\"\"\"", `"\u{1F600}"`,
	} {
		src := `{ procedure(id: ` + lit + `) { id } }`
		doc, err := parser.ParseQuery(&ast.Source{Input: src})
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		raw := doc.Operations[0].SelectionSet[0].(*ast.Field).Arguments[0].Value.Raw
		replaced := strings.ContainsRune(raw, '\uFFFD')
		if refused := jsontext.CheckGraphQL(src) != nil; refused != replaced {
			t.Errorf("%s: CheckGraphQL refused=%v but gqlparser replaced=%v (%q)", lit, refused, replaced, raw)
		}
	}
}
