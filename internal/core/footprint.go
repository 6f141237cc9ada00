package core

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/procedure"
)

// A Footprint is what one read of procedures depended on: the procedures it
// returned and the lists (filter and sort) it paged through. A write that
// touches none of them cannot change what the read would answer, so a
// response computed before that write may still be served after it
// (internal/respcache). docs/performance.md, "Invalidation by footprint",
// explains the rules; TouchedBy is them.
//
// Core's procedure reads (Procedure, FindProcedures) record into the
// Footprint of their context (WithFootprint). Only they record: the caller
// decides whether a whole response consists of such reads (a REST procedure
// route, a GraphQL query of procedures and their edges) and otherwise treats
// the response as touched by every write.
type Footprint struct {
	mu         sync.Mutex
	procedures map[uuid.UUID]struct{}
	// columns holds the column of each procedure returned: a move that
	// renumbers its target column changes their positions.
	columns map[column]struct{}
	lists   []listRead
	// unknown: a read recorded something TouchedBy cannot reason about.
	unknown bool
}

// listRead is one page of a procedure list: its filter, parsed, its
// parent (a nested list's: the procedures of one project, category or
// doer), and its sort.
type listRead struct {
	filter parsedFilter
	parent *parentRead
	sort   ProcedureSort
}

// parentRead is the parent of a nested list.
type parentRead struct {
	edge Parent
	id   uuid.UUID
}

// column is a board column: a project and a state.
type column struct {
	project uuid.UUID
	state   procedure.State
}

type footprintKey struct{}

// WithFootprint returns ctx in which core's procedure reads record into fp.
func WithFootprint(ctx context.Context, fp *Footprint) context.Context {
	return context.WithValue(ctx, footprintKey{}, fp)
}

func footprintFrom(ctx context.Context) *Footprint {
	fp, _ := ctx.Value(footprintKey{}).(*Footprint)
	return fp
}

// NewFootprint returns an empty footprint.
func NewFootprint() *Footprint {
	return &Footprint{procedures: map[uuid.UUID]struct{}{}, columns: map[column]struct{}{}}
}

// shown notes that p is part of the response; fp.mu is held.
func (fp *Footprint) shown(p *ent.Procedure) {
	fp.procedures[p.ID] = struct{}{}
	fp.columns[column{p.ProjectID, p.State}] = struct{}{}
}

// Size estimates the memory fp holds, in bytes (nil: none), so that a cache
// of small responses with footprints stays within its bound.
func (fp *Footprint) Size() int64 {
	if fp == nil {
		return 0
	}
	fp.mu.Lock()
	defer fp.mu.Unlock()
	// The struct and its two maps, then each entry with its share of
	// buckets: fitted to the heap growth of 2 000 footprints (730 bytes
	// with one procedure, 4 200 with a page of 50).
	return 650 + 40*int64(len(fp.procedures)) + 30*int64(len(fp.columns)) + 96*int64(len(fp.lists))
}

// Empty reports whether nothing was recorded.
func (fp *Footprint) Empty() bool {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	return len(fp.procedures) == 0 && len(fp.lists) == 0 && !fp.unknown
}

// recordProcedure notes that the read returned p.
func recordProcedure(ctx context.Context, p *ent.Procedure) {
	if fp := footprintFrom(ctx); fp != nil && p != nil {
		fp.mu.Lock()
		fp.shown(p)
		fp.mu.Unlock()
	}
}

// recordList notes that the read paged through the list pf (of parent,
// when not nil) sorted by sort and returned items (its total and page
// depend on every procedure the list admits; what is shown of each, on the
// items).
func recordList(ctx context.Context, pf parsedFilter, sort ProcedureSort, parent *parentRead, items []*ent.Procedure) {
	fp := footprintFrom(ctx)
	if fp == nil {
		return
	}
	fp.mu.Lock()
	defer fp.mu.Unlock()
	for _, p := range items {
		fp.shown(p)
	}
	fp.lists = append(fp.lists, listRead{filter: pf, parent: parent, sort: sort})
}

func utcOrNil(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// TouchedBy reports whether c may change what the recorded reads would
// answer. It errs on the side of yes: every change it cannot reason about
// (not about one procedure, without both sides' facets) touches.
func (fp *Footprint) TouchedBy(c Change) bool {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	if fp.unknown || c.ProcedureID == uuid.Nil {
		return true
	}
	switch c.Kind {
	case ProcedureCreated, ProcedureUpdated, ProcedureMoved, ProcedureDeleted, ProcedureCommented:
	default:
		return true
	}
	if _, shown := fp.procedures[c.ProcedureID]; shown {
		return true
	}
	if c.Kind == ProcedureCommented {
		// Comments are shown only under their procedure, which is not
		// among those returned.
		return false
	}
	if c.Kind == ProcedureMoved && c.After != nil {
		// A move may renumber its target column: every position in it.
		if _, ok := fp.columns[column{c.After.ProjectID, c.After.State}]; ok {
			return true
		}
	}
	if !c.Before.known() && !c.After.known() {
		return true
	}
	if (c.Kind == ProcedureCreated) != (c.Before == nil) || (c.Kind == ProcedureDeleted) != (c.After == nil) ||
		(c.Before != nil && !c.Before.known()) || (c.After != nil && !c.After.known()) {
		return true
	}
	for _, l := range fp.lists {
		if l.touchedBy(c) {
			return true
		}
	}
	return false
}

// touchedBy reports whether c may change the list's total or which
// procedures its pages hold, in which order. c is about a procedure the
// read did not return, with facets on each side it exists.
func (l listRead) touchedBy(c Change) bool {
	before := c.Before != nil && l.admits(c.Before)
	after := c.After != nil && l.admits(c.After)
	if !before && !after {
		// Outside the list before and after: whatever a search would
		// say, the facets alone keep it out.
		return false
	}
	if before != after || c.Before == nil || c.After == nil {
		// Enters or leaves the list (or may: a search term's match is
		// unknown here), which moves the total and every later page.
		return true
	}
	if l.filter.search != "" && c.Reworded {
		return true // may start or stop matching the search
	}
	// In the list before and after: its place changes only with its sort
	// key (createdAt never changes).
	switch l.sort {
	case SortCreatedAt:
		return false
	case SortDueAt:
		return !c.Before.DueAt.Equal(c.After.DueAt)
	case SortName:
		return c.Renamed
	case SortProjectName:
		return c.Before.ProjectID != c.After.ProjectID
	}
	return true
}

// admits reports whether a procedure with facets p passes every part of
// the list's filter but the search term, and belongs to its parent.
func (l listRead) admits(p *Facets) bool {
	return l.filter.admits(p) && (l.parent == nil || l.parent.edge.of(p) == l.parent.id)
}
