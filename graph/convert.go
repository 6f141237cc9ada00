package graph

import (
	"context"
	"math"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/google/uuid"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/graph/model"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/limits"
	"github.com/procsvc/procsvc/internal/loader"
)

// window converts Relay arguments.
func window(first *int, after *string, last *int, before *string) core.Window {
	w := core.Window{First: first, Last: last}
	if after != nil {
		c := core.Cursor(*after)
		w.After = &c
	}
	if before != nil {
		c := core.Cursor(*before)
		w.Before = &c
	}
	return w
}

// optional converts a gqlgen omittable field.
func optional[T any](o graphql.Omittable[*T]) core.Optional[T] {
	v, ok := o.ValueOK()
	if !ok {
		return core.Optional[T]{}
	}
	return core.Optional[T]{Set: true, Value: v}
}

// optionalString converts an omittable field of a string-kinded enum.
func optionalString[T ~string](o graphql.Omittable[*T]) core.Optional[string] {
	v, ok := o.ValueOK()
	if !ok {
		return core.Optional[string]{}
	}
	if v == nil {
		return core.Null[string]()
	}
	return core.Some(string(*v))
}

func str[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}

func strPtr[T ~string](p *T) *string {
	if p == nil {
		return nil
	}
	s := string(*p)
	return &s
}

func some[T any](p *T) core.Optional[T] {
	if p == nil {
		return core.Optional[T]{}
	}
	return core.Optional[T]{Set: true, Value: p}
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func procedureFilter(f *model.ProcedureFilter) core.ProcedureFilter {
	if f == nil {
		return core.ProcedureFilter{}
	}
	return core.ProcedureFilter{
		Search:     str(f.Search),
		CategoryID: str(f.CategoryID),
		DoerID:     str(f.DoerID),
		ProjectID:  str(f.ProjectID),
		State:      str(f.State),
		Priority:   str(f.Priority),
		DueFrom:    f.DueFrom,
		DueTo:      f.DueTo,
	}
}

var orderFields = map[model.ProcedureOrderField]core.ProcedureSort{
	model.ProcedureOrderFieldCreatedAt:   core.SortCreatedAt,
	model.ProcedureOrderFieldDueAt:       core.SortDueAt,
	model.ProcedureOrderFieldName:        core.SortName,
	model.ProcedureOrderFieldProjectName: core.SortProjectName,
}

func procedureOrder(o *model.ProcedureOrder) core.ProcedureOrder {
	if o == nil {
		return core.DefaultProcedureOrder
	}
	return core.ProcedureOrder{Field: orderFields[o.Field], Desc: o.Direction != model.OrderDirectionAsc}
}

// connection builds a Relay connection's parts from a core page. The edges
// (an object and a cursor per item) are built only when the operation selects
// them: list pages read nodes.
func connection[N any, E any](ctx context.Context, items []N, info core.PageInfo, edge func(N, string) E) ([]E, *model.PageInfo) {
	var edges []E
	if selects(ctx, "edges") {
		edges = make([]E, len(items))
		for i, n := range items {
			edges[i] = edge(n, string(core.CursorAt(info.Offset+i)))
		}
	}
	pi := &model.PageInfo{HasNextPage: info.HasNextPage, HasPreviousPage: info.HasPreviousPage}
	if len(items) > 0 {
		start, end := string(core.CursorAt(info.Offset)), string(core.CursorAt(info.Offset+len(items)-1))
		pi.StartCursor, pi.EndCursor = &start, &end
	}
	return edges, pi
}

// selects reports whether the current GraphQL field selects field.
func selects(ctx context.Context, field string) bool {
	for _, f := range graphql.CollectFieldsCtx(ctx, nil) {
		if f.Name == field {
			return true
		}
	}
	return false
}

func deleted(id string) *model.DeletePayload {
	return &model.DeletePayload{Success: true, DeletedID: id}
}

// requestedEdges reports which edges the current field, returning
// procedures, selects on them.
func requestedEdges(ctx context.Context) loader.Edges {
	return selectedEdges(graphql.GetOperationContext(ctx), graphql.CollectFieldsCtx(ctx, nil))
}

// connectionEdges reports which edges the current field, returning a
// connection of procedures, selects on its nodes and on its edges' nodes.
func connectionEdges(ctx context.Context) loader.Edges {
	oc := graphql.GetOperationContext(ctx)
	var e loader.Edges
	for _, f := range graphql.CollectFieldsCtx(ctx, nil) {
		switch f.Name {
		case "nodes":
			e = union(e, selectedEdges(oc, graphql.CollectFields(oc, f.Selections, nil)))
		case "edges":
			e = union(e, edgeNodeEdges(oc, f.Selections))
		}
	}
	return e
}

// selectedEdges reports which edges fields, selected on procedures, resolve,
// and every window of comments they show.
func selectedEdges(oc *graphql.OperationContext, fields []graphql.CollectedField) loader.Edges {
	var e loader.Edges
	for _, f := range fields {
		switch f.Name {
		case "category":
			e.Category = true
		case "doer":
			e.Doer = true
		case "project":
			e.Project = true
		case "comments":
			// Arguments were checked before execution (pageSizeLimit); a
			// view the check let through is read by its resolver.
			view, _ := commentViewOf(f.ArgumentMap(oc.Variables))
			if e.Comments {
				view = e.CommentWindow.Union(view)
			}
			e.Comments, e.CommentWindow = true, view
			if selectsAuthor(oc, f.Selections) {
				e.CommentAuthors = true
			}
		}
	}
	return e
}

// commentView is the view of a procedure's comments that comments(first:,
// last:) asks for: at most one of the two, each 1 to
// limits.CommentsPerProcedure; neither is the default view.
// Errors: validation_failed naming the argument.
func commentView(first, last *int) (loader.CommentWindow, error) {
	if first != nil && last != nil {
		return loader.CommentWindow{}, apperr.Invalid("last", "give first or last, not both")
	}
	for _, a := range []struct {
		name string
		n    *int
	}{{"first", first}, {"last", last}} {
		if a.n != nil && (*a.n < 1 || *a.n > limits.CommentsPerProcedure) {
			return loader.CommentWindow{}, apperr.Invalid(a.name, "must be 1 to %d", limits.CommentsPerProcedure)
		}
	}
	var w loader.CommentWindow
	if first != nil {
		w.First = *first
	}
	if last != nil {
		w.Last = *last
	}
	return w, nil
}

// commentViewOf is commentView of a comments field's arguments, as
// ArgumentMap decodes them (an argument that is not a whole number is
// refused by gqlgen's coercion, and by this check as out of range).
func commentViewOf(args map[string]any) (loader.CommentWindow, error) {
	arg := func(name string) *int {
		v, ok := args[name]
		if !ok || v == nil {
			return nil
		}
		n, ok := IntArgument(v)
		if !ok || n < math.MinInt32 || n > math.MaxInt32 {
			n = -1
		}
		i := int(n)
		return &i
	}
	return commentView(arg("first"), arg("last"))
}

// edgeNodeEdges reports which edges sel, selected on procedure edges,
// resolves on their nodes.
func edgeNodeEdges(oc *graphql.OperationContext, sel ast.SelectionSet) loader.Edges {
	var e loader.Edges
	for _, g := range graphql.CollectFields(oc, sel, nil) {
		if g.Name == "node" {
			e = union(e, selectedEdges(oc, graphql.CollectFields(oc, g.Selections, nil)))
		}
	}
	return e
}

// union is every edge a or b wants, and every comment either shows.
func union(a, b loader.Edges) loader.Edges {
	u := loader.Edges{Category: a.Category || b.Category, Doer: a.Doer || b.Doer, Project: a.Project || b.Project,
		Comments: a.Comments || b.Comments, CommentAuthors: a.CommentAuthors || b.CommentAuthors}
	switch {
	case a.Comments && b.Comments:
		u.CommentWindow = a.CommentWindow.Union(b.CommentWindow)
	case a.Comments:
		u.CommentWindow = a.CommentWindow
	case b.Comments:
		u.CommentWindow = b.CommentWindow
	}
	return u
}

// selectsAuthor reports whether sel, selected on comments, resolves their
// author.
func selectsAuthor(oc *graphql.OperationContext, sel ast.SelectionSet) bool {
	for _, c := range graphql.CollectFields(oc, sel, nil) {
		if c.Name == "author" {
			return true
		}
	}
	return false
}

// prime returns a function that primes edges for the single procedure a
// core call returns; it wraps the call's results.
func prime(ctx context.Context, edges loader.Edges) func(*ent.Procedure, error) (*ent.Procedure, error) {
	return func(p *ent.Procedure, err error) (*ent.Procedure, error) {
		if err != nil {
			return nil, err
		}
		if err := loader.PrimeProcedures(ctx, []*ent.Procedure{p}, edges); err != nil {
			return nil, err
		}
		return p, nil
	}
}

// primed is prime for the edges the current field selects.
func primed(ctx context.Context) func(*ent.Procedure, error) (*ent.Procedure, error) {
	return prime(ctx, requestedEdges(ctx))
}

func memberIDs[T any](items []T, id func(T) uuid.UUID) []uuid.UUID {
	out := make([]uuid.UUID, len(items))
	for i, it := range items {
		out[i] = id(it)
	}
	return out
}
