package core

// Listing procedures: sorts, filters and FindProcedures.

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/predicate"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/viewer"
)

// ProcedureSort is a field a procedure list can be sorted by.
type ProcedureSort string

// The sort fields of docs/design.md §5.
const (
	SortCreatedAt   ProcedureSort = "createdAt"
	SortDueAt       ProcedureSort = "dueAt"
	SortName        ProcedureSort = "name"
	SortProjectName ProcedureSort = "project.name"
)

// ProcedureSorts lists the sort fields, as the API documents them.
var ProcedureSorts = []ProcedureSort{SortCreatedAt, SortDueAt, SortProjectName, SortName}

// Valid reports whether s is a known sort field.
func (s ProcedureSort) Valid() bool { return slices.Contains(ProcedureSorts, s) }

// ProcedureOrder sorts a procedure list; ties always break on id in the same
// direction, so pages never overlap.
type ProcedureOrder struct {
	Field ProcedureSort
	Desc  bool
}

// DefaultProcedureOrder is newest first.
var DefaultProcedureOrder = ProcedureOrder{Field: SortCreatedAt, Desc: true}

// ProcedureFilter narrows a procedure list. Fields combine with AND; a list
// admits a procedure whose value is any of its values, and an empty list
// does not filter.
type ProcedureFilter struct {
	// Search is a case-insensitive substring of name, content or shortId.
	Search string
	// CategoryIDs and DoerIDs admit their ids, and with NoCategory and
	// NoDoer the procedures without one (alone: only those).
	CategoryIDs []string
	NoCategory  bool
	DoerIDs     []string
	NoDoer      bool
	ProjectIDs  []string
	States      []string
	Priorities  []string
	// DueFrom and DueTo bound dueAt, both inclusive (REST startedAt and dueAt).
	DueFrom *time.Time
	DueTo   *time.Time
}

// MaxFilterValues bounds the values of each list of a ProcedureFilter.
const MaxFilterValues = 100

// canonical is l sorted without repeats: filters that admit the same
// procedures share one key, so one total and one cursor scope.
func canonical(l []string) []string {
	out := slices.Clone(l)
	slices.Sort(out)
	return slices.Compact(out)
}

// key is f's canonical form, for the totals cache and the cursor scope.
func (f ProcedureFilter) key() string {
	var b strings.Builder
	b.WriteString(strconv.Quote(strings.TrimSpace(f.Search)))
	b.WriteByte('|')
	for _, l := range [][]string{f.CategoryIDs, f.DoerIDs, f.ProjectIDs, f.States, f.Priorities} {
		for _, v := range canonical(l) {
			b.WriteString(strconv.Quote(v))
			b.WriteByte(',')
		}
		b.WriteByte('|')
	}
	b.WriteString(strconv.FormatBool(f.NoCategory) + strconv.FormatBool(f.NoDoer) + "|")
	for _, t := range []*time.Time{f.DueFrom, f.DueTo} {
		if t != nil {
			b.WriteString(strconv.FormatInt(t.UnixMicro(), 10))
		}
		b.WriteByte('|')
	}
	return b.String()
}

// ProcedureList is one page of procedures and the count of all that match.
type ProcedureList = List[ent.Procedure]

// idChoice is a validated list of ids, and whether it admits none.
type idChoice struct {
	ids  []uuid.UUID
	none bool
}

func (c idChoice) filters() bool { return len(c.ids) > 0 || c.none }

// admits reports whether a procedure whose value is id (nil: none) passes.
func (c idChoice) admits(id *uuid.UUID) bool {
	if !c.filters() {
		return true
	}
	if id == nil {
		return c.none
	}
	return slices.Contains(c.ids, *id)
}

// filterValues checks the length of a filter's list.
func filterValues(val *apperr.Validation, field string, l []string) {
	if len(l) > MaxFilterValues {
		val.Add(field, "must list at most %d values", MaxFilterValues)
	}
}

// choiceOf validates a list of ids.
func choiceOf(val *apperr.Validation, field string, l []string, none bool) idChoice {
	filterValues(val, field, l)
	c := idChoice{none: none}
	for _, s := range canonical(l) {
		if id := optionalID(val, field, s); id != nil {
			c.ids = append(c.ids, *id)
		}
	}
	return c
}

// parsedFilter is a ProcedureFilter validated: what its predicates and its
// footprint (footprint.go) are made of.
type parsedFilter struct {
	search                      string
	categories, doers, projects idChoice
	states                      []procedure.State
	priorities                  []procedure.Priority
	dueFrom, dueTo              *time.Time
}

// enumValues validates a list of enum values.
func enumValues[T ~string](val *apperr.Validation, field string, l []string, allowed []T) []T {
	filterValues(val, field, l)
	var out []T
	for _, s := range canonical(l) {
		oneOf(val, field, s, allowed...)
		out = append(out, T(s))
	}
	return out
}

// parse validates f. Errors: validation_failed naming the parameter.
func (f ProcedureFilter) parse() (parsedFilter, error) {
	val := &apperr.Validation{}
	pf := parsedFilter{
		search:     searchTerm(val, f.Search),
		categories: choiceOf(val, "categoryId", f.CategoryIDs, f.NoCategory),
		doers:      choiceOf(val, "doerId", f.DoerIDs, f.NoDoer),
		projects:   choiceOf(val, "projectId", f.ProjectIDs, false),
		states:     enumValues(val, "state", f.States, procedure.StateValues()),
		priorities: enumValues(val, "priority", f.Priorities, procedure.PriorityValues()),
		dueFrom:    utcOrNil(f.DueFrom),
		dueTo:      utcOrNil(f.DueTo),
	}
	if f.DueFrom != nil && f.DueTo != nil && f.DueTo.Before(*f.DueFrom) {
		val.Add("dueAt", "must not precede startedAt")
	}
	return pf, val.Err()
}

// admits reports whether a procedure with facets p passes every part of
// the filter but the search term.
func (pf parsedFilter) admits(p *Facets) bool {
	project := p.ProjectID
	switch {
	case !pf.categories.admits(p.CategoryID), !pf.doers.admits(p.DoerID), !pf.projects.admits(&project),
		len(pf.states) > 0 && !slices.Contains(pf.states, p.State),
		len(pf.priorities) > 0 && !slices.Contains(pf.priorities, p.Priority),
		pf.dueFrom != nil && p.DueAt.Before(*pf.dueFrom),
		pf.dueTo != nil && p.DueAt.After(*pf.dueTo):
		return false
	}
	return true
}

// optionalIn is the predicate of an optional edge's choice: its ids, or
// none.
func optionalIn(c idChoice, in func(...uuid.UUID) predicate.Procedure, isNil func() predicate.Procedure) predicate.Procedure {
	switch {
	case len(c.ids) == 0:
		return isNil()
	case c.none:
		return procedure.Or(in(c.ids...), isNil())
	}
	return in(c.ids...)
}

// predicates are pf's.
func (pf parsedFilter) predicates() []predicate.Procedure {
	var ps []predicate.Procedure
	if q := pf.search; q != "" {
		ps = append(ps, procedure.Or(
			procedure.NameContainsFold(q),
			procedure.ContentContainsFold(q),
			procedure.ShortIDContainsFold(q),
		))
	}
	if pf.categories.filters() {
		ps = append(ps, optionalIn(pf.categories, procedure.CategoryIDIn, procedure.CategoryIDIsNil))
	}
	if pf.doers.filters() {
		ps = append(ps, optionalIn(pf.doers, procedure.DoerIDIn, procedure.DoerIDIsNil))
	}
	if len(pf.projects.ids) > 0 {
		ps = append(ps, procedure.ProjectIDIn(pf.projects.ids...))
	}
	if len(pf.states) > 0 {
		ps = append(ps, procedure.StateIn(pf.states...))
	}
	if len(pf.priorities) > 0 {
		ps = append(ps, procedure.PriorityIn(pf.priorities...))
	}
	if pf.dueFrom != nil {
		ps = append(ps, procedure.DueAtGTE(*pf.dueFrom))
	}
	if pf.dueTo != nil {
		ps = append(ps, procedure.DueAtLTE(*pf.dueTo))
	}
	return ps
}

// procedureKeyset is the keyset of the procedure list sorted by o (valid)
// in scope.
func procedureKeyset(o ProcedureOrder, scope string) keyset[ent.Procedure] {
	k := keyset[ent.Procedure]{scope: scope, desc: o.Desc, id: func(p *ent.Procedure) uuid.UUID { return p.ID }}
	switch o.Field {
	case SortCreatedAt:
		k.column, k.key = procedure.FieldCreatedAt, func(p *ent.Procedure) any { return p.CreatedAt }
	case SortDueAt:
		k.column, k.key = procedure.FieldDueAt, func(p *ent.Procedure) any { return p.DueAt }
	case SortName:
		k.column, k.key = procedure.FieldName, func(p *ent.Procedure) any { return p.Name }
	case SortProjectName:
		k.column, k.key = procedure.FieldProjectName, func(p *ent.Procedure) any { return p.ProjectName }
	}
	return k
}

// validOrder is o, the default when o is empty.
// Errors: validation_failed (sortBy).
func validOrder(o ProcedureOrder) (ProcedureOrder, error) {
	if o.Field == "" {
		o = DefaultProcedureOrder
	}
	if !o.Field.Valid() {
		return o, apperr.Invalid("sortBy", "must be one of %s", joinValues(ProcedureSorts))
	}
	return o, nil
}

// procedureQuery checks what every procedure list starts from: a viewer,
// f (parsed) and o (the default when empty).
// Errors: unauthenticated, validation_failed naming the parameter.
func procedureQuery(ctx context.Context, f ProcedureFilter, o ProcedureOrder) (*viewer.Viewer, parsedFilter, ProcedureOrder, error) {
	v, err := require(ctx, viewer.RoleViewer)
	if err != nil {
		return nil, parsedFilter{}, o, err
	}
	pf, err := f.parse()
	if err != nil {
		return nil, parsedFilter{}, o, err
	}
	o, err = validOrder(o)
	return v, pf, o, err
}

// FindProcedures returns one page of the procedures matching f, sorted by o,
// with the exact total.
// Errors: unauthenticated, validation_failed naming the parameter.
func (s *Service) FindProcedures(ctx context.Context, f ProcedureFilter, o ProcedureOrder, w Window) (*ProcedureList, error) {
	v, pf, o, err := procedureQuery(ctx, f, o)
	if err != nil {
		return nil, err
	}
	preds := pf.predicates()
	key := f.key()
	k := procedureKeyset(o, scopeOf("procedures", key, string(o.Field), strconv.FormatBool(o.Desc)))
	list, err := listPage(ctx, s, "procedures", key, k, w, DefaultProcedurePageSize, MaxProcedurePageSize,
		func(ctx context.Context) (int, error) {
			if keys, ok := pf.tallyKeys(); ok {
				if n, found, err := s.tally(ctx, v.WorkspaceID, keys); err != nil || found {
					return n, err
				}
			}
			return s.client.Procedure.Query().Where(preds...).Count(ctx)
		},
		func(sl slice) ([]*ent.Procedure, error) {
			return s.client.Procedure.Query().Where(preds...).Where(where[predicate.Procedure](&sl)...).
				Order(orderBy[procedure.OrderOption](&sl)).Offset(sl.offset).Limit(sl.limit).All(ctx)
		})
	if err == nil {
		recordList(ctx, pf, o.Field, nil, list.Items)
	}
	return list, err
}
