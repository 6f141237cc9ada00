package graph

// The change log's connections (docs/api.md, "Events"): Query.events and
// Procedure.history, whose pages for every procedure of a list are read at
// once (loader.Nested, announced by the list as nested procedure lists
// are), and the members their events name, primed for the page.

import (
	"context"
	"fmt"

	"github.com/99designs/gqlgen/graphql"
	"github.com/google/uuid"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/graph/model"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/loader"
	"github.com/procsvc/procsvc/internal/respcache"
)

// eventConnection is the connection of a page of events.
func eventConnection(ctx context.Context, list *core.EventList) (*model.EventConnection, error) {
	nodes, err := eventsOf(list.Items)
	if err != nil {
		return nil, err
	}
	edges, info := connection(ctx, list, func(_ *ent.Event, c string) *model.EventEdge { return &model.EventEdge{Cursor: c} })
	for i := range edges {
		edges[i].Node = nodes[i]
	}
	return &model.EventConnection{Edges: edges, Nodes: nodes, PageInfo: info, TotalCount: list.Total}, nil
}

// eventsOf is rows as GraphQL shows them.
func eventsOf(rows []*ent.Event) ([]*model.Event, error) {
	out := make([]*model.Event, len(rows))
	for i, e := range rows {
		var err error
		if out[i], err = model.EventOf(e); err != nil {
			return nil, fmt.Errorf("graph: event %s: %w", e.ID, err)
		}
	}
	return out, nil
}

// events resolves Query.events: its arguments as core's filter and order
// (the version bound is REST's after, here afterVersion, since after is
// the connection's cursor), the page, and the members it shows.
func (r *Resolver) events(ctx context.Context, first *int, after *string, last *int, before *string, afterVersion *int,
	filter *model.EventFilter, order *model.OrderDirection) (*model.EventConnection, error) {
	f := core.EventFilter{}
	if afterVersion != nil {
		v := int64(*afterVersion)
		f.After = &v
	}
	if filter != nil {
		f.Kinds = stringsOf(filter.Kinds)
		f.EntityID, f.ProcedureID, f.ProjectID, f.ActorID = str(filter.EntityID), str(filter.ProcedureID), str(filter.ProjectID), str(filter.ActorID)
	}
	o := core.EventOrder{OldestFirst: order != nil && *order == model.OrderDirectionAsc}
	list, err := r.EventPage(ctx, f, o, window(first, after, last, before))
	if err != nil {
		// The filter's list of kinds is kinds here, kind in core (REST's).
		return nil, apperr.Renamed(err, map[string]string{"kind": "kinds"})
	}
	if selectsActorMember(ctx) {
		if err := primeActors(ctx, list.Items); err != nil {
			return nil, err
		}
	}
	return eventConnection(ctx, list)
}

// historyQuestion names Procedure.history as selected by f, for the
// nested loader (see nestedQuestion).
func historyQuestion(f *ast.Field) string { return fmt.Sprintf("history|%p", f) }

// procedureHistory resolves a procedure's history: the histories of every
// procedure the field is asked of are read at once (loader.Nested), with
// the members their events show.
func (r *Resolver) procedureHistory(ctx context.Context, p *ent.Procedure, first *int, after *string, last *int, before *string) (*model.EventConnection, error) {
	// Pruning deletes events without a write: no cached answer may outlive
	// it (internal/respcache keeps an answer until the next write).
	respcache.MarkUncacheable(ctx)
	fc := graphql.GetFieldContext(ctx)
	actors := selectsActorMember(ctx)
	w := window(first, after, last, before)
	page, err := loader.Nested(ctx, historyQuestion(fc.Field.Field), p.ID,
		func(ctx context.Context, procs []uuid.UUID) (map[uuid.UUID]core.HistoryPage, error) {
			pages, err := r.Service.ProcedureHistories(ctx, procs, w)
			if err != nil || !actors {
				return pages, err
			}
			return pages, primeActors(ctx, pagesItems(pages, func(pg core.HistoryPage) *core.EventList { return pg.List }))
		})
	list, err := nestedList(page.List, page.Err, err, func() error { return fmt.Errorf("graph: no history read for procedure %s", p.ID) })
	if err != nil {
		return nil, err
	}
	return eventConnection(ctx, list)
}

// announceHistory announces, for each history field sel (selected on
// each of procs) selects, that it will be asked of every one of them: the
// first to ask reads them all.
func announceHistory(ctx context.Context, sel ast.SelectionSet, procs []*ent.Procedure) {
	if len(procs) == 0 {
		return
	}
	var ids []uuid.UUID
	for _, f := range graphql.CollectFields(graphql.GetOperationContext(ctx), sel, nil) {
		if f.Name != "history" {
			continue
		}
		if ids == nil {
			ids = memberIDs(procs, func(p *ent.Procedure) uuid.UUID { return p.ID })
		}
		loader.Expect(ctx, historyQuestion(f.Field), ids)
	}
}

// selectsActorMember reports whether the current field, returning a
// connection of events, shows their actors' members.
func selectsActorMember(ctx context.Context) bool {
	fc := graphql.GetFieldContext(ctx)
	if fc == nil || fc.Field.Field == nil {
		return false
	}
	oc := graphql.GetOperationContext(ctx)
	return showsActorMember(oc, connectionNodes(oc, fc.Field.Selections))
}

// connectionNodes is what sel, selected on a connection, selects on its
// nodes and on its edges' nodes.
func connectionNodes(oc *graphql.OperationContext, sel ast.SelectionSet) ast.SelectionSet {
	var nodes ast.SelectionSet
	for _, f := range graphql.CollectFields(oc, sel, nil) {
		switch f.Name {
		case "nodes":
			nodes = append(nodes, f.Selections...)
		case "edges":
			nodes = append(nodes, edgeNodes(oc, f.Selections)...)
		}
	}
	return nodes
}

// edgeNodes is what sel, selected on edges, selects on their nodes.
func edgeNodes(oc *graphql.OperationContext, sel ast.SelectionSet) ast.SelectionSet {
	var nodes ast.SelectionSet
	for _, g := range graphql.CollectFields(oc, sel, nil) {
		if g.Name == "node" {
			nodes = append(nodes, g.Selections...)
		}
	}
	return nodes
}

// showsActorMember reports whether sel, selected on events, resolves their
// actor's member.
func showsActorMember(oc *graphql.OperationContext, sel ast.SelectionSet) bool {
	for _, f := range graphql.CollectFields(oc, sel, nil) {
		if f.Name != "actor" {
			continue
		}
		for _, g := range graphql.CollectFields(oc, f.Selections, nil) {
			if g.Name == "member" {
				return true
			}
		}
	}
	return false
}

// primeActors loads the members events name, in one statement (none when
// they are loaded already).
func primeActors(ctx context.Context, evs []*ent.Event) error {
	var members []uuid.UUID
	for _, e := range evs {
		if e.ActorMemberID != nil {
			members = append(members, *e.ActorMemberID)
		}
	}
	if len(members) == 0 {
		return nil
	}
	return loader.PrimeMembers(ctx, members)
}

// primeEventActors is PrimeList for a list of events: their actors'
// members, when sel shows them.
func primeEventActors(ctx context.Context, sel ast.SelectionSet, evs []*model.Event) bool {
	oc := graphql.GetOperationContext(ctx)
	if !showsActorMember(oc, sel) {
		return true
	}
	var members []uuid.UUID
	for _, e := range evs {
		if e == nil {
			return false
		}
		if e.Actor.MemberID != nil {
			members = append(members, *e.Actor.MemberID)
		}
	}
	return len(members) == 0 || loader.PrimeMembers(ctx, members) == nil
}
