package model

import (
	"io"
	"strconv"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/genchoice"
)

// ContentType, DocStyle and Language are the GraphQL enums of the same
// names, bound by hand (gqlgen.yml): a value is REST's word (code), which
// the core validates and the generator reads, and GraphQL spells it as its
// enum value (CODE), through internal/genchoice's tables, the one mapping
// between the two spellings.
type (
	ContentType string
	DocStyle    string
	Language    string
)

// UnmarshalGQL reads a ContentType enum value (CODE) as its word (code).
func (v *ContentType) UnmarshalGQL(in any) error {
	return unmarshalChoice((*string)(v), in, "ContentType", genchoice.ContentTypeChoices)
}

// MarshalGQL writes the ContentType enum value of v's word.
func (v ContentType) MarshalGQL(w io.Writer) {
	marshalChoice(w, string(v), genchoice.ContentTypeChoices)
}

// UnmarshalGQL reads a DocStyle enum value (TECHNICAL) as its word.
func (v *DocStyle) UnmarshalGQL(in any) error {
	return unmarshalChoice((*string)(v), in, "DocStyle", genchoice.DocStyleChoices)
}

// MarshalGQL writes the DocStyle enum value of v's word.
func (v DocStyle) MarshalGQL(w io.Writer) { marshalChoice(w, string(v), genchoice.DocStyleChoices) }

// UnmarshalGQL reads a Language enum value (CSHARP) as its word.
func (v *Language) UnmarshalGQL(in any) error {
	return unmarshalChoice((*string)(v), in, "Language", genchoice.LanguageChoices)
}

// MarshalGQL writes the Language enum value of v's word.
func (v Language) MarshalGQL(w io.Writer) { marshalChoice(w, string(v), genchoice.LanguageChoices) }

// unmarshalChoice sets *dst to the word of in, a value of the GraphQL enum
// enum. Validation refuses a literal that is not one of the enum's values,
// but gqlparser accepts a variable's enum value in any case ("code" for
// CODE): that is refused here, as validation_failed (the error's path names
// the field).
func unmarshalChoice(dst *string, in any, enum string, cs []genchoice.Choice) error {
	name, ok := in.(string)
	if !ok {
		return apperr.New(apperr.ValidationFailed, "a %s must be one of its enum values", enum)
	}
	word, ok := genchoice.WordOf(cs, name)
	if !ok {
		return apperr.New(apperr.ValidationFailed, "%s is not a value of %s; GraphQL spells its values in upper case (%s)",
			strconv.Quote(truncateName(name)), enum, cs[0].Name)
	}
	*dst = word
	return nil
}

// marshalChoice writes the enum value of word as a JSON string; a word
// without one (these enums are inputs, none is ever read from storage) as
// null.
func marshalChoice(w io.Writer, word string, cs []genchoice.Choice) {
	name, ok := genchoice.NameOf(cs, word)
	if !ok {
		_, _ = io.WriteString(w, "null")
		return
	}
	_, _ = io.WriteString(w, strconv.Quote(name))
}

// truncateName keeps an echoed value short.
func truncateName(s string) string {
	const most = 40
	if r := []rune(s); len(r) > most {
		return string(r[:most]) + "…"
	}
	return s
}
