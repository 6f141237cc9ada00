package gqlhttp

import (
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
)

// A query whose every field is a procedure, a page of procedures, or what
// they show (their fields and edges: category, doer, project, comments and
// comment authors, and the procedures of those projects, categories and
// members, which core records as lists of their parent) depends only on
// what core records in its footprint: its cached response stays valid through the
// writes that leave that footprint alone (internal/respcache). Anything
// else — workspace, viewer, tokens, the other lists, node lookups,
// introspection — may depend on any write.
var (
	footprintedRoots = map[string]bool{"procedure": true, "procedures": true, "__typename": true}
	footprintedTypes = map[string]bool{
		"ProcedureConnection": true, "ProcedureEdge": true, "PageInfo": true, "CommentConnection": true, "CommentEdge": true,
		"Procedure": true, "Category": true, "Member": true, "Project": true, "Comment": true,
	}
)

// footprinted reports whether op reads only what core's footprint covers.
// op has been validated, so every field has its definition.
func footprinted(op *ast.OperationDefinition) bool {
	if op == nil || op.Operation != ast.Query {
		return false
	}
	for _, sel := range flatten(op.SelectionSet, 0) {
		if f, ok := sel.(*ast.Field); !ok || !footprintedRoots[f.Name] {
			return false
		}
	}
	return footprintedSelection(op.SelectionSet, 0)
}

// maxFragmentDepth bounds the walk through fragments; deeper documents are
// refused by the depth limit before they get here, and answered as not
// footprinted if they did not.
const maxFragmentDepth = 32

func footprintedSelection(set ast.SelectionSet, depth int) bool {
	if depth > maxFragmentDepth {
		return false
	}
	for _, sel := range flatten(set, depth) {
		f, ok := sel.(*ast.Field)
		if !ok || f.Definition == nil || f.Definition.Type == nil {
			return false
		}
		if strings.HasPrefix(f.Name, "__") && f.Name != "__typename" {
			return false
		}
		if len(f.SelectionSet) == 0 {
			continue
		}
		if !footprintedTypes[f.Definition.Type.Name()] || !footprintedSelection(f.SelectionSet, depth+1) {
			return false
		}
	}
	return true
}

// flatten returns set's fields with its fragments' fields in their place
// (a nil element for a fragment it cannot follow).
func flatten(set ast.SelectionSet, depth int) []ast.Selection {
	var out []ast.Selection
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			out = append(out, s)
		case *ast.InlineFragment:
			if depth > maxFragmentDepth {
				return append(out, nil)
			}
			out = append(out, flatten(s.SelectionSet, depth+1)...)
		case *ast.FragmentSpread:
			if s.Definition == nil || depth > maxFragmentDepth {
				return append(out, nil)
			}
			out = append(out, flatten(s.Definition.SelectionSet, depth+1)...)
		default:
			out = append(out, nil)
		}
	}
	return out
}
