package graph_test

// Introspection: graphql-js's standard queries run; introspection has a
// budget of its own (__schema/__type selections and the objects they
// return) rather than an exemption from every limit; the schema publishes
// only the API's directives, and @defer, which no transport delivers
// incrementally, is refused rather than answered whole.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"

	"github.com/procsvc/procsvc/graph/gqlhttp"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// publishedDirectives are the directives introspection shows, by name.
var publishedDirectives = []string{"deprecated", "include", "oneOf", "skip", "specifiedBy"}

// introspectionObjects is what introspectionBudget counts for query.
func introspectionObjects(t testing.TB, query string) (objects, fields int) {
	t.Helper()
	doc, errs := gqlparser.LoadQuery(gqlhttp.PublishedSchema(), query)
	if errs != nil {
		t.Fatalf("the document does not validate: %v", errs)
	}
	return gqlhttp.IntrospectionObjects(context.Background(), doc, doc.Operations[0], nil)
}

// jsonObjects counts the JSON objects in v.
func jsonObjects(v any) int {
	n := 0
	switch v := v.(type) {
	case map[string]any:
		n++
		for _, x := range v {
			n += jsonObjects(x)
		}
	case []any:
		for _, x := range v {
			n += jsonObjects(x)
		}
	}
	return n
}

func TestStandardIntrospection(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Introspect", "INT")
		for _, tc := range []struct{ name, query string }{
			{"DefaultOptions", graphqlJSIntrospection},
			{"AllOptions", graphqlJSIntrospectionAllOptions},
			{"AllOptionsAndOneOf", graphqlJSIntrospectionOneOf},
		} {
			t.Run(tc.name, func(t *testing.T) {
				for _, via := range []string{"POST", "GET"} {
					var r limitReply
					if via == "POST" {
						r = postTimed(t, s, w.ViewToken, tc.query)
					} else {
						r = sendTimed(t, s, "GET", w.ViewToken, "/graphql?query="+url.QueryEscape(tc.query), nil)
					}
					if r.Status != http.StatusOK || len(r.Errors) > 0 {
						t.Fatalf("%s: status %d: %+v", via, r.Status, r.Errors)
					}
					var data map[string]any
					if err := json.Unmarshal(r.keys["data"], &data); err != nil {
						t.Fatalf("%s: data: %v", via, err)
					}
					schema, _ := data["__schema"].(map[string]any)
					if schema == nil {
						t.Fatalf("%s: no __schema: %.300s", via, r.keys["data"])
					}
					if q, _ := schema["queryType"].(map[string]any); q == nil || q["name"] != "Query" {
						t.Fatalf("%s: queryType %v", via, schema["queryType"])
					}
					var directives []string
					for _, d := range schema["directives"].([]any) {
						directives = append(directives, d.(map[string]any)["name"].(string))
					}
					if !slices.Equal(directives, publishedDirectives) {
						t.Fatalf("%s: directives %v, want %v", via, directives, publishedDirectives)
					}
					types := map[string]bool{}
					for _, ty := range schema["types"].([]any) {
						types[ty.(map[string]any)["name"].(string)] = true
					}
					for _, name := range []string{"Query", "Mutation", "Subscription", "Procedure", "ContentType", "__Schema"} {
						if !types[name] {
							t.Fatalf("%s: no type %s among %d", via, name, len(types))
						}
					}
					// The budget counts exactly what the answer holds.
					objects, fields := introspectionObjects(t, tc.query)
					if got := jsonObjects(data) - 1; got != objects || fields != 1 {
						t.Fatalf("%s: the answer holds %d objects, the budget counted %d (%d selections)", via, got, objects, fields)
					}
					if 3*objects > gqlhttp.MaxIntrospectionObjects {
						t.Fatalf("standard introspection returns %d objects, over a third of the budget (%d): raise it, and say so in docs/api.md", objects, gqlhttp.MaxIntrospectionObjects)
					}
					t.Logf("%s: %d objects, %d bytes", via, objects, len(r.keys["data"]))
				}
			})
		}
	})
}

// aliasedIntrospection is n aliased root selections of field (__schema or
// __type(...)) each selecting sel.
func aliasedIntrospection(n int, field, sel string) string {
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, " i%d: %s { %s }", i, field, sel)
	}
	b.WriteString(" }")
	return b.String()
}

// aliasedFields is n aliased selections of list each selecting sel.
func aliasedFields(n int, list, sel string) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, " l%d: %s { %s }", i, list, sel)
	}
	return b.String()
}

func TestIntrospectionBudget(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Budget", "BUD")
		const (
			selections = "__schema or __type"
			objects    = "objects"
		)
		over := gqlhttp.MaxIntrospectionFields + 1
		inner := func(q string) string { return strings.TrimSuffix(strings.TrimPrefix(q, "{"), "}") }
		// What each alias of the mutations selects: their arguments' input
		// types' fields (about 150 objects an alias, in 6 fields).
		fieldTree := "args { type { ofType { inputFields { name } } } }"
		refused := []struct{ name, query, mentions string }{
			{"AliasedSchemas", aliasedIntrospection(over, "__schema", "description"), selections},
			{"AliasedTypes", aliasedIntrospection(over, `__type(name: "Procedure")`, "name"), selections},
			{"TypesInInlineFragments", "{ ... on Query { " + inner(aliasedIntrospection(over, `__type(name: "Project")`, "name")) + " } }", selections},
			{"TypesInAFragmentSpreadTwice", `{ ...T ...T } fragment T on Query { a: __type(name: "Procedure") { name } b: __type(name: "Project") { name } c: __type(name: "Member") { name } }`, selections},
			{"StandardIntrospectionWithMore", strings.Replace(graphqlJSIntrospection, "__schema {",
				inner(aliasedIntrospection(gqlhttp.MaxIntrospectionFields, `__type(name: "Procedure")`, "name"))+" __schema {", 1), selections},
			// Within the budget of selections, over the budget of objects.
			{"AliasedListsOfEveryType", "{ __schema { types { " + aliasedFields(70, "fields", "name") + " } } }", objects},
			{"ObjectsAddUpOverRoots", aliasedIntrospection(gqlhttp.MaxIntrospectionFields, "__schema", "types { "+aliasedFields(20, "fields", "name")+" }"), objects},
			{"TypeNestedUnderAliases", aliasedIntrospection(2, `__type(name: "Mutation")`, aliasedFields(45, "fields", fieldTree)), objects},
		}
		// Authentication's first use of a token writes its lastUsedAt.
		ok(t, s.GraphQL(t, w.ViewToken, `{ viewer { id } }`, nil), &struct{}{})
		for _, tc := range refused {
			t.Run(tc.name, func(t *testing.T) {
				before := db.Statements()
				r := postTimed(t, s, w.ViewToken, tc.query)
				wantRefused(t, r, "validation_failed", tc.mentions)
				if n := db.Statements() - before; n > 2 {
					t.Fatalf("the refusal ran %d statements", n)
				}
			})
		}
		passing := []struct{ name, query string }{
			{"SchemasAtLimit", aliasedIntrospection(gqlhttp.MaxIntrospectionFields, "__schema", "types { name fields { name } }")},
			{"TypesAtLimit", aliasedIntrospection(gqlhttp.MaxIntrospectionFields, `__type(name: "Procedure")`, "name fields { name type { name ofType { name } } }")},
			{"UnknownType", `{ __type(name: "Nothing") { name } }`},
			{"TypenameIsNotIntrospection", "{ " + strings.Repeat("__typename ", gqlhttp.MaxFieldRepeats) + "viewer { id } }"},
		}
		for _, tc := range passing {
			t.Run(tc.name, func(t *testing.T) {
				r := postTimed(t, s, w.ViewToken, tc.query)
				if r.Status != http.StatusOK || len(r.Errors) > 0 {
					t.Fatalf("status %d: %+v", r.Status, r.Errors)
				}
			})
		}
	})
}

// TestIntrospectionBudgetStopsAtIt: counting stops once the budget is
// spent, whatever a document asks for (here a hundred aliases of the
// schema's every field, forty times over: millions of objects).
func TestIntrospectionBudgetStopsAtIt(t *testing.T) {
	q := aliasedIntrospection(100, "__schema", "types { "+aliasedFields(40, "fields", "name args { name }")+" }")
	objects, fields := introspectionObjects(t, q)
	if objects != gqlhttp.MaxIntrospectionObjects+1 || fields > 3 {
		t.Fatalf("counted %d objects in %d selections, want to stop at %d within the first few", objects, fields, gqlhttp.MaxIntrospectionObjects+1)
	}
}

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
