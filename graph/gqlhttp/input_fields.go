package gqlhttp

import (
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/validator/core"
	"github.com/vektah/gqlparser/v2/validator/rules"

	"github.com/procsvc/procsvc/internal/apperr"
)

// validationRules are gqlparser's rules, with the value rule naming the
// input field of a literal it refuses: `contentType: code` in a document is
// refused by validation, before anything runs, with a message that names the
// value and its enum but no field; docs/design.md §6's body names it
// (extensions.fields), as it does for the same value sent in a variable
// (inputField, errors.go).
func validationRules() *rules.Rules {
	r := rules.NewDefaultRules()
	r.ReplaceRule(rules.ValuesOfCorrectTypeRule.Name, namingFields(rules.ValuesOfCorrectTypeRule.RuleFunc))
	return r
}

// namingFields wraps the value rule so that each error it adds names the
// argument or input object field holding the refused value.
func namingFields(rule core.RuleFunc) core.RuleFunc {
	return func(observers *core.Events, addError core.AddErrFunc) {
		var (
			current *ast.Value
			doc     *ast.QueryDocument
			names   map[*ast.Value]string
		)
		// Registered before the rule's own observer, so it runs first on
		// each value.
		observers.OnValue(func(w *core.Walker, v *ast.Value) {
			current, doc = v, w.Document
		})
		rule(observers, func(options ...core.ErrorOption) {
			if names == nil {
				// Only a refused document gets here: its values are indexed
				// once, in one walk.
				names = valueNames(doc)
			}
			if name := names[current]; name != "" {
				options = append(options, func(err *gqlerror.Error) {
					if err.Extensions == nil {
						err.Extensions = map[string]any{}
					}
					err.Extensions["fields"] = []apperr.FieldError{{Field: name, Message: err.Message}}
				})
			}
			addError(options...)
		})
	}
}

// valueNames names each value of doc's arguments by its argument, and each
// value of an input object by its field: a list's elements by the list's
// name.
func valueNames(doc *ast.QueryDocument) map[*ast.Value]string {
	names := map[*ast.Value]string{}
	if doc == nil {
		return names
	}
	var value func(v *ast.Value, name string)
	value = func(v *ast.Value, name string) {
		if v == nil {
			return
		}
		names[v] = name
		for _, c := range v.Children {
			if v.Kind == ast.ObjectValue {
				value(c.Value, c.Name)
			} else {
				value(c.Value, name)
			}
		}
	}
	directives := func(ds ast.DirectiveList) {
		for _, d := range ds {
			for _, a := range d.Arguments {
				value(a.Value, a.Name)
			}
		}
	}
	var set func(ast.SelectionSet)
	set = func(s ast.SelectionSet) {
		for _, sel := range s {
			switch sel := sel.(type) {
			case *ast.Field:
				for _, a := range sel.Arguments {
					value(a.Value, a.Name)
				}
				directives(sel.Directives)
				set(sel.SelectionSet)
			case *ast.InlineFragment:
				directives(sel.Directives)
				set(sel.SelectionSet)
			case *ast.FragmentSpread:
				directives(sel.Directives)
			}
		}
	}
	for _, op := range doc.Operations {
		for _, v := range op.VariableDefinitions {
			value(v.DefaultValue, v.Variable)
		}
		directives(op.Directives)
		set(op.SelectionSet)
	}
	for _, f := range doc.Fragments {
		directives(f.Directives)
		set(f.SelectionSet)
	}
	return names
}
