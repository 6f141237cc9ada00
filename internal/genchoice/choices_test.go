package genchoice_test

import (
	"slices"
	"testing"

	"github.com/procsvc/procsvc/internal/genchoice"
)

// TestChoices is the mapping's table: each value of the GraphQL enums, in
// the schema's order (graph/model's test holds the schema to it), and the
// word docs/contract.md spells it with, which REST takes and the core
// validates.
func TestChoices(t *testing.T) {
	type pair struct{ graphql, rest string }
	for _, e := range []struct {
		enum    string
		choices []genchoice.Choice
		words   []string
		want    []pair
	}{
		{"ContentType", genchoice.ContentTypeChoices, genchoice.ContentTypes,
			[]pair{{"CODE", "code"}, {"STANDARD", "standard"}, {"API", "api"}, {"PROCESS", "process"}}},
		{"DocStyle", genchoice.DocStyleChoices, genchoice.DocStyles,
			[]pair{{"TECHNICAL", "technical"}, {"SIMPLIFIED", "simplified"}, {"DETAILED", "detailed"}}},
		{"Language", genchoice.LanguageChoices, genchoice.Languages,
			[]pair{{"TYPESCRIPT", "typescript"}, {"JAVASCRIPT", "javascript"}, {"PYTHON", "python"},
				{"JAVA", "java"}, {"CSHARP", "csharp"}, {"OTHER", "other"}}},
	} {
		t.Run(e.enum, func(t *testing.T) {
			if len(e.choices) != len(e.want) || len(e.words) != len(e.want) {
				t.Fatalf("%d choices and %d words, want %d", len(e.choices), len(e.words), len(e.want))
			}
			for i, p := range e.want {
				if c := e.choices[i]; c.Name != p.graphql || c.Word != p.rest {
					t.Errorf("choice %d is %+v, want %s ↔ %s", i, c, p.graphql, p.rest)
				}
				if e.words[i] != p.rest {
					t.Errorf("REST word %d is %q, want %q", i, e.words[i], p.rest)
				}
				if w, ok := genchoice.WordOf(e.choices, p.graphql); !ok || w != p.rest {
					t.Errorf("WordOf(%s) = %q, %v", p.graphql, w, ok)
				}
				if n, ok := genchoice.NameOf(e.choices, p.rest); !ok || n != p.graphql {
					t.Errorf("NameOf(%s) = %q, %v", p.rest, n, ok)
				}
				// Neither spelling is the other's.
				if _, ok := genchoice.WordOf(e.choices, p.rest); ok {
					t.Errorf("%q is taken as a GraphQL value", p.rest)
				}
				if _, ok := genchoice.NameOf(e.choices, p.graphql); ok {
					t.Errorf("%q is taken as a REST word", p.graphql)
				}
			}
		})
	}
}

// TestDefaultsAreValues: each default is one of its values.
func TestDefaultsAreValues(t *testing.T) {
	if !slices.Contains(genchoice.ContentTypes, genchoice.DefaultContentType) ||
		!slices.Contains(genchoice.DocStyles, genchoice.DefaultDocStyle) ||
		!slices.Contains(genchoice.Languages, genchoice.DefaultLanguage) {
		t.Fatal("a default is not among its values")
	}
}
