package jsontext

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
)

// CheckGraphQL returns an *Error for the first string literal (quoted or
// block) of the GraphQL document src that holds bytes that are not UTF-8 or
// an unpaired \uXXXX surrogate escape, which gqlparser would silently turn
// into U+FFFD; nil when every literal is valid text. The Error's Path names
// the argument and input-object fields the literal is the value of (e.g.
// ["input", "name"]), or is ["query"] when the document does not parse.
// Braced escapes (\u{D800}) are left to gqlparser, which refuses them.
// Variables are JSON: check the request body with Check.
func CheckGraphQL(src string) error {
	off, reason := scanGraphQL(src)
	if reason == "" {
		return nil
	}
	p := literalPath(src, off)
	if p == nil {
		p = []any{"query"}
	}
	return &Error{Path: p, Offset: off, Reason: reason}
}

// scanGraphQL returns the byte offset and reason of the first problem in a
// string literal of src ("" if none).
func scanGraphQL(src string) (int, string) {
	for i := 0; i < len(src); {
		switch c := src[i]; {
		case c == '#':
			for i < len(src) && src[i] != '\n' && src[i] != '\r' {
				i++
			}
		case strings.HasPrefix(src[i:], `"""`):
			j := i + 3
			for j < len(src) && !strings.HasPrefix(src[j:], `"""`) {
				if strings.HasPrefix(src[j:], `\"""`) {
					j += 4
					continue
				}
				if src[j] < utf8.RuneSelf {
					j++
					continue
				}
				r, size := utf8.DecodeRuneInString(src[j:])
				if r == utf8.RuneError && size == 1 {
					return j, fmt.Sprintf("byte 0x%02x is not UTF-8", src[j])
				}
				j += size
			}
			i = j + 3
		case c == '"':
			j := i + 1
		str:
			for j < len(src) {
				switch b := src[j]; {
				case b == '"' || b == '\n' || b == '\r':
					break str
				case b == '\\':
					if strings.HasPrefix(src[j:], `\u`) && !strings.HasPrefix(src[j:], `\u{`) {
						if n, off, reason, ok := unicodeEscape(src, j); ok {
							if reason != "" {
								return off, reason
							}
							j += n
							continue
						}
					}
					j += 2
				case b < utf8.RuneSelf:
					j++
				default:
					r, size := utf8.DecodeRuneInString(src[j:])
					if r == utf8.RuneError && size == 1 {
						return j, fmt.Sprintf("byte 0x%02x is not UTF-8", b)
					}
					j += size
				}
			}
			i = j + 1
		default:
			i++
		}
	}
	return 0, ""
}

// surrogate reports the escape of r at src[at] when it is a surrogate that
// is not the high half of a pair completed by the next escape.
func surrogate[T ~string | ~[]byte](src T, at int, r rune) (int, string) {
	switch {
	case r >= 0xD800 && r < 0xDC00:
		if r2, ok := escapeAt(src, at+6); ok && r2 >= 0xDC00 && r2 <= 0xDFFF {
			return 0, ""
		}
	case r >= 0xDC00 && r <= 0xDFFF:
	default:
		return 0, ""
	}
	return at, fmt.Sprintf(`\u%04x is an unpaired UTF-16 surrogate`, r)
}

// literalPath finds the string value of src's document that covers byte
// offset off and returns its argument path, or nil.
func literalPath(src string, off int) []any {
	doc, err := parser.ParseQuery(&ast.Source{Input: src})
	if err != nil {
		return nil
	}
	// gqlparser positions count runes, an invalid byte as one, as
	// RuneCountInString does.
	w := walker{at: utf8.RuneCountInString(src[:off])}
	for _, op := range doc.Operations {
		for _, vd := range op.VariableDefinitions {
			w.value(vd.DefaultValue, []any{vd.Variable})
			w.directives(vd.Directives)
		}
		w.directives(op.Directives)
		w.selections(op.SelectionSet)
	}
	for _, f := range doc.Fragments {
		w.directives(f.Directives)
		w.selections(f.SelectionSet)
	}
	return w.found
}

type walker struct {
	at    int
	found []any
}

func (w *walker) selections(set ast.SelectionSet) {
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			w.arguments(s.Arguments)
			w.directives(s.Directives)
			w.selections(s.SelectionSet)
		case *ast.InlineFragment:
			w.directives(s.Directives)
			w.selections(s.SelectionSet)
		case *ast.FragmentSpread:
			w.directives(s.Directives)
		}
	}
}

func (w *walker) directives(ds ast.DirectiveList) {
	for _, d := range ds {
		w.arguments(d.Arguments)
	}
}

func (w *walker) arguments(args ast.ArgumentList) {
	for _, a := range args {
		w.value(a.Value, []any{a.Name})
	}
}

func (w *walker) value(v *ast.Value, path []any) {
	if v == nil || w.found != nil {
		return
	}
	switch v.Kind {
	case ast.StringValue, ast.BlockValue:
		if p := v.Position; p != nil && p.Start <= w.at && w.at < p.End {
			w.found = path
		}
	case ast.ObjectValue:
		for _, c := range v.Children {
			w.value(c.Value, append(path[:len(path):len(path)], c.Name))
		}
	case ast.ListValue:
		for i, c := range v.Children {
			w.value(c.Value, append(path[:len(path):len(path)], i))
		}
	}
}
