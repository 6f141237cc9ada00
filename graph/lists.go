package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/google/uuid"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/graph/model"
	"github.com/procsvc/procsvc/internal/loader"
)

// PrimeList primes, for a whole list of procedures, procedure edges or
// comments at once, every edge that sel resolves on its elements, so that
// the generated executor can marshal the list element after element (see
// graph/internal/gqlgen): no element's field resolver then waits for a
// dataloader batch it would have shared with its siblings. What the list's
// own resolver primed already costs no statement; anything else costs one
// statement per edge, what the dataloader would have batched.
//
// It answers false, and the list is marshalled concurrently as gqlgen does,
// for a list it does not know, for nil elements (gqlgen reports those), and
// when a read fails: the fields then load their keys through the dataloader
// and each reports its own error, at its own path, as without priming.
//
// The edges primed here are every resolver field of Procedure and Comment
// (TestPrimeListCoversResolverFields): a resolver field added there must be
// primed here too, or lists of its object would wait element by element.
//
// It implements generated.ListPrimer, asserted in lists_test.go rather than
// here: gqlgen type-checks this package before it writes that interface.
func (r *Resolver) PrimeList(ctx context.Context, sel ast.SelectionSet, list any) bool {
	oc := graphql.GetOperationContext(ctx)
	switch l := list.(type) {
	case []*ent.Procedure:
		if hasNil(l) {
			return false
		}
		return loader.PrimeProcedures(ctx, l, selectedEdges(oc, graphql.CollectFields(oc, sel, nil))) == nil
	case []*model.ProcedureEdge:
		procs := make([]*ent.Procedure, len(l))
		for i, e := range l {
			if e == nil || e.Node == nil {
				return false
			}
			procs[i] = e.Node
		}
		return loader.PrimeProcedures(ctx, procs, edgeNodeEdges(oc, sel)) == nil
	case []*ent.Comment:
		if hasNil(l) {
			return false
		}
		if !selectsAuthor(oc, sel) {
			return true
		}
		return loader.PrimeMembers(ctx, memberIDs(l, func(c *ent.Comment) uuid.UUID { return c.AuthorID })) == nil
	}
	return false
}

func hasNil[T any](l []*T) bool {
	for _, v := range l {
		if v == nil {
			return true
		}
	}
	return false
}
