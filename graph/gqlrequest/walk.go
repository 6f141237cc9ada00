package gqlrequest

import "github.com/vektah/gqlparser/v2/ast"

// A Visitor is told of the nodes of a parsed document (WalkDocument); a
// nil field is not called. What a node holds is visited after it.
type Visitor struct {
	// Definition: each operation and fragment, with its description.
	Definition func(description string)
	// Variable: each variable definition (its default value and
	// directives follow).
	Variable func()
	// Selection: each field, inline fragment and fragment spread.
	Selection func()
	// Directive and Argument: each directive, each argument (of a field
	// or a directive).
	Directive, Argument func()
	// Value: each value, those nested in lists and objects included, each
	// of which is also announced by Child.
	Value func(v *ast.Value)
	Child func()
}

// WalkDocument visits every node of doc the visitor names: its operations
// and fragments, their variables, directives and selections, and the
// arguments and values in them. Both the cost of a document kept
// (graph/gqlhttp) and the uses of a variable (graph/live) are counted so,
// on the parsed document, never on its text.
func WalkDocument(doc *ast.QueryDocument, v Visitor) {
	if doc == nil {
		return
	}
	call := func(f func()) {
		if f != nil {
			f()
		}
	}
	var value func(val *ast.Value)
	value = func(val *ast.Value) {
		if val == nil {
			return
		}
		if v.Value != nil {
			v.Value(val)
		}
		for _, c := range val.Children {
			call(v.Child)
			value(c.Value)
		}
	}
	arguments := func(args ast.ArgumentList) {
		for _, a := range args {
			call(v.Argument)
			value(a.Value)
		}
	}
	directives := func(ds ast.DirectiveList) {
		for _, d := range ds {
			call(v.Directive)
			arguments(d.Arguments)
		}
	}
	variables := func(vs ast.VariableDefinitionList) {
		for _, d := range vs {
			call(v.Variable)
			value(d.DefaultValue)
			directives(d.Directives)
		}
	}
	var selections func(set ast.SelectionSet)
	selections = func(set ast.SelectionSet) {
		for _, sel := range set {
			call(v.Selection)
			switch s := sel.(type) {
			case *ast.Field:
				arguments(s.Arguments)
				directives(s.Directives)
				selections(s.SelectionSet)
			case *ast.InlineFragment:
				directives(s.Directives)
				selections(s.SelectionSet)
			case *ast.FragmentSpread:
				directives(s.Directives)
			}
		}
	}
	definition := func(description string) {
		if v.Definition != nil {
			v.Definition(description)
		}
	}
	for _, op := range doc.Operations {
		definition(op.Description)
		variables(op.VariableDefinitions)
		directives(op.Directives)
		selections(op.SelectionSet)
	}
	for _, f := range doc.Fragments {
		definition(f.Description)
		variables(f.VariableDefinition)
		directives(f.Directives)
		selections(f.SelectionSet)
	}
}
