package graph

import (
	"context"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/google/uuid"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/graph/model"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
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

// procedureFilter converts a filter: each singular field is a list of
// one, and a null element of categoryIds or doerIds admits the procedures
// without one. Errors: validation_failed when a singular field and its
// list are both given.
func procedureFilter(f *model.ProcedureFilter) (core.ProcedureFilter, error) {
	if f == nil {
		return core.ProcedureFilter{}, nil
	}
	val := &apperr.Validation{}
	out := core.ProcedureFilter{Search: str(f.Search), DueFrom: f.DueFrom, DueTo: f.DueTo}
	out.CategoryIDs, out.NoCategory = optionalIDs(either(val, "categoryIds", "categoryId", idList(f.CategoryID), f.CategoryIds))
	out.DoerIDs, out.NoDoer = optionalIDs(either(val, "doerIds", "doerId", idList(f.DoerID), f.DoerIds))
	out.ProjectIDs = stringsOf(either(val, "projectIds", "projectId", ptrList(f.ProjectID), f.ProjectIds))
	out.States = stringsOf(either(val, "states", "state", ptrList(f.State), f.States))
	out.Priorities = stringsOf(either(val, "priorities", "priority", ptrList(f.Priority), f.Priorities))
	return out, val.Err()
}

// either is the list given of a singular field and its list field. The
// list's length is checked here, where its name is known and before a null
// element (categoryIds, doerIds) leaves it: a null is one of its at most
// core.MaxFilterValues values.
func either[T any](val *apperr.Validation, listField, field string, one, list []T) []T {
	if one != nil && list != nil {
		val.Add(listField, "cannot be combined with %s", field)
	}
	if len(list) > core.MaxFilterValues {
		val.Add(listField, "must list at most %d values", core.MaxFilterValues)
	}
	if one != nil {
		return one
	}
	return list
}

// ptrList is the list of one of a singular field, nil when it is null.
func ptrList[T any](v *T) []T {
	if v == nil {
		return nil
	}
	return []T{*v}
}

// idList is the list of one of a singular id field, nil when it is null.
func idList(id *string) []*string {
	if id == nil {
		return nil
	}
	return []*string{id}
}

// optionalIDs splits a list of optional ids into the ids and whether a
// null asks for none.
func optionalIDs(l []*string) (ids []string, none bool) {
	for _, id := range l {
		if id == nil {
			none = true
		} else {
			ids = append(ids, *id)
		}
	}
	return ids, none
}

func stringsOf[T ~string](l []T) []string {
	out := make([]string, len(l))
	for i, v := range l {
		out[i] = string(v)
	}
	return out
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
	return connectionEdgesOf(graphql.GetOperationContext(ctx), graphql.CollectFieldsCtx(ctx, nil))
}

// connectionEdgesOf reports which edges fields, selected on a connection
// of procedures, select on its nodes and on its edges' nodes.
func connectionEdgesOf(oc *graphql.OperationContext, fields []graphql.CollectedField) loader.Edges {
	var e loader.Edges
	for _, f := range fields {
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
			// page at a cursor, or one the check let through, is read by
			// its resolver.
			view, ok := commentPrimeView(f.ArgumentMap(oc.Variables))
			if !ok {
				continue
			}
			skip := commentSkipOf(oc.Doc, f.Selections)
			if e.Comments {
				view, skip = e.CommentWindow.Union(view), skip&e.CommentSkip
			}
			e.Comments, e.CommentWindow, e.CommentSkip = true, view, skip
			if selectsAuthor(oc, f.Selections) {
				e.CommentAuthors = true
			}
		}
	}
	return e
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

// union is every edge a or b wants, and every comment and column of one
// either shows.
func union(a, b loader.Edges) loader.Edges {
	u := loader.Edges{Category: a.Category || b.Category, Doer: a.Doer || b.Doer, Project: a.Project || b.Project,
		Comments: a.Comments || b.Comments, CommentAuthors: a.CommentAuthors || b.CommentAuthors}
	switch {
	case a.Comments && b.Comments:
		u.CommentWindow, u.CommentSkip = a.CommentWindow.Union(b.CommentWindow), a.CommentSkip&b.CommentSkip
	case a.Comments:
		u.CommentWindow, u.CommentSkip = a.CommentWindow, a.CommentSkip
	case b.Comments:
		u.CommentWindow, u.CommentSkip = b.CommentWindow, b.CommentSkip
	}
	return u
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
		if fc := graphql.GetFieldContext(ctx); fc != nil && fc.Field.Field != nil {
			announceEdgeParents(ctx, fc.Field.Selections, []*ent.Procedure{p})
			announceHistory(ctx, fc.Field.Selections, []*ent.Procedure{p})
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
