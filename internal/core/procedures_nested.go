package core

// Nested procedure lists: the procedures of many projects, categories or
// doers at once (GraphQL's Project.procedures and the like). Every parent's
// page comes from one statement and every parent's total from one more,
// whatever the number of parents: docs/api.md, "Nested connections".

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"entgo.io/ent/dialect"
	"entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/predicate"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/tenancy"
	"github.com/procsvc/procsvc/internal/viewer"
)

// Parent is the edge a nested procedure list hangs from.
type Parent string

// The parents of nested procedure lists.
const (
	ParentProject  Parent = "project"
	ParentCategory Parent = "category"
	ParentDoer     Parent = "doer"
)

// column is the procedures' column holding the parent's id.
func (e Parent) column() string {
	switch e {
	case ParentCategory:
		return procedure.FieldCategoryID
	case ParentDoer:
		return procedure.FieldDoerID
	}
	return procedure.FieldProjectID
}

// of is the parent's id in facets p, uuid.Nil for none.
func (e Parent) of(p *Facets) uuid.UUID {
	var id *uuid.UUID
	switch e {
	case ParentProject:
		return p.ProjectID
	case ParentCategory:
		id = p.CategoryID
	case ParentDoer:
		id = p.DoerID
	}
	if id == nil {
		return uuid.Nil
	}
	return *id
}

// ofProcedure is the parent's id of p, uuid.Nil for none.
func (e Parent) ofProcedure(p *ent.Procedure) uuid.UUID {
	return e.of(&Facets{ProjectID: p.ProjectID, CategoryID: p.CategoryID, DoerID: p.DoerID})
}

// MaxParentsPerRead bounds the parents one statement pages through; more
// are read a statement per this many.
const MaxParentsPerRead = 100

// NestedPage is one parent's page of a nested list, or why it has none
// (a cursor of another parent or list).
type NestedPage struct {
	List *ProcedureList
	Err  error
}

// ProcedureSkip names the groups of a procedure's columns that the caller
// of a nested list does not show, which the list then leaves unread: its
// procedures are partial, each unread field its zero value. The zero value
// reads every column. Whatever it skips, a list reads the columns it needs
// itself (the id, the workspace, the parents, the state and the sort
// keys: ProcedureColumnGroup's group 0).
//
// Columns go by a few groups rather than one by one so that the
// statements' texts stay few: each is prepared once per connection, and a
// client sending every subset of the fields would otherwise fill the
// pool's prepared texts with its own (docs/performance.md, "Columns a page
// shows").
type ProcedureSkip uint8

// The groups of columns a nested list may skip.
const (
	// SkipSummary leaves out what a card shows: the short id, the name,
	// the priority and the due date.
	SkipSummary ProcedureSkip = 1 << iota
	// SkipDetail leaves out every other column: the content, the
	// creator, the position, the capture, the flags, the number, the
	// project's name and the update time.
	SkipDetail
)

// ProcedureColumnGroup is the group a column of the procedures belongs to:
// SkipSummary, SkipDetail, or 0 for those a list always reads. Every list
// reads the comment count, which tells the loaders what the comments'
// read may skip (loader.PrimeListed).
func ProcedureColumnGroup(column string) ProcedureSkip {
	switch column {
	case procedure.FieldID, procedure.FieldWorkspaceID, procedure.FieldProjectID, procedure.FieldCategoryID,
		procedure.FieldDoerID, procedure.FieldState, procedure.FieldCreatedAt, procedure.FieldCommentCount:
		return 0
	case procedure.FieldShortID, procedure.FieldName, procedure.FieldPriority, procedure.FieldDueAt:
		return SkipSummary
	}
	return SkipDetail
}

// columns are the procedures' columns a list reads when it skips skip and
// sorts by sortColumn; nil for every column.
func (skip ProcedureSkip) columns(sortColumn string) []string {
	if skip == 0 {
		return nil
	}
	var out []string
	for _, c := range procedure.Columns {
		if skip&ProcedureColumnGroup(c) == 0 || c == sortColumn {
			out = append(out, c)
		}
	}
	return out
}

// FindProceduresOf returns, for each of parents, the page w selects of its
// procedures matching f sorted by o, with its exact total: all the pages
// in one statement (a UNION ALL of one index-ordered, limited read per
// parent) and all the totals in one more (a count grouped by parent,
// cached per workspace version as every total is), per MaxParentsPerRead
// parents. The procedures lack the columns skip leaves out. A cursor
// belongs to one parent's list: the other parents' pages are
// validation_failed.
// Errors: unauthenticated, validation_failed naming the argument.
func (s *Service) FindProceduresOf(ctx context.Context, edge Parent, parents []uuid.UUID, f ProcedureFilter,
	o ProcedureOrder, w Window, skip ProcedureSkip) (map[uuid.UUID]NestedPage, error) {
	v, pf, o, err := procedureQuery(ctx, f, o)
	if err != nil {
		return nil, err
	}
	if w.Start != 0 {
		return nil, apperr.Invalid("page", "nested lists page by cursor")
	}
	out := make(map[uuid.UUID]NestedPage, len(parents))
	for len(parents) > 0 {
		n := min(len(parents), MaxParentsPerRead)
		if err := s.findProceduresOf(ctx, v, edge, parents[:n], pf, f.key(), o, w, skip, out); err != nil {
			return nil, err
		}
		parents = parents[n:]
	}
	return out, nil
}

// nestedList is one parent's list, planned.
type nestedList struct {
	parent uuid.UUID
	keys   keyset[ent.Procedure]
	slice  slice
	total  int
}

func (s *Service) findProceduresOf(ctx context.Context, v *viewer.Viewer, edge Parent, parents []uuid.UUID, pf parsedFilter,
	key string, o ProcedureOrder, w Window, skip ProcedureSkip, out map[uuid.UUID]NestedPage) error {
	var lists []*nestedList
	for _, id := range parents {
		if _, done := out[id]; done || slices.ContainsFunc(lists, func(l *nestedList) bool { return l.parent == id }) {
			continue // a parent is read once (inSlices)
		}
		k := procedureKeyset(o, scopeOf("procedures", key, string(o.Field), strconv.FormatBool(o.Desc), string(edge), id.String()))
		sl, err := k.plan(w, DefaultProcedurePageSize, MaxProcedurePageSize)
		if err != nil {
			out[id] = NestedPage{Err: err}
			continue
		}
		lists = append(lists, &nestedList{parent: id, keys: k, slice: sl})
	}
	if len(lists) == 0 {
		return nil
	}
	preds := pf.predicates()
	if err := s.nestedTotals(ctx, v.WorkspaceID, edge, key, preds, lists); err != nil {
		return apperr.Map(err)
	}
	rows, err := s.nestedRows(ctx, v, edge, preds, lists, skip.columns(lists[0].keys.column))
	if err != nil {
		return apperr.Map(err)
	}
	groups := make(map[uuid.UUID][]*ent.Procedure, len(lists))
	for _, p := range rows {
		id := edge.ofProcedure(p)
		groups[id] = append(groups[id], p)
	}
	for _, l := range lists {
		items, info := l.keys.finish(l.slice, groups[l.parent])
		if items == nil {
			items = []*ent.Procedure{}
		}
		out[l.parent] = NestedPage{List: &ProcedureList{Items: items, Total: l.total, PageInfo: info, cursor: l.keys.cursor}}
		recordList(ctx, pf, o.Field, &parentRead{edge: edge, id: l.parent}, items)
	}
	return nil
}

// nestedTotals sets the total of every list: cached ones as they are, those
// filtering by nothing but their parent from the parent's tally, the others
// counted in one statement grouped by parent.
func (s *Service) nestedTotals(ctx context.Context, workspaceID uuid.UUID, edge Parent, key string, preds []predicate.Procedure, lists []*nestedList) error {
	listKey := func(id uuid.UUID) string { return string(edge) + ":" + id.String() + "|" + key }
	var missing []uuid.UUID
	for _, l := range lists {
		n, ok := s.totals.peek(ctx, "procedures", listKey(l.parent))
		if !ok {
			missing = append(missing, l.parent)
		}
		l.total = n
	}
	if len(missing) == 0 {
		return nil
	}
	if len(preds) == 0 {
		// Nothing but the parent: its tally, kept by every write.
		tallied, err := s.parentTallies(ctx, workspaceID, edge, missing)
		if err != nil {
			return err
		}
		missing = slices.DeleteFunc(missing, func(id uuid.UUID) bool {
			n, ok := tallied[id]
			if ok {
				for _, l := range lists {
					if l.parent == id {
						l.total = n
					}
				}
				s.totals.put(ctx, "procedures", listKey(id), n)
			}
			return ok
		})
		if len(missing) == 0 {
			return nil
		}
	}
	var counted []struct {
		Parent uuid.UUID `sql:"parent"`
		Count  int       `sql:"count"`
	}
	err := s.client.Procedure.Query().Where(preds...).Where(func(sel *sql.Selector) {
		sel.Where(sql.In(sel.C(edge.column()), anys(missing)...))
	}).Modify(func(sel *sql.Selector) {
		sel.Select(sql.As(sel.C(edge.column()), "parent"), sql.As(sql.Count("*"), "count")).GroupBy(sel.C(edge.column()))
	}).Scan(ctx, &counted)
	if err != nil {
		return err
	}
	byParent := make(map[uuid.UUID]int, len(counted))
	for _, c := range counted {
		byParent[c.Parent] = c.Count
	}
	for _, l := range lists {
		if n, ok := byParent[l.parent]; ok || slices.Contains(missing, l.parent) {
			l.total = n
			s.totals.put(ctx, "procedures", listKey(l.parent), n)
		}
	}
	return nil
}

// nestedRows reads every list's slice in one statement, through inSlices:
// on PostgreSQL a lateral read over the parents (one uuid[] parameter, so
// that the statement's text and plan are the same for any number of
// parents); on SQLite, without LATERAL, a UNION ALL of the per-parent
// reads. Each parent's rows come in its slice's order: PostgreSQL sorts
// them; SQLite runs the branches in turn, each in its own order (inSlices).
// The statement is written here and its rows scanned by a
// procedureScanner, not by ent (procedure_scan.go): it selects columns
// (nil: every column) and confines every row it returns to the viewer's
// workspace itself, in the outer read (and on PostgreSQL in each branch
// too), as ent's tenancy interceptor would.
func (s *Service) nestedRows(ctx context.Context, v *viewer.Viewer, edge Parent, preds []predicate.Procedure, lists []*nestedList, columns []string) ([]*ent.Procedure, error) {
	workspaceID, scoped, err := tenancy.Of(ctx)
	if err != nil {
		return nil, err
	}
	if !scoped {
		workspaceID = v.WorkspaceID
	}
	var todo []*nestedList
	for _, l := range lists {
		if l.slice.limit > 0 && l.total > 0 {
			todo = append(todo, l)
		}
	}
	if len(todo) == 0 {
		return nil, nil
	}
	// On SQLite a parent's branch reads the parent's index alone, without
	// confining its rows to the workspace: the index does not hold the
	// workspace, so that confining them there cost every row a read of its
	// table row (a quarter of the dashboard's nested read), and a parent's
	// procedures are its workspace's (every write that sets a parent finds
	// it in the writer's workspace). The outer read still confines every
	// row it returns, so that a row of another workspace pointing at a
	// parent (as no API write can make) never shows; it would shorten its
	// page, which the lists' totals (confined, counted apart) reveal: the
	// pages are then read again with confined branches, one statement
	// more. A page at a cursor is read confined from the start.
	sqlite := s.client.Driver().Dialect() == dialect.SQLite
	confine := !sqlite || slices.ContainsFunc(todo, func(l *nestedList) bool { return len(l.slice.bounds) > 0 || l.slice.offset > 0 })
	out, err := s.readSlices(ctx, edge, workspaceID, preds, todo, columns, confine)
	if err != nil || confine {
		return out, err
	}
	got := make(map[uuid.UUID]int, len(todo))
	for _, p := range out {
		got[edge.ofProcedure(p)]++
	}
	short := slices.ContainsFunc(todo, func(l *nestedList) bool { return got[l.parent] < min(l.slice.limit, l.total) })
	if !short {
		return out, nil
	}
	return s.readSlices(ctx, edge, workspaceID, preds, todo, columns, true)
}

// readSlices is nestedRows' statement over todo's slices, each branch
// confining its rows to the workspace when confine is set (always on
// PostgreSQL).
func (s *Service) readSlices(ctx context.Context, edge Parent, workspaceID uuid.UUID, preds []predicate.Procedure, todo []*nestedList, columns []string, confine bool) ([]*ent.Procedure, error) {
	drv := s.client.Driver()
	sqlite := drv.Dialect() == dialect.SQLite
	// branch is the read of one parent's slice (parent writes the
	// condition on the parent's column).
	branch := func(l *nestedList, key string, parent func(b *sql.Builder, column string)) *sql.Selector {
		t := sql.Table(procedure.Table)
		b := sliceRead(t, key)
		of := sql.P(func(bb *sql.Builder) { parent(bb, t.C(edge.column())) })
		if confine {
			of = sql.And(sql.EQ(t.C(tenancy.Column), workspaceID), of)
		}
		b.Where(of)
		for _, p := range preds {
			p(b)
		}
		for _, bound := range l.slice.bounds {
			bound(b)
		}
		l.slice.order(b)
		return b.Limit(l.slice.limit)
	}
	// One lateral read serves every list when they share the slice: always
	// but for a list at a cursor, which is one parent's.
	lateral := len(todo) == 1 || len(todo[0].slice.bounds) == 0
	parents := make([]uuid.UUID, len(todo))
	for i, l := range todo {
		parents[i] = l.parent
	}
	t := sql.Dialect(drv.Dialect()).Table(procedure.Table)
	sel := sql.Dialect(drv.Dialect()).Select().From(t)
	// Every row is the workspace's (the statement confines it there), so
	// that its workspace_id is filled in rather than read.
	read := selectProcedureColumns(sel, t, drv.Dialect(), columns, tenancy.Column)
	sel.Where(confinedTo(t.C(tenancy.Column), workspaceID, sqlite))
	if !sqlite {
		// Every list shares the window, so the slices share one order.
		todo[0].slice.order(sel)
	}
	inSlices(procedure.Table, rowid, parents, lateral, func(i int, key string, parent func(b *sql.Builder, column string)) *sql.Selector {
		return branch(todo[i], key, parent)
	})(sel)
	sc, err := newProcedureScanner(read)
	if err != nil {
		return nil, err
	}
	sc.scratch.WorkspaceID = workspaceID
	query, args := sel.Query()
	var rows sql.Rows
	if err := drv.Query(ctx, query, args, &rows); err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*ent.Procedure
	for rows.Next() {
		if err := rows.Scan(sc.dest...); err != nil {
			return nil, err
		}
		p, err := sc.procedure()
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// confinedTo is the predicate that column, a UUID column of the row found
// already (by its key, not through an index of column), holds id. On
// SQLite the column is a unary-plus expression, which has no type
// affinity: a column declared uuid has NUMERIC affinity, so that SQLite
// would first try to read both sides of the comparison as numbers (a
// failed parse of each UUID text, every row; 4 % of the SQLite
// dashboard's CPU in a profile). The stored ids and the bound one are
// texts of the same form, compared as they are.
func confinedTo(column string, id uuid.UUID, sqlite bool) *sql.Predicate {
	if !sqlite {
		return sql.EQ(column, id)
	}
	return sql.P(func(b *sql.Builder) { b.WriteString("+" + column + " = ").Arg(id) })
}

// inSlices reads the rows of each parent's slice of a nested list from
// table: branch(i, key, parent) is the read of parents[i]'s slice,
// selecting its rows' key column ("*": every column), parent writing the
// condition on the parent's column. It is a modifier of the query of
// table's rows, which must qualify every column it names (ent's own
// predicates and orders do).
//
// On PostgreSQL the query reads the slices themselves, named as table:
// when they share their bounds (lateral), one lateral read over the
// parents serves them all; otherwise each parent's branch is a UNION ALL
// term. Each row is read once, where a read of the slices' ids whose rows
// were then found again by primary key (and de-duplicated) took half as
// long again (the dashboard's nested read on workload W: 0.90 → 0.60 ms).
// The parents must be distinct: a row is read once for each slice that
// holds it.
//
// On SQLite the query reads the UNION ALL of the branches, each selecting
// its rows' sqliteKey, CROSS JOIN table, each row found by that key:
// sqliteKey is the rowid of a table whose primary key is not it
// (procedures, keyed by UUID text), which every index holds, so that each
// row is found at once rather than by a second search, of the id's own
// index, comparing UUID texts (the dashboard's nested read took 15 % less
// time). A rowid may change when the database is vacuumed, never within
// the statement. The slices' own reads of the rows cost SQLite more than
// that second read. SQLite runs a UNION ALL's terms in turn, and CROSS
// JOIN keeps its left side the outer loop, so that without an ORDER BY the
// rows come branch by branch, each in its branch's order: nestedRows sends
// none (the dashboard's nested read through modernc.org/sqlite: 1.25 ms
// sorted, 1.10 ms not), and graph's TestNestedConnections fails if the
// order is lost. A query that sorts them anyway (procedureHistories) only
// pays for the sort.
func inSlices(table, sqliteKey string, parents []uuid.UUID, lateral bool,
	branch func(i int, key string, parent func(b *sql.Builder, column string)) *sql.Selector) func(*sql.Selector) {
	return func(sel *sql.Selector) {
		if sel.Dialect() == dialect.Postgres {
			const every = "*" // the branches select whole rows
			sel.FromExpr(sql.P(func(b *sql.Builder) {
				if lateral {
					b.WriteString(`unnest(`).Arg(uuidArray(parents)).WriteString(`::uuid[]) AS "parent"("id") CROSS JOIN LATERAL (`)
					b.Join(branch(0, every, func(b *sql.Builder, column string) { b.WriteString(column + ` = "parent"."id"`) }))
				} else {
					b.WriteString("(")
					for i, p := range parents {
						if i > 0 {
							b.WriteString(" UNION ALL ")
						}
						br := branch(i, every, func(b *sql.Builder, column string) { b.WriteString(column + " = ").Arg(p) })
						b.WriteString("SELECT * FROM (").Join(br).WriteString(`) AS "b` + strconv.Itoa(i) + `"`)
					}
				}
				b.WriteString(") AS ").Ident(table)
			}))
			return
		}
		// The slices' keys, branch after branch, each row then found by its
		// key: CROSS JOIN keeps the slices the outer loop, so that the
		// rows come in the slices' order, branch by branch.
		key := sel.C(sqliteKey)
		sel.FromExpr(sql.P(func(b *sql.Builder) {
			b.WriteString("(")
			for i, p := range parents {
				if i > 0 {
					b.WriteString(" UNION ALL ")
				}
				br := branch(i, sqliteKey, func(b *sql.Builder, column string) { b.WriteString(column + " = ").Arg(p) })
				b.WriteString("SELECT " + b.Quote(sqliteKey) + " AS " + b.Quote(sliceKey) + " FROM (").Join(br).WriteString(`) AS "b` + strconv.Itoa(i) + `"`)
			}
			b.WriteString(") AS " + b.Quote(slicesTable) + " CROSS JOIN ").Ident(table)
		}))
		sel.Where(sql.ExprP(key + " = " + sql.Dialect(sel.Dialect()).Table(slicesTable).C(sliceKey)))
	}
}

// sliceRead starts the read of a slice of t's rows selecting key, one of
// t's columns or "*", every column (inSlices).
func sliceRead(t *sql.SelectTable, key string) *sql.Selector {
	if key == "*" {
		return sql.Select("*").From(t)
	}
	return sql.Select(t.C(key)).From(t)
}

// rowid is SQLite's key of a row in its table (inSlices).
const rowid = "rowid"

// slicesTable and sliceKey name the keys of the slices' rows on SQLite
// (inSlices).
const (
	slicesTable = "slices"
	sliceKey    = "slice_key"
)

// uuidArray is ids as a PostgreSQL array literal.
func uuidArray(ids []uuid.UUID) string {
	var b strings.Builder
	b.Grow(2 + 37*len(ids))
	b.WriteByte('{')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(id.String())
	}
	b.WriteByte('}')
	return b.String()
}

func anys(ids []uuid.UUID) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}
