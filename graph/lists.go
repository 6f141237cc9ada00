package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/google/uuid"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/graph/model"
	"github.com/procsvc/procsvc/internal/core"
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
// The edges primed here are every resolver field of Procedure, Comment and
// an event's actor (TestPrimeListCoversResolverFields): a resolver field
// added there must be primed here too, or lists of its object would wait
// element by element. (A procedure's history is announced rather than
// primed: the first procedure to ask reads every one's, loader.Nested.)
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
		announceEdgeParents(ctx, sel, l)
		announceHistory(ctx, sel, l)
		return loader.PrimeProcedures(ctx, l, selectedEdges(oc, graphql.CollectFields(oc, sel, nil))) == nil
	case []*model.ProcedureEdge:
		procs := make([]*ent.Procedure, len(l))
		for i, e := range l {
			if e == nil || e.Node == nil {
				return false
			}
			procs[i] = e.Node
		}
		for _, g := range graphql.CollectFields(oc, sel, nil) {
			if g.Name == "node" {
				announceEdgeParents(ctx, g.Selections, procs)
				announceHistory(ctx, g.Selections, procs)
			}
		}
		return loader.PrimeProcedures(ctx, procs, edgeNodeEdges(oc, sel)) == nil
	case []*ent.Comment:
		if hasNil(l) {
			return false
		}
		return primeAuthors(ctx, oc, sel, l)
	case []*model.CommentEdge:
		comments := make([]*ent.Comment, len(l))
		var nodeSel ast.SelectionSet
		for _, g := range graphql.CollectFields(oc, sel, nil) {
			if g.Name == "node" {
				nodeSel = append(nodeSel, g.Selections...)
			}
		}
		for i, e := range l {
			if e == nil || e.Node == nil {
				return false
			}
			comments[i] = e.Node
		}
		return primeAuthors(ctx, oc, nodeSel, comments)
	case []*model.Event:
		return primeEventActors(ctx, sel, l)
	case []*model.EventEdge:
		events := make([]*model.Event, len(l))
		for i, e := range l {
			if e == nil {
				return false
			}
			events[i] = e.Node
		}
		return primeEventActors(ctx, edgeNodes(oc, sel), events)
	case []core.FieldChange:
		// Values only: nothing to wait on.
		return true
	case []*ent.Project:
		return announce(ctx, "Project", sel, l, func(p *ent.Project) uuid.UUID { return p.ID })
	case []*model.ProjectEdge:
		return announceEdges(ctx, "Project", sel, l, func(e *model.ProjectEdge) *ent.Project { return e.Node },
			func(p *ent.Project) uuid.UUID { return p.ID })
	case []*ent.Category:
		return announce(ctx, "Category", sel, l, func(c *ent.Category) uuid.UUID { return c.ID })
	case []*model.CategoryEdge:
		return announceEdges(ctx, "Category", sel, l, func(e *model.CategoryEdge) *ent.Category { return e.Node },
			func(c *ent.Category) uuid.UUID { return c.ID })
	case []*ent.Member:
		return announce(ctx, "Member", sel, l, func(m *ent.Member) uuid.UUID { return m.ID })
	case []*model.MemberEdge:
		return announceEdges(ctx, "Member", sel, l, func(e *model.MemberEdge) *ent.Member { return e.Node },
			func(m *ent.Member) uuid.UUID { return m.ID })
	}
	return false
}

// primeAuthors primes the authors of comments when sel, selected on each,
// resolves them.
func primeAuthors(ctx context.Context, oc *graphql.OperationContext, sel ast.SelectionSet, comments []*ent.Comment) bool {
	for _, f := range graphql.CollectFields(oc, sel, nil) {
		if f.Name == "author" {
			return loader.PrimeMembers(ctx, memberIDs(comments, func(c *ent.Comment) uuid.UUID { return c.AuthorID })) == nil
		}
	}
	return true
}

// announce announces the parents of a list of typ to the nested fields sel
// selects on them (announceNested). Their other fields never wait.
func announce[T any](ctx context.Context, typ string, sel ast.SelectionSet, l []*T, id func(*T) uuid.UUID) bool {
	if hasNil(l) {
		return false
	}
	announceNested(ctx, typ, sel, memberIDs(l, id))
	return true
}

// announceEdges is announce for a list of edges of typ, whose nodes hold
// the parents.
func announceEdges[E, T any](ctx context.Context, typ string, sel ast.SelectionSet, l []*E, node func(*E) *T, id func(*T) uuid.UUID) bool {
	nodes := make([]*T, len(l))
	for i, e := range l {
		if e == nil || node(e) == nil {
			return false
		}
		nodes[i] = node(e)
	}
	var nodeSel ast.SelectionSet
	for _, g := range graphql.CollectFields(graphql.GetOperationContext(ctx), sel, nil) {
		if g.Name == "node" {
			nodeSel = append(nodeSel, g.Selections...)
		}
	}
	return announce(ctx, typ, nodeSel, nodes, id)
}

func hasNil[T any](l []*T) bool {
	for _, v := range l {
		if v == nil {
			return true
		}
	}
	return false
}
