package gqlhttp

import (
	"sync"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/procsvc/procsvc/graph/generated"
)

// publishedDirectives are the directives the API has: the specification's
// (@include and @skip for documents; @deprecated, @specifiedBy and @oneOf,
// which describe the schema). Every other directive of the parsed schema is
// left out of the schema the executor validates documents against and
// introspection shows:
//
//   - @goField (graph/schema.graphqls) tells gqlgen how to generate Go; it
//     means nothing to a client.
//   - @defer, which gqlparser declares, is not delivered incrementally: the
//     JSON transports answer an operation with one response and the event
//     stream of a query has one event, so a deferred fragment would only
//     arrive with the rest. A document that uses it is refused
//     (refuseIncremental) rather than answered as if it had been deferred.
//
// An allowlist, so that a directive added for code generation is not
// published by accident (TestPublishedDirectives lists what introspection
// shows).
var publishedDirectives = map[string]bool{
	"include":     true,
	"skip":        true,
	"deprecated":  true,
	"specifiedBy": true,
	"oneOf":       true,
}

// PublishedSchema is the schema as clients see it: the one gqlgen parsed
// from graph/*.graphqls (graph/generated), less the directives that are not
// published. It is built once, at run time from the generated schema, so
// `go generate ./...` reproduces everything it derives from.
var PublishedSchema = sync.OnceValue(func() *ast.Schema {
	parsed := generated.NewExecutableSchema(generated.Config{}).Schema()
	s := *parsed // the definitions are shared, read-only
	s.Directives = make(map[string]*ast.DirectiveDefinition, len(publishedDirectives))
	for name, d := range parsed.Directives {
		if publishedDirectives[name] {
			s.Directives[name] = d
		}
	}
	return &s
})

// incrementalDirectives are the directives of incremental delivery, which
// procsvc does not offer (publishedDirectives).
var incrementalDirectives = map[string]bool{"defer": true, "stream": true}

// refuseIncremental refuses a document that asks for incremental delivery,
// with a message saying why, where validation would only call the directive
// unknown. It looks at every selection of every operation and fragment
// once: linear in the document.
func refuseIncremental(doc *ast.QueryDocument) *gqlerror.Error {
	check := func(ds ast.DirectiveList) *gqlerror.Error {
		for _, d := range ds {
			if incrementalDirectives[d.Name] {
				err := limitError("@%s is not supported: procsvc answers an operation in one response, so a deferred or streamed part would only come with the rest; remove @%s", d.Name, d.Name)
				if d.Position != nil {
					err.Locations = []gqlerror.Location{{Line: d.Position.Line, Column: d.Position.Column}}
				}
				return err
			}
		}
		return nil
	}
	var set func(ast.SelectionSet) *gqlerror.Error
	set = func(s ast.SelectionSet) *gqlerror.Error {
		for _, sel := range s {
			var err *gqlerror.Error
			switch sel := sel.(type) {
			case *ast.Field:
				if err = check(sel.Directives); err == nil {
					err = set(sel.SelectionSet)
				}
			case *ast.InlineFragment:
				if err = check(sel.Directives); err == nil {
					err = set(sel.SelectionSet)
				}
			case *ast.FragmentSpread:
				err = check(sel.Directives)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	for _, op := range doc.Operations {
		if err := set(op.SelectionSet); err != nil {
			return err
		}
	}
	for _, f := range doc.Fragments {
		if err := set(f.SelectionSet); err != nil {
			return err
		}
	}
	return nil
}
