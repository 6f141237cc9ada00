package model_test

import (
	"bytes"
	"io"
	"slices"
	"testing"

	"github.com/procsvc/procsvc/graph/generated"
	"github.com/procsvc/procsvc/graph/model"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/genchoice"
)

// TestGenerationEnums: the schema's ContentType, DocStyle and Language list
// exactly internal/genchoice's GraphQL values, in order, and the types
// gqlgen binds them to read every value as its REST word and write every
// word as its value; REST's spelling, and anything but a string, is refused
// as validation_failed.
func TestGenerationEnums(t *testing.T) {
	schema := generated.NewExecutableSchema(generated.Config{}).Schema()
	for _, e := range []struct {
		enum    string
		choices []genchoice.Choice
		decode  func(any) (string, error)
		encode  func(string) string
	}{
		{"ContentType", genchoice.ContentTypeChoices, decoder[model.ContentType](), encoder(model.ContentType.MarshalGQL)},
		{"DocStyle", genchoice.DocStyleChoices, decoder[model.DocStyle](), encoder(model.DocStyle.MarshalGQL)},
		{"Language", genchoice.LanguageChoices, decoder[model.Language](), encoder(model.Language.MarshalGQL)},
	} {
		t.Run(e.enum, func(t *testing.T) {
			def := schema.Types[e.enum]
			if def == nil {
				t.Fatalf("the schema has no enum %s", e.enum)
			}
			var inSchema, mapped []string
			for _, v := range def.EnumValues {
				inSchema = append(inSchema, v.Name)
			}
			for _, c := range e.choices {
				mapped = append(mapped, c.Name)
			}
			if !slices.Equal(inSchema, mapped) {
				t.Fatalf("the schema's %s is %q; internal/genchoice has %q: change both", e.enum, inSchema, mapped)
			}
			for _, c := range e.choices {
				if got, err := e.decode(c.Name); err != nil || got != c.Word {
					t.Errorf("%s reads as %q (%v), want %q", c.Name, got, err, c.Word)
				}
				if got := e.encode(c.Word); got != `"`+c.Name+`"` {
					t.Errorf("%q writes as %s, want %q", c.Word, got, c.Name)
				}
				if got, err := e.decode(c.Word); apperr.CodeOf(err) != apperr.ValidationFailed {
					t.Errorf("REST's %q read as %q (%v), want validation_failed", c.Word, got, err)
				}
			}
			if _, err := e.decode(3); apperr.CodeOf(err) != apperr.ValidationFailed {
				t.Errorf("a number: %v", err)
			}
			if got := e.encode("unknown"); got != "null" {
				t.Errorf("a word of no value writes as %s", got)
			}
		})
	}
}

func decoder[T ~string, P interface {
	*T
	UnmarshalGQL(any) error
}]() func(any) (string, error) {
	return func(in any) (string, error) {
		var v T
		err := P(&v).UnmarshalGQL(in)
		return string(v), err
	}
}

func encoder[T ~string](marshal func(T, io.Writer)) func(string) string {
	return func(word string) string {
		var b bytes.Buffer
		marshal(T(word), &b)
		return b.String()
	}
}
