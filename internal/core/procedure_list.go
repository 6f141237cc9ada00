package core

// Listing procedures: sorts, filters and FindProcedures.

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"entgo.io/ent/dialect/sql"

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

// ProcedureFilter narrows a procedure list. Empty fields do not filter.
type ProcedureFilter struct {
	// Search is a case-insensitive substring of name, content or shortId.
	Search     string
	CategoryID string
	DoerID     string
	ProjectID  string
	State      string
	Priority   string
	// DueFrom and DueTo bound dueAt, both inclusive (REST startedAt and dueAt).
	DueFrom *time.Time
	DueTo   *time.Time
}

// key is f's canonical form, for the totals cache.
func (f ProcedureFilter) key() string {
	var b strings.Builder
	for _, part := range []string{strings.TrimSpace(f.Search), f.CategoryID, f.DoerID, f.ProjectID, f.State, f.Priority} {
		b.WriteString(strconv.Quote(part))
		b.WriteByte('|')
	}
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

// procedurePredicates checks f and returns its predicates.
// Errors: validation_failed naming the parameter.
func procedurePredicates(f ProcedureFilter) ([]predicate.Procedure, error) {
	val := &apperr.Validation{}
	var ps []predicate.Procedure
	if q := searchTerm(val, f.Search); q != "" {
		ps = append(ps, procedure.Or(
			procedure.NameContainsFold(q),
			procedure.ContentContainsFold(q),
			procedure.ShortIDContainsFold(q),
		))
	}
	if id := optionalID(val, "categoryId", f.CategoryID); id != nil {
		ps = append(ps, procedure.CategoryID(*id))
	}
	if id := optionalID(val, "doerId", f.DoerID); id != nil {
		ps = append(ps, procedure.DoerID(*id))
	}
	if id := optionalID(val, "projectId", f.ProjectID); id != nil {
		ps = append(ps, procedure.ProjectID(*id))
	}
	if f.State != "" {
		oneOf(val, "state", f.State, procedure.StateValues()...)
		ps = append(ps, procedure.StateEQ(procedure.State(f.State)))
	}
	if f.Priority != "" {
		oneOf(val, "priority", f.Priority, procedure.PriorityValues()...)
		ps = append(ps, procedure.PriorityEQ(procedure.Priority(f.Priority)))
	}
	if f.DueFrom != nil {
		ps = append(ps, procedure.DueAtGTE(f.DueFrom.UTC()))
	}
	if f.DueTo != nil {
		ps = append(ps, procedure.DueAtLTE(f.DueTo.UTC()))
	}
	if f.DueFrom != nil && f.DueTo != nil && f.DueTo.Before(*f.DueFrom) {
		val.Add("dueAt", "must not precede startedAt")
	}
	return ps, val.Err()
}

func procedureOrder(o ProcedureOrder) ([]procedure.OrderOption, error) {
	if o.Field == "" {
		o = DefaultProcedureOrder
	}
	if !o.Field.Valid() {
		return nil, apperr.Invalid("sortBy", "must be one of %s", joinValues(ProcedureSorts))
	}
	dir := sql.OrderAsc()
	if o.Desc {
		dir = sql.OrderDesc()
	}
	var first procedure.OrderOption
	switch o.Field {
	case SortCreatedAt:
		first = procedure.ByCreatedAt(dir)
	case SortDueAt:
		first = procedure.ByDueAt(dir)
	case SortName:
		first = procedure.ByName(dir)
	case SortProjectName:
		first = procedure.ByProjectName(dir)
	}
	return []procedure.OrderOption{first, procedure.ByID(dir)}, nil
}

// FindProcedures returns one page of the procedures matching f, sorted by o,
// with the exact total.
// Errors: unauthenticated, validation_failed naming the parameter.
func (s *Service) FindProcedures(ctx context.Context, f ProcedureFilter, o ProcedureOrder, w Window) (*ProcedureList, error) {
	v, err := require(ctx, viewer.RoleViewer)
	if err != nil {
		return nil, err
	}
	preds, err := procedurePredicates(f)
	if err != nil {
		return nil, err
	}
	order, err := procedureOrder(o)
	if err != nil {
		return nil, err
	}
	list, err := listPage(ctx, s, "procedures", f.key(), w, DefaultProcedurePageSize, MaxProcedurePageSize,
		func() (int, error) {
			if key, ok := f.tallyKey(); ok {
				if n, found, err := s.tally(ctx, v.WorkspaceID, key); err != nil || found {
					return n, err
				}
			}
			return s.client.Procedure.Query().Where(preds...).Count(ctx)
		},
		func(p Page) ([]*ent.Procedure, error) {
			return s.client.Procedure.Query().Where(preds...).Order(order...).Offset(p.Offset).Limit(p.Limit).All(ctx)
		})
	if err == nil {
		recordList(ctx, f, o.Field, list.Items)
	}
	return list, err
}
