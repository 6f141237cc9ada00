package graph

// Connections: Relay connections built from core's lists, the nested lists
// of projects, categories and members, and a procedure's comments.

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/google/uuid"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/graph/model"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/loader"
)

// connection builds a Relay connection's parts from a core page. The edges
// (an object and a cursor per item) and the page's cursors are made only
// when the operation selects them: list pages read nodes.
func connection[N any, E any](ctx context.Context, list *core.List[N], edge func(*N, string) E) ([]E, *model.PageInfo) {
	var edges []E
	pi := &model.PageInfo{HasNextPage: list.PageInfo.HasNextPage, HasPreviousPage: list.PageInfo.HasPreviousPage}
	if graphql.GetFieldContext(ctx) == nil {
		// Called by REST, which reads nodes only.
		return nil, pi
	}
	for _, f := range graphql.CollectFieldsCtx(ctx, nil) {
		switch f.Name {
		case "edges":
			edges = make([]E, len(list.Items))
			for i, n := range list.Items {
				edges[i] = edge(n, string(list.Cursor(n)))
			}
		case "pageInfo":
			if n := len(list.Items); n > 0 {
				start, end := string(list.Cursor(list.Items[0])), string(list.Cursor(list.Items[n-1]))
				pi.StartCursor, pi.EndCursor = &start, &end
			}
		}
	}
	return edges, pi
}

// procedureConnection is the connection of a page of procedures.
func procedureConnection(ctx context.Context, list *core.ProcedureList) *model.ProcedureConnection {
	edges, info := connection(ctx, list, func(n *ent.Procedure, c string) *model.ProcedureEdge {
		return &model.ProcedureEdge{Node: n, Cursor: c}
	})
	return &model.ProcedureConnection{Edges: edges, Nodes: list.Items, PageInfo: info, TotalCount: list.Total}
}

// nestedProcedures resolves a parent's procedures (Project.procedures,
// Category.procedures, Member.assignedProcedures): the lists of every
// parent the field is asked of are read at once (loader.Nested), with the
// edges the field selects on them primed for all.
func (r *Resolver) nestedProcedures(ctx context.Context, edge core.Parent, parent uuid.UUID, first *int, after *string,
	last *int, before *string, filter *model.ProcedureFilter, orderBy *model.ProcedureOrder) (*model.ProcedureConnection, error) {
	f, err := procedureFilter(filter)
	if err != nil {
		return nil, err
	}
	edges := connectionEdges(ctx)
	field := graphql.GetFieldContext(ctx).Field
	page, err := loader.Nested(ctx, nestedQuestion(edge, field.Field), parent,
		func(ctx context.Context, parents []uuid.UUID) (map[uuid.UUID]core.NestedPage, error) {
			skip := procedureSkip(graphql.GetOperationContext(ctx), field.Selections)
			pages, err := r.Service.FindProceduresOf(ctx, edge, parents, f, procedureOrder(orderBy), window(first, after, last, before), skip)
			if err != nil {
				return nil, err
			}
			all := pagesItems(pages, func(p core.NestedPage) *core.ProcedureList { return p.List })
			return pages, loader.PrimeListed(ctx, all, edges)
		})
	list, err := nestedList(page.List, page.Err, err, func() error { return fmt.Errorf("graph: no list read for %s %s", edge, parent) })
	if err != nil {
		return nil, err
	}
	return procedureConnection(ctx, list), nil
}

// procedureFieldColumns are the columns of the procedures that each field
// of the Procedure type reads (none: only those every list reads, such as
// the id). A field missing here, one added later, reads every column
// (procedureSkip), so that a partial procedure never answers it.
var procedureFieldColumns = map[string][]string{
	"__typename":      nil,
	"id":              nil,
	"shortId":         {procedure.FieldShortID},
	"name":            {procedure.FieldName},
	"priority":        {procedure.FieldPriority},
	"state":           {procedure.FieldState},
	"content":         {procedure.FieldContent},
	"categoryId":      {procedure.FieldCategoryID},
	"doerId":          {procedure.FieldDoerID},
	"creatorId":       {procedure.FieldCreatorID},
	"position":        {procedure.FieldPosition},
	"dueAt":           {procedure.FieldDueAt},
	"createdAt":       {procedure.FieldCreatedAt},
	"updatedAt":       {procedure.FieldUpdatedAt},
	"projectId":       {procedure.FieldProjectID},
	"workspaceId":     {procedure.FieldWorkspaceID},
	"captureId":       {procedure.FieldCaptureID},
	"displayVideo":    {procedure.FieldDisplayVideo},
	"isFineTunedData": {procedure.FieldIsFineTunedData},
	"category":        {procedure.FieldCategoryID},
	"doer":            {procedure.FieldDoerID},
	"project":         {procedure.FieldProjectID},
	"comments":        nil, // by the procedure's id; the reader reads the count itself
	"history":         nil, // by the procedure's id
}

// procedureSkip is what a connection of procedures selecting sel does not
// show of them: the groups of columns no field of its nodes, or of its
// edges' nodes, reads (every fragment counted, whatever its condition).
func procedureSkip(oc *graphql.OperationContext, sel ast.SelectionSet) core.ProcedureSkip {
	skip := core.SkipSummary | core.SkipDetail
	shown := func(sel ast.SelectionSet) {
		for _, f := range graphql.CollectFields(oc, sel, nil) {
			columns, known := procedureFieldColumns[f.Name]
			if !known {
				skip = 0
			}
			for _, c := range columns {
				skip &^= core.ProcedureColumnGroup(c)
			}
		}
	}
	for _, f := range graphql.CollectFields(oc, sel, nil) {
		switch f.Name {
		case "nodes":
			shown(f.Selections)
		case "edges":
			for _, g := range graphql.CollectFields(oc, f.Selections, nil) {
				if g.Name == "node" {
					shown(g.Selections)
				}
			}
		}
	}
	return skip
}

// pagesItems are the items of every page of a nested list read at once
// (loader.Nested), to prime their edges together.
func pagesItems[P, T any](pages map[uuid.UUID]P, list func(P) *core.List[T]) []*T {
	var all []*T
	for _, p := range pages {
		if l := list(p); l != nil {
			all = append(all, l.Items...)
		}
	}
	return all
}

// nestedList is one parent's page of a nested list as loader.Nested
// answered it: the read's error (err), else the page's own (pageErr: a
// cursor of another parent), else its list; missing is the error of a
// parent the read left out.
func nestedList[T any](list *core.List[T], pageErr, err error, missing func() error) (*core.List[T], error) {
	switch {
	case err != nil:
		return nil, err
	case pageErr != nil:
		return nil, pageErr
	case list == nil:
		return nil, missing()
	}
	return list, nil
}

// nestedQuestion names a nested field of one parent type in the
// operation: its arguments and selection are the field's (f), the same
// for every parent it is asked of, and what its list announces
// (announceNested).
func nestedQuestion(edge core.Parent, f *ast.Field) string {
	return fmt.Sprintf("%s|%p", edge, f)
}

// nestedFields are the fields that list a parent's procedures, by the
// parent's type.
var nestedFields = map[string]struct {
	field string
	edge  core.Parent
}{
	"Project":  {"procedures", core.ParentProject},
	"Category": {"procedures", core.ParentCategory},
	"Member":   {"assignedProcedures", core.ParentDoer},
}

// announceNested announces, for each nested field sel selects on objects of
// typ, that it will be asked of parents: the first to ask then reads the
// lists of all of them.
func announceNested(ctx context.Context, typ string, sel ast.SelectionSet, parents []uuid.UUID) {
	nested, ok := nestedFields[typ]
	if !ok || len(parents) == 0 {
		return
	}
	oc := graphql.GetOperationContext(ctx)
	for _, f := range graphql.CollectFields(oc, sel, []string{typ}) {
		if f.Name == nested.field {
			loader.Expect(ctx, nestedQuestion(nested.edge, f.Field), parents)
		}
	}
}

// commentWindow checks comments' first and last (cursors are checked by
// the read that takes them): n comments from the oldest, or the newest.
func commentWindow(first, last *int) (n int, newest bool, err error) {
	return core.CommentWindow(core.Window{First: first, Last: last})
}

// commentPrimeView is the window of comments a comments field with args
// shows, for priming with every sibling procedure's; false when it pages at
// a cursor (read by its resolver) or its arguments are refused.
func commentPrimeView(args map[string]any) (loader.CommentWindow, bool) {
	if args["after"] != nil || args["before"] != nil {
		return loader.CommentWindow{}, false
	}
	n, newest, err := commentWindow(intArg(args, "first"), intArg(args, "last"))
	if err != nil {
		return loader.CommentWindow{}, false
	}
	return loaderWindow(n, newest), true
}

// loaderWindow is the loader's window of n comments from one end: at
// least one, so that a page of none still reads the total.
func loaderWindow(n int, newest bool) loader.CommentWindow {
	n = max(n, 1)
	if newest {
		return loader.CommentWindow{Last: n}
	}
	return loader.CommentWindow{First: n}
}

// intArg reads an Int argument of an argument map (nil when absent; -1,
// which every check refuses, when out of range).
func intArg(args map[string]any, name string) *int {
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

// procedureComments resolves a procedure's comments: a page without a
// cursor from what was primed for the whole list (or one batched read),
// a page at a cursor by core.
func (r *Resolver) procedureComments(ctx context.Context, p *ent.Procedure, first *int, after *string, last *int, before *string) (*model.CommentConnection, error) {
	var list *core.CommentList
	if after == nil && before == nil {
		n, newest, err := commentWindow(first, last)
		if err != nil {
			return nil, err
		}
		rows, total, err := loader.Comments(ctx, p.ID, loaderWindow(n, newest), commentsShown(ctx))
		if err != nil {
			return nil, err
		}
		if len(rows) > n {
			if newest {
				rows = rows[len(rows)-n:]
			} else {
				rows = rows[:n]
			}
		}
		list = core.CommentPage(p.ID, rows, total, newest)
	} else {
		var err error
		if list, err = r.Service.ProcedureComments(ctx, p.ID, window(first, after, last, before)); err != nil {
			return nil, err
		}
		if fc := graphql.GetFieldContext(ctx); fc != nil && selectsAuthor(graphql.GetOperationContext(ctx), fc.Field.Selections) {
			if err := loader.PrimeMembers(ctx, memberIDs(list.Items, func(c *ent.Comment) uuid.UUID { return c.AuthorID })); err != nil {
				return nil, err
			}
		}
	}
	edges, info := connection(ctx, list, func(n *ent.Comment, c string) *model.CommentEdge {
		return &model.CommentEdge{Node: n, Cursor: c}
	})
	return &model.CommentConnection{Edges: edges, Nodes: list.Items, PageInfo: info, TotalCount: list.Total}, nil
}

// commentsShown is what the current caller of procedureComments leaves
// unshown of the comments: for a GraphQL field, what its selection does not
// show; for another caller, what it said it does not show
// (loader.ShowingComments: REST's embedded comments), else nothing.
func commentsShown(ctx context.Context) loader.CommentSkip {
	if fc := graphql.GetFieldContext(ctx); fc != nil && fc.Field.Field != nil {
		return commentSkipOf(graphql.GetOperationContext(ctx).Doc, fc.Field.Selections)
	}
	return loader.CommentsShown(ctx)
}

// everyCommentSkip is every column group a read of comments may skip.
const everyCommentSkip = loader.SkipCommentAuthor | loader.SkipCommentUpdatedAt

// commentFieldSkips are, by field of the Comment type, the column groups a
// read may skip when that field is shown. A field missing here (one added
// to the schema later) reads every column: it can never be answered from a
// comment read without the column it shows
// (TestPartialCommentsAnswerAsWholeOnes takes its fields from the schema).
var commentFieldSkips = map[string]loader.CommentSkip{
	"__typename":  everyCommentSkip,
	"id":          everyCommentSkip,
	"procedureId": everyCommentSkip,
	"text":        everyCommentSkip,
	"createdAt":   everyCommentSkip,
	"author":      everyCommentSkip &^ loader.SkipCommentAuthor,
	"updatedAt":   everyCommentSkip &^ loader.SkipCommentUpdatedAt,
}

// Levels of commentSkipOf's walk.
const (
	atConnection = iota // a connection of comments
	atEdge              // one of its edges
	atComment           // a comment
)

// maxFragmentNesting bounds how deep commentSkipOf follows fragment
// spreads (validation refuses cycles; past the bound it reads everything).
const maxFragmentNesting = 32

// commentSkipOf is what sel, selected on a connection of comments, leaves
// unshown of its comments: the column groups none of the fields it
// selects on its nodes or on its edges' nodes shows. It walks the document
// as written, every fragment whatever its type condition and every field
// whatever its @skip or @include, so that the primed read (selectedEdges)
// and each procedure's resolver reach the same answer from the same
// selection, without the allocations of collecting fields; a field a
// directive leaves out only makes the read take a column more.
func commentSkipOf(doc *ast.QueryDocument, sel ast.SelectionSet) loader.CommentSkip {
	if wholeComments.Load() {
		return 0
	}
	return shownSkip(doc, sel, atConnection, 0)
}

// wholeComments makes every view of comments read every column: the
// reference TestPartialCommentsAnswerAsWholeOnes compares partial reads
// with. Only graph's tests set it (export_test.go); it changes what is
// read, never what is answered.
var wholeComments atomic.Bool

func shownSkip(doc *ast.QueryDocument, sel ast.SelectionSet, level, nesting int) loader.CommentSkip {
	skip := everyCommentSkip
	for _, s := range sel {
		switch s := s.(type) {
		case *ast.Field:
			switch {
			case level == atComment:
				skip &= commentFieldSkips[s.Name]
			case level == atConnection && s.Name == "nodes", level == atEdge && s.Name == "node":
				skip &= shownSkip(doc, s.SelectionSet, atComment, nesting)
			case level == atConnection && s.Name == "edges":
				skip &= shownSkip(doc, s.SelectionSet, atEdge, nesting)
			}
		case *ast.InlineFragment:
			skip &= shownSkip(doc, s.SelectionSet, level, nesting)
		case *ast.FragmentSpread:
			def := s.Definition
			if def == nil && doc != nil {
				def = doc.Fragments.ForName(s.Name)
			}
			if def == nil || nesting >= maxFragmentNesting {
				return 0
			}
			skip &= shownSkip(doc, def.SelectionSet, level, nesting+1)
		}
	}
	return skip
}

// selectsAuthor reports whether sel, selected on a connection of comments,
// resolves their author (on its nodes or its edges' nodes).
func selectsAuthor(oc *graphql.OperationContext, sel ast.SelectionSet) bool {
	for _, f := range graphql.CollectFields(oc, sel, nil) {
		var nodes ast.SelectionSet
		switch f.Name {
		case "nodes":
			nodes = f.Selections
		case "edges":
			for _, g := range graphql.CollectFields(oc, f.Selections, nil) {
				if g.Name == "node" {
					nodes = append(nodes, g.Selections...)
				}
			}
		}
		for _, c := range graphql.CollectFields(oc, nodes, nil) {
			if c.Name == "author" {
				return true
			}
		}
	}
	return false
}

// announceObject announces obj, which the current field returns, to the
// nested fields that field selects on it, so that a single parent reads
// its lists at once rather than after dataloader's batch window.
func announceObject(ctx context.Context, obj any) {
	fc := graphql.GetFieldContext(ctx)
	if fc == nil || fc.Field.Field == nil {
		return
	}
	sel := fc.Field.Selections
	switch o := obj.(type) {
	case *ent.Project:
		announceNested(ctx, "Project", sel, []uuid.UUID{o.ID})
	case *ent.Category:
		announceNested(ctx, "Category", sel, []uuid.UUID{o.ID})
	case *ent.Member:
		announceNested(ctx, "Member", sel, []uuid.UUID{o.ID})
	}
}

// announced wraps a call returning one object with announceObject.
func announced[T any](ctx context.Context, obj *T, err error) (*T, error) {
	if err == nil && obj != nil {
		announceObject(ctx, obj)
	}
	return obj, err
}

// procedureParents are the edges of a procedure that lead to parents of
// nested lists, with the parent's type and id.
var procedureParents = []struct {
	field, typ string
	id         func(*ent.Procedure) *uuid.UUID
}{
	{"project", "Project", func(p *ent.Procedure) *uuid.UUID { return &p.ProjectID }},
	{"category", "Category", func(p *ent.Procedure) *uuid.UUID { return p.CategoryID }},
	{"doer", "Member", func(p *ent.Procedure) *uuid.UUID { return p.DoerID }},
}

// announceEdgeParents announces the projects, categories and doers of procs
// to the nested fields sel, selected on each procedure, selects on them.
func announceEdgeParents(ctx context.Context, sel ast.SelectionSet, procs []*ent.Procedure) {
	oc := graphql.GetOperationContext(ctx)
	for _, f := range graphql.CollectFields(oc, sel, nil) {
		for _, e := range procedureParents {
			if f.Name != e.field {
				continue
			}
			var ids []uuid.UUID
			for _, p := range procs {
				if id := e.id(p); id != nil {
					ids = append(ids, *id)
				}
			}
			announceNested(ctx, e.typ, f.Selections, ids)
		}
	}
}
