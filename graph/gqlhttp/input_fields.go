package gqlhttp

import (
	"sort"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/validator/core"
	"github.com/vektah/gqlparser/v2/validator/rules"

	"github.com/procsvc/procsvc/internal/apperr"
)

// validationRules are gqlparser's rules, with its rules for arguments and
// their values (ValuesOfCorrectType, ProvidedRequiredArguments,
// KnownArgumentNames) replaced by inputLiterals, which refuses the same
// mistakes in REST's words and names the argument or input field of each
// (input_values.go), and the rule refusing a variable in the wrong place
// naming where it is used.
func validationRules() *rules.Rules {
	r := rules.NewDefaultRules()
	r.RemoveRule(rules.ValuesOfCorrectTypeRule.Name)
	r.RemoveRule(rules.ProvidedRequiredArgumentsRule.Name)
	r.RemoveRule(rules.KnownArgumentNamesRule.Name)
	r.AddRule("InputLiterals", inputLiterals)
	r.ReplaceRule(rules.VariablesInAllowedPositionRule.Name, namingFields(rules.VariablesInAllowedPositionRule.RuleFunc))
	return r
}

// inputLiterals checks every argument of the document's fields and
// directives, and the default values of its variables: unknown arguments,
// required ones missing, and the values written in the document
// (inputProblems.literal). Its problems are one error, REST's shape, at the
// positions of the values refused, added once the whole document was
// walked.
//
// The schema has no @oneOf input (TestNoOneOfInputs), whose rule
// ValuesOfCorrectType held: add its check here before adding one.
func inputLiterals(observers *core.Events, addError core.AddErrFunc) {
	var (
		p    *inputProblems
		seen = map[any]bool{}
	)
	problems := func(w *core.Walker) *inputProblems {
		if p == nil {
			p = &inputProblems{schema: w.Schema}
		}
		return p
	}
	arguments := func(w *core.Walker, owner string, defs ast.ArgumentDefinitionList, args ast.ArgumentList, pos *ast.Position) {
		p := problems(w)
		for _, a := range args {
			if def := defs.ForName(a.Name); def == nil {
				p.add(a.Name, "is not an argument of "+owner, a.Position, nil)
			} else {
				p.literal(a.Name, def.Type, a.Value)
			}
		}
		for _, def := range defs {
			if def.Type.NonNull && def.DefaultValue == nil && args.ForName(def.Name) == nil {
				p.add(def.Name, msgRequired, pos, nil)
			}
		}
	}
	// A fragment's fields are walked with each operation spreading it and
	// on their own: each is checked once.
	observers.OnField(func(w *core.Walker, f *ast.Field) {
		if f.Definition == nil || seen[f] {
			return
		}
		seen[f] = true
		arguments(w, f.Name, f.Definition.Arguments, f.Arguments, f.Position)
	})
	observers.OnDirective(func(w *core.Walker, d *ast.Directive) {
		if d.Definition == nil || seen[d] {
			return
		}
		seen[d] = true
		arguments(w, "@"+d.Name, d.Definition.Arguments, d.Arguments, d.Position)
	})
	// The walk ends with the last fragment, or the last operation when
	// there is none.
	flush := func(w *core.Walker) {
		if p := problems(w); len(p.list) > 0 {
			addError(literalsError(p)...)
		}
	}
	observers.OnOperation(func(w *core.Walker, op *ast.OperationDefinition) {
		p := problems(w)
		for _, v := range op.VariableDefinitions {
			if v.DefaultValue == nil {
				continue
			}
			// A default's own value is named as the variable's (by where it
			// is used), found only for a refused one.
			from := len(p.list)
			p.literal("", v.Type, v.DefaultValue)
			for i := from; i < len(p.list); i++ {
				if p.list[i].field == "" {
					p.list[i].field = variableField(w.Document, op, v.Variable)
				}
			}
		}
		ops := w.Document.Operations
		if len(w.Document.Fragments) == 0 && ops[len(ops)-1] == op {
			flush(w)
		}
	})
	observers.OnFragment(func(w *core.Walker, f *ast.FragmentDefinition) {
		if frags := w.Document.Fragments; frags[len(frags)-1] == f {
			flush(w)
		}
	})
}

// literalsError is the options of p's one error: in document order, located
// at each refused value (or at the field or object missing a required one).
func literalsError(p *inputProblems) []core.ErrorOption {
	line := func(pos *ast.Position) (int, int) {
		if pos == nil {
			return 0, 0
		}
		return pos.Line, pos.Column
	}
	sort.SliceStable(p.list, func(i, j int) bool {
		li, ci := line(p.list[i].pos)
		lj, cj := line(p.list[j].pos)
		return li < lj || li == lj && ci < cj
	})
	ae := p.err()
	options := []core.ErrorOption{core.Message("%s", ae.Message), withFields(ae.Fields)}
	for i, pr := range p.list {
		// Required fields missing from one object share its position.
		if i == 0 || pr.pos != p.list[i-1].pos {
			options = append(options, core.At(pr.pos))
		}
	}
	return options
}

func withFields(fields []apperr.FieldError) core.ErrorOption {
	return func(err *gqlerror.Error) {
		if err.Extensions == nil {
			err.Extensions = map[string]any{}
		}
		err.Extensions["fields"] = fields
	}
}

// namingFields wraps a rule refusing values so that each error it adds
// names the argument or input object field holding the refused value.
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
				names = valueNames(doc.Operations, doc.Fragments)
			}
			if name := names[current]; name != "" {
				options = append(options, func(err *gqlerror.Error) {
					withFields([]apperr.FieldError{{Field: name, Message: err.Message}})(err)
				})
			}
			addError(options...)
		})
	}
}

// valueNames names each value of the arguments of ops and frags by its
// argument, and each value of an input object by its field: a list's
// elements by the list's name.
func valueNames(ops ast.OperationList, frags ast.FragmentDefinitionList) map[*ast.Value]string {
	names := map[*ast.Value]string{}
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
	for _, op := range ops {
		for _, v := range op.VariableDefinitions {
			value(v.DefaultValue, v.Variable)
		}
		directives(op.Directives)
		set(op.SelectionSet)
	}
	for _, f := range frags {
		directives(f.Directives)
		set(f.SelectionSet)
	}
	return names
}
