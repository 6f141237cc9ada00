package gqlhttp

import (
	"cmp"
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/introspection"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// Introspection has its own budget. The complexity limit prices records and
// leaves introspection out (a schema is not a table), and the depth limit
// lets chains of ofType through (wrappedType), so that graphql-js's
// standard introspection query runs; without a budget of its own, aliases
// would multiply the schema (a: __schema {…} b: __schema {…} …) and nested
// lists of it (types × fields × their type's fields × …, which gqlparser
// allows two levels of) into responses of millions of objects for one token
// of the rate limit, rendered until the response bound stops them.
const (
	// MaxIntrospectionFields bounds the __schema and __type selections of an
	// operation, each fragment spread counted in full: graphql-js's
	// getIntrospectionQuery selects one, and tools that look at a few types
	// first (__type(name: "__Directive")) a handful.
	MaxIntrospectionFields = 4
	// MaxIntrospectionObjects bounds the objects introspection puts in a
	// response: each __Schema, __Type, __Field, __InputValue, __EnumValue
	// and __Directive, counted as the schema served has them (exactly, not
	// an estimate). getIntrospectionQuery, with every option or none,
	// returns under 1 000 on this schema (TestStandardIntrospection holds it
	// under a third of the budget): the budget leaves room for the schema to
	// grow several times, and keeps an operation's introspection to about a
	// megabyte.
	MaxIntrospectionObjects = 10000
)

// introspectionBudget refuses an operation over either budget before
// anything runs. It walks the operation's introspection selections over the
// published schema, counting the objects they would return, and stops as
// soon as the count passes the budget: its cost is bounded by the budget,
// not by what a hostile document asks for.
type introspectionBudget struct{ schema *ast.Schema }

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = introspectionBudget{}

func (introspectionBudget) ExtensionName() string                   { return "IntrospectionBudget" }
func (introspectionBudget) Validate(graphql.ExecutableSchema) error { return nil }
func (b introspectionBudget) MutateOperationContext(ctx context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	op := oc.Doc.Operations.ForName(oc.OperationName)
	if op == nil || op.Operation != ast.Query {
		// __schema and __type are fields of the query type only.
		return nil
	}
	w := &introspectionWalk{walk: newWalk(ctx, oc.Doc), op: op, vars: oc.Variables, schema: b.schema}
	return w.root(op.SelectionSet)
}

// IntrospectionObjects is how many objects the introspection of op, an
// operation of doc (validated against PublishedSchema), returns, counted up
// to MaxIntrospectionObjects + 1, and how many __schema and __type
// selections op has: what introspectionBudget checks, for tests and docs.
func IntrospectionObjects(ctx context.Context, doc *ast.QueryDocument, op *ast.OperationDefinition, vars map[string]any) (objects, fields int) {
	w := &introspectionWalk{walk: newWalk(ctx, doc), op: op, vars: vars, schema: PublishedSchema(), counting: true}
	_ = w.root(op.SelectionSet)
	return w.objects, w.fields
}

type introspectionWalk struct {
	*walk
	op       *ast.OperationDefinition
	vars     map[string]any
	schema   *ast.Schema
	wrapped  *introspection.Schema
	fields   int // __schema and __type selections
	objects  int
	counting bool // go on past MaxIntrospectionFields
}

// root walks the operation's root selections for __schema and __type,
// through inline fragments and fragment spreads.
func (w *introspectionWalk) root(set ast.SelectionSet) *gqlerror.Error {
	for _, sel := range set {
		if err := w.tick(); err != nil {
			return err
		}
		var err *gqlerror.Error
		switch sel := sel.(type) {
		case *ast.Field:
			var v any
			switch sel.Name {
			case "__schema":
				v = w.schemaObject()
			case "__type":
				name, _ := sel.ArgumentMap(w.vars)["name"].(string)
				if t := introspection.WrapTypeFromDef(w.schema, w.schema.Types[name]); t != nil {
					v = t
				}
			default:
				continue
			}
			w.fields++
			if w.fields > MaxIntrospectionFields && !w.counting {
				return limitError("%s selects __schema or __type %d times, counting each fragment spread in full, more than the limit of %d; introspect in one __schema selection",
					operationName(w.op), w.fields, MaxIntrospectionFields)
			}
			if v != nil {
				err = w.object(v, sel.SelectionSet)
			}
		case *ast.InlineFragment:
			err = w.root(sel.SelectionSet)
		case *ast.FragmentSpread:
			if def := w.fragments[sel.Name]; def != nil {
				err = w.root(def.SelectionSet)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (w *introspectionWalk) schemaObject() *introspection.Schema {
	if w.wrapped == nil {
		w.wrapped = introspection.WrapSchema(w.schema)
	}
	return w.wrapped
}

// object counts v, one object of introspection, and walks set over it.
func (w *introspectionWalk) object(v any, set ast.SelectionSet) *gqlerror.Error {
	w.objects++
	if w.objects > MaxIntrospectionObjects {
		return limitError("the introspection in %s returns more than %d objects (each type, field, argument, enum value and directive is one), the limit of introspection; select less of the schema, or fewer times",
			operationName(w.op), MaxIntrospectionObjects)
	}
	return w.set(v, set)
}

func (w *introspectionWalk) set(v any, set ast.SelectionSet) *gqlerror.Error {
	for _, sel := range set {
		if err := w.tick(); err != nil {
			return err
		}
		var err *gqlerror.Error
		switch sel := sel.(type) {
		case *ast.Field:
			if len(sel.SelectionSet) > 0 {
				err = w.children(v, sel)
			}
		case *ast.InlineFragment:
			// Validation lets only fragments on v's own type through.
			err = w.set(v, sel.SelectionSet)
		case *ast.FragmentSpread:
			if def := w.fragments[sel.Name]; def != nil {
				err = w.set(v, def.SelectionSet)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// children walks what the object field f of v returns, as gqlgen's
// introspection resolvers return it (graph/generated).
func (w *introspectionWalk) children(v any, f *ast.Field) *gqlerror.Error {
	includeDeprecated := func() bool {
		b, _ := f.ArgumentMap(w.vars)["includeDeprecated"].(bool)
		return b
	}
	var (
		one    *introspection.Type
		types  []introspection.Type
		fields []introspection.Field
		inputs []introspection.InputValue
		enums  []introspection.EnumValue
		dirs   []introspection.Directive
	)
	switch v := v.(type) {
	case *introspection.Schema:
		switch f.Name {
		case "types":
			types = v.Types()
		case "queryType":
			one = v.QueryType()
		case "mutationType":
			one = v.MutationType()
		case "subscriptionType":
			one = v.SubscriptionType()
		case "directives":
			dirs = v.Directives()
		}
	case *introspection.Type:
		switch f.Name {
		case "fields":
			fields = v.Fields(includeDeprecated())
		case "inputFields":
			inputs = v.VisibleInputFields(includeDeprecated())
		case "interfaces":
			types = v.Interfaces()
		case "possibleTypes":
			types = v.PossibleTypes()
		case "enumValues":
			enums = v.EnumValues(includeDeprecated())
		case "ofType":
			one = v.OfType()
		}
	case *introspection.Field:
		switch f.Name {
		case "args":
			inputs = v.VisibleArgs(includeDeprecated())
		case "type":
			one = v.Type
		}
	case *introspection.InputValue:
		if f.Name == "type" {
			one = v.Type
		}
	case *introspection.Directive:
		if f.Name == "args" {
			inputs = v.VisibleArgs(includeDeprecated())
		}
	}
	if one != nil {
		if err := w.object(one, f.SelectionSet); err != nil {
			return err
		}
	}
	// f returns one kind of list at most: the others are empty.
	return cmp.Or(objects(w, types, f.SelectionSet), objects(w, fields, f.SelectionSet),
		objects(w, inputs, f.SelectionSet), objects(w, enums, f.SelectionSet), objects(w, dirs, f.SelectionSet))
}

// objects walks each element of list as an object selected by set.
func objects[T any](w *introspectionWalk, list []T, set ast.SelectionSet) *gqlerror.Error {
	for i := range list {
		if err := w.object(&list[i], set); err != nil {
			return err
		}
	}
	return nil
}
