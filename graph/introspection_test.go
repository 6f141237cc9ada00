package graph_test

// Introspection: the schema publishes only the API's directives, and
// @defer, which no transport delivers incrementally, is refused rather than
// answered whole.

import (
	"net/url"
	"slices"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// publishedDirectives are the directives introspection shows, by name.
var publishedDirectives = []string{"deprecated", "include", "oneOf", "skip", "specifiedBy"}

// TestPublishedDirectives: introspection shows the specification's
// directives only: not @goField (gqlgen's code generation) and not @defer,
// which no transport delivers incrementally. A document that uses @defer
// (or @stream) is refused with 400 validation_failed saying so, on every
// transport; one that names @goField is an unknown directive.
func TestPublishedDirectives(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Directives", "DIR")

		var out struct {
			Schema struct {
				Directives []struct {
					Name      string
					Locations []string
				}
			} `json:"__schema"`
		}
		ok(t, s.GraphQL(t, w.ViewToken, `{ __schema { directives { name locations } } }`, nil), &out)
		var names []string
		for _, d := range out.Schema.Directives {
			names = append(names, d.Name)
		}
		if !slices.Equal(names, publishedDirectives) {
			t.Fatalf("directives %v, want %v", names, publishedDirectives)
		}

		refused := []struct{ name, query, mentions string }{
			{"DeferOnInlineFragment", `{ viewer { id ... @defer { name } } }`, "@defer is not supported"},
			{"DeferOnFragmentSpread", `{ viewer { id ...M @defer(label: "m") } } fragment M on Member { name }`, "@defer is not supported"},
			{"DeferSwitchedOff", `{ viewer { id ... @defer(if: false) { name } } }`, "@defer is not supported"},
			{"DeferInAFragment", `{ procedures(first: 1) { nodes { ...P } } } fragment P on Procedure { id ... @defer { comments { text } } }`, "@defer is not supported"},
			{"Stream", `{ tokens @stream { id } }`, "@stream is not supported"},
			{"GoField", `{ viewer { id @goField(name: "x") } }`, "goField"},
		}
		for _, tc := range refused {
			t.Run(tc.name, func(t *testing.T) {
				wantRefused(t, postTimed(t, s, w.ViewToken, tc.query), "validation_failed", tc.mentions)
				wantRefused(t, sendTimed(t, s, "GET", w.ViewToken, "/graphql?query="+url.QueryEscape(tc.query), nil), "validation_failed", tc.mentions)
			})
		}
	})
}
