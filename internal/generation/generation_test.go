package generation_test

import (
	"slices"
	"testing"

	"github.com/procsvc/procsvc/graph/model"
	"github.com/procsvc/procsvc/internal/generation"
)

// TestGraphQLEnumsMatch is the drift check of the GraphQL schema's enums
// (gqlgen writes them from the schema, so they cannot be written from
// here): ContentType, DocStyle and Language list exactly this package's
// values, in the same order.
func TestGraphQLEnumsMatch(t *testing.T) {
	for _, e := range []struct {
		name      string
		graphql   []string
		generated []string
	}{
		{"ContentType", values(model.AllContentType), generation.ContentTypes},
		{"DocStyle", values(model.AllDocStyle), generation.DocStyles},
		{"Language", values(model.AllLanguage), generation.Languages},
	} {
		if !slices.Equal(e.graphql, e.generated) {
			t.Errorf("GraphQL enum %s is %q; internal/generation has %q: change both", e.name, e.graphql, e.generated)
		}
	}
}

// TestDefaultsAreValues: each default is one of its values.
func TestDefaultsAreValues(t *testing.T) {
	if !slices.Contains(generation.ContentTypes, generation.DefaultContentType) ||
		!slices.Contains(generation.DocStyles, generation.DefaultDocStyle) ||
		!slices.Contains(generation.Languages, generation.DefaultLanguage) {
		t.Fatal("a default is not among its values")
	}
}

func values[T ~string](all []T) []string {
	out := make([]string, len(all))
	for i, v := range all {
		out[i] = string(v)
	}
	return out
}
