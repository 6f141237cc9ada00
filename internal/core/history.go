package core

// Reading the change log (docs/api.md, "Events"): a procedure's history and
// the workspace's events list. Both are lists like the others: keyset
// cursors (here on the version, which no two events of a workspace share),
// exact totals, tenancy by ent. Unlike the others, their totals are
// counted on every read, never cached per workspace version: retention
// deletes events without a write, so the version does not say when a
// count of events went stale (a count is one index range; see
// TestEventPlansUseIndexes).

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/event"
	"github.com/procsvc/procsvc/ent/predicate"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/ent/workspace"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/limits"
	"github.com/procsvc/procsvc/internal/tenancy"
	"github.com/procsvc/procsvc/internal/viewer"
)

// Page sizes of the change log's lists: a procedure's history pages like
// its comments, the events list like the other lists.
const (
	DefaultHistoryPageSize = DefaultCommentPageSize
	MaxHistoryPageSize     = MaxCommentPageSize
	DefaultEventPageSize   = DefaultListPageSize
	MaxEventPageSize       = MaxListPageSize
)

// MaxFieldChanges is the most fields one event lists: a procedure's
// created or deleted (every field of procedureFields).
const MaxFieldChanges = 12

// EventList is one page of events and how many match.
type EventList = List[ent.Event]

// eventColumns are the columns an event is read with: all but its facets,
// which only a replayed subscription reads.
var eventColumns = []string{event.FieldID, event.FieldWorkspaceID, event.FieldVersion, event.FieldKind,
	event.FieldEntityID, event.FieldProcedureID, event.FieldProjectID, event.FieldActorMemberID,
	event.FieldActorTokenID, event.FieldCreatedAt, event.FieldChanges}

// EntityType is the type of record an event of kind k wrote: "procedure"
// of "procedure.updated".
func (k EventKind) EntityType() string { return entityType(k) }

// EventChanges are the fields e changed, as logged (an empty list for
// none). Errors: a row whose changes are not the JSON entryRow writes.
func EventChanges(e *ent.Event) ([]FieldChange, error) {
	var out []FieldChange
	if err := json.Unmarshal([]byte(e.Changes), &out); err != nil {
		return nil, err
	}
	if out == nil {
		out = []FieldChange{}
	}
	return out, nil
}

// CheckHistoryWindow checks the sizes of a history's window (its cursors
// are checked by the read that takes them), so that a history asked of
// many procedures is refused once. Errors: validation_failed naming the
// argument.
func CheckHistoryWindow(w Window) error {
	_, err := historyKeyset(uuid.Nil).plan(Window{First: w.First, Last: w.Last}, DefaultHistoryPageSize, MaxHistoryPageSize)
	return err
}

// eventKeyset orders a list of events by version (newest first when desc)
// for cursors of scope.
func eventKeyset(scope string, desc bool) keyset[ent.Event] {
	return keyset[ent.Event]{
		scope: scope, column: event.FieldVersion, desc: desc, unique: true,
		key: func(e *ent.Event) any { return e.Version },
		id:  func(e *ent.Event) uuid.UUID { return e.ID },
	}
}

// visibleEvents keeps a read of the log to the events v may read: those of
// the records v's role reads. A token's events show its name, member and
// expiry, so only the roles that read the tokens list (tokenReaders) read
// them; every role reads the other records (members with their emails and
// roles included). A history needs none: it holds only events naming a
// procedure, its own and its comments'.
func visibleEvents(v *viewer.Viewer) []predicate.Event {
	if v.Role.AtLeast(tokenReaders) {
		return nil
	}
	return []predicate.Event{event.KindNotIn(tokenEventKinds...)}
}

// tokenEventKinds are the kinds of the events that write a token.
var tokenEventKinds = func() []string {
	var out []string
	for _, k := range EventKinds {
		if k.EntityType() == "token" {
			out = append(out, string(k))
		}
	}
	return out
}()

// Event returns one event of the viewer's workspace by id (GraphQL's
// node), if the viewer may read it (visibleEvents).
// Errors: unauthenticated, not_found.
func (s *Service) Event(ctx context.Context, id string) (*ent.Event, error) {
	v, uid, err := target(ctx, viewer.RoleViewer, ids.KindEvent, "event", id)
	if err != nil {
		return nil, err
	}
	e, err := s.client.Event.Query().Where(event.ID(uid)).Where(visibleEvents(v)...).Select(eventColumns...).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, apperr.NotFoundf("event")
	}
	return e, apperr.Map(err)
}

// EventFilter narrows the events list; its fields combine with AND, and an
// empty one does not filter.
type EventFilter struct {
	// After admits only the events of versions above it: what happened
	// since a version a client has seen (nil: every event kept).
	After *int64
	// Kinds admits the events of any of these kinds (EventKinds).
	Kinds []string
	// EntityID admits the events of one record (its id, of any kind),
	// ProcedureID those of a procedure and its comments, ProjectID those
	// naming a project (docs/api.md: a comment's edit and delete name
	// none), ActorID those written by a member.
	EntityID, ProcedureID, ProjectID, ActorID string
}

// EventOrder is the order of the events list: by version, newest first
// unless OldestFirst (a feed read after a version).
type EventOrder struct{ OldestFirst bool }

// parsedEventFilter is an EventFilter validated.
type parsedEventFilter struct {
	after                             *int64
	kinds                             []string
	entity, procedure, project, actor *uuid.UUID
}

// parse validates f. Errors: validation_failed naming the parameter as
// GraphQL does (afterVersion: REST's after is the list's cursor there), and
// kind as REST does.
func (f EventFilter) parse() (parsedEventFilter, error) {
	val := &apperr.Validation{}
	pf := parsedEventFilter{
		after:     f.After,
		entity:    optionalID(val, "entityId", f.EntityID),
		procedure: optionalID(val, "procedureId", f.ProcedureID),
		project:   optionalID(val, "projectId", f.ProjectID),
		actor:     optionalID(val, "actorId", f.ActorID),
	}
	if f.After != nil && *f.After < 0 {
		val.Add("afterVersion", "must be a version (0 or more)")
	}
	filterValues(val, "kind", f.Kinds)
	for _, k := range canonical(f.Kinds) {
		if !ValidEventKind(EventKind(k)) {
			val.Add("kind", "must be one of %s", joinValues(EventKinds))
			break
		}
		pf.kinds = append(pf.kinds, k)
	}
	return pf, val.Err()
}

// key is pf's canonical form, for the cursor scope.
func (pf parsedEventFilter) key() string {
	var b strings.Builder
	if pf.after != nil {
		b.WriteString(strconv.FormatInt(*pf.after, 10))
	}
	b.WriteByte('|')
	b.WriteString(strings.Join(pf.kinds, ","))
	for _, id := range []*uuid.UUID{pf.entity, pf.procedure, pf.project, pf.actor} {
		b.WriteByte('|')
		if id != nil {
			b.WriteString(id.String())
		}
	}
	return b.String()
}

// predicates are pf's.
func (pf parsedEventFilter) predicates() []predicate.Event {
	var ps []predicate.Event
	if pf.after != nil {
		ps = append(ps, event.VersionGT(*pf.after))
	}
	if len(pf.kinds) > 0 {
		ps = append(ps, event.KindIn(pf.kinds...))
	}
	if pf.entity != nil {
		ps = append(ps, event.EntityID(*pf.entity))
	}
	if pf.procedure != nil {
		ps = append(ps, event.ProcedureID(*pf.procedure))
	}
	if pf.project != nil {
		ps = append(ps, event.ProjectID(*pf.project))
	}
	if pf.actor != nil {
		ps = append(ps, event.ActorMemberID(*pf.actor))
	}
	return ps
}

// Events returns the page w selects of the viewer's workspace's events that
// f admits and the viewer may read (visibleEvents), in order o, with their
// exact total.
// A page read after a version older than the retention (an event after it
// may have been pruned) is refused rather than answered with a hole, so
// that a client catching up knows to reload instead.
// Errors: unauthenticated, validation_failed naming the parameter.
func (s *Service) Events(ctx context.Context, f EventFilter, o EventOrder, w Window) (*EventList, error) {
	v, err := require(ctx, viewer.RoleViewer)
	if err != nil {
		return nil, err
	}
	pf, err := f.parse()
	if err != nil {
		return nil, err
	}
	k := eventKeyset(scopeOf("events", pf.key(), strconv.FormatBool(o.OldestFirst)), !o.OldestFirst)
	preds := append(pf.predicates(), visibleEvents(v)...)
	list, err := s.eventPage(ctx, k, w, DefaultEventPageSize, MaxEventPageSize, preds)
	if err != nil || pf.after == nil {
		return list, err
	}
	// Read after the page: pruning raises the horizon in the transaction
	// that deletes, so an event the page missed for having been pruned
	// shows here.
	ws, err := s.client.Workspace.Query().Where(workspace.ID(v.WorkspaceID)).Select(workspace.FieldEventsPrunedTo).Only(ctx)
	if err != nil {
		return nil, apperr.Map(err)
	}
	if *pf.after < ws.EventsPrunedTo {
		return nil, apperr.Invalid("afterVersion", "events after version %d were pruned (the log keeps events for the server's retention, up to version %d now); "+
			"reload what you show, then read the events after version %d", *pf.after, ws.EventsPrunedTo, ws.EventsPrunedTo)
	}
	return list, nil
}

// eventPage reads the page w selects (sizes def and max) of the events
// preds admit, ordered by k, and counts them all.
func (s *Service) eventPage(ctx context.Context, k keyset[ent.Event], w Window, def, max int, preds []predicate.Event) (*EventList, error) {
	sl, err := k.plan(w, def, max)
	if err != nil {
		return nil, err
	}
	// COUNT(*), not ent's COUNT(id): the index the filter ranges over
	// answers it alone.
	total, err := s.client.Event.Query().Where(preds...).Aggregate(ent.Count()).Int(ctx)
	if err != nil {
		return nil, apperr.Map(err)
	}
	var rows []*ent.Event
	if total > 0 && sl.offset < total {
		rows, err = s.client.Event.Query().Where(preds...).Where(where[predicate.Event](&sl)...).
			Order(orderBy[event.OrderOption](&sl)).Offset(sl.offset).Limit(sl.limit).Select(eventColumns...).All(ctx)
		if err != nil {
			return nil, apperr.Map(err)
		}
	}
	out := &EventList{Total: total, cursor: k.cursor}
	out.Items, out.PageInfo = k.finish(sl, rows)
	if out.Items == nil {
		out.Items = []*ent.Event{}
	}
	return out, nil
}

// historyKeyset is the keyset of a procedure's history: newest first.
func historyKeyset(procedureID uuid.UUID) keyset[ent.Event] {
	return eventKeyset(scopeOf("history", procedureID.String()), true)
}

// ProcedureHistory returns the page w selects of the history of the
// procedure idOrShortID names: its events and its comments' events, newest
// first, with their exact total. Any role may read it. The events outlive
// the procedure: a deleted procedure's history is still read by its id (a
// shortId names only a procedure that exists).
// Errors: unauthenticated, validation_failed naming the argument,
// not_found (no procedure of the viewer's workspace has or had that id).
func (s *Service) ProcedureHistory(ctx context.Context, idOrShortID string, w Window) (*EventList, error) {
	if _, err := require(ctx, viewer.RoleViewer); err != nil {
		return nil, err
	}
	id, known, err := s.historyOf(ctx, idOrShortID)
	if err != nil {
		return nil, err
	}
	k := historyKeyset(id)
	list, err := s.eventPage(ctx, k, w, DefaultHistoryPageSize, MaxHistoryPageSize, []predicate.Event{event.ProcedureID(id)})
	if err != nil || known || list.Total > 0 {
		return list, err
	}
	// No event names the id: a procedure from before the change log, or
	// whose events were all pruned, has an empty history; any other id
	// names nothing.
	if _, err := s.client.Procedure.Query().Where(procedure.ID(id)).OnlyID(ctx); err != nil {
		if ent.IsNotFound(err) {
			return nil, apperr.NotFoundf("procedure")
		}
		return nil, apperr.Map(err)
	}
	return list, nil
}

// historyOf is the id of the procedure whose history idOrShortID asks for,
// and whether the procedure was read (a shortId). Errors: not_found.
func (s *Service) historyOf(ctx context.Context, idOrShortID string) (uuid.UUID, bool, error) {
	if !limits.ShortID.MatchString(idOrShortID) {
		id, err := lookupID(ids.KindProcedure, "procedure", idOrShortID)
		return id, false, err
	}
	where, err := procedureKey(idOrShortID)
	if err != nil {
		return uuid.Nil, false, err
	}
	id, err := s.client.Procedure.Query().Where(where).OnlyID(ctx)
	if ent.IsNotFound(err) {
		return uuid.Nil, false, apperr.NotFoundf("procedure")
	}
	return id, true, apperr.Map(err)
}

// HistoryPage is one procedure's page of its history, or why it has none
// (a cursor of another procedure's history).
type HistoryPage struct {
	List *EventList
	Err  error
}

// ProcedureHistories returns, for each of procedureIDs (procedures the
// viewer has read), the page w selects of its history with its exact
// total: every page in one statement (one index-ordered, limited read per
// procedure) and every total in one more (a count grouped by procedure),
// per MaxParentsPerRead procedures, as nested procedure lists are read
// (procedures_nested.go). A cursor belongs to one procedure's history: the
// other procedures' pages are validation_failed.
// Errors: unauthenticated, validation_failed naming the argument.
func (s *Service) ProcedureHistories(ctx context.Context, procedureIDs []uuid.UUID, w Window) (map[uuid.UUID]HistoryPage, error) {
	v, err := require(ctx, viewer.RoleViewer)
	if err != nil {
		return nil, err
	}
	if w.Start != 0 {
		return nil, apperr.Invalid("page", "nested lists page by cursor")
	}
	out := make(map[uuid.UUID]HistoryPage, len(procedureIDs))
	for len(procedureIDs) > 0 {
		n := min(len(procedureIDs), MaxParentsPerRead)
		if err := s.procedureHistories(ctx, v, procedureIDs[:n], w, out); err != nil {
			return nil, err
		}
		procedureIDs = procedureIDs[n:]
	}
	return out, nil
}

// historyList is one procedure's history, planned.
type historyList struct {
	procedure uuid.UUID
	keys      keyset[ent.Event]
	slice     slice
	total     int
}

func (s *Service) procedureHistories(ctx context.Context, v *viewer.Viewer, procedureIDs []uuid.UUID, w Window, out map[uuid.UUID]HistoryPage) error {
	var lists []*historyList
	for _, id := range procedureIDs {
		if _, done := out[id]; done || slices.ContainsFunc(lists, func(l *historyList) bool { return l.procedure == id }) {
			continue // a procedure is read once (inSlices)
		}
		k := historyKeyset(id)
		sl, err := k.plan(w, DefaultHistoryPageSize, MaxHistoryPageSize)
		if err != nil {
			out[id] = HistoryPage{Err: err}
			continue
		}
		lists = append(lists, &historyList{procedure: id, keys: k, slice: sl})
	}
	if len(lists) == 0 {
		return nil
	}
	if err := s.historyTotals(ctx, lists); err != nil {
		return apperr.Map(err)
	}
	rows, err := s.historyRows(ctx, v, lists)
	if err != nil {
		return apperr.Map(err)
	}
	groups := make(map[uuid.UUID][]*ent.Event, len(lists))
	for _, e := range rows {
		if e.ProcedureID != nil {
			groups[*e.ProcedureID] = append(groups[*e.ProcedureID], e)
		}
	}
	for _, l := range lists {
		items, info := l.keys.finish(l.slice, groups[l.procedure])
		if items == nil {
			items = []*ent.Event{}
		}
		out[l.procedure] = HistoryPage{List: &EventList{Items: items, Total: l.total, PageInfo: info, cursor: l.keys.cursor}}
	}
	return nil
}

// historyTotals counts every list's events in one statement, grouped by
// procedure (the (workspace, procedure, version) index serves it).
func (s *Service) historyTotals(ctx context.Context, lists []*historyList) error {
	procs := make([]uuid.UUID, len(lists))
	for i, l := range lists {
		procs[i] = l.procedure
	}
	var counted []struct {
		Procedure uuid.UUID `sql:"procedure"`
		Count     int       `sql:"count"`
	}
	err := s.client.Event.Query().Where(event.ProcedureIDIn(procs...)).Modify(func(sel *sql.Selector) {
		sel.Select(sql.As(sel.C(event.FieldProcedureID), "procedure"), sql.As(sql.Count("*"), "count")).
			GroupBy(sel.C(event.FieldProcedureID))
	}).Scan(ctx, &counted)
	if err != nil {
		return err
	}
	byProcedure := make(map[uuid.UUID]int, len(counted))
	for _, c := range counted {
		byProcedure[c.Procedure] = c.Count
	}
	for _, l := range lists {
		l.total = byProcedure[l.procedure]
	}
	return nil
}

// historyRows reads every list's slice in one statement: the ids each
// procedure's slice takes (a limited read per procedure, which the
// (workspace, procedure, version) index serves in order), then their rows
// in the slices' order. On PostgreSQL the procedures are one uuid[]
// parameter joined LATERAL to the per-procedure read, so that the
// statement's text (and plan) is the same for any number of them; SQLite
// reads a UNION ALL of the per-procedure reads (nestedRows does the same
// for procedures).
func (s *Service) historyRows(ctx context.Context, v *viewer.Viewer, lists []*historyList) ([]*ent.Event, error) {
	workspaceID, scoped, err := tenancy.Of(ctx)
	if err != nil {
		return nil, err
	}
	if !scoped {
		workspaceID = v.WorkspaceID
	}
	var todo []*historyList
	for _, l := range lists {
		if l.slice.limit > 0 && l.total > 0 && l.slice.offset < l.total {
			todo = append(todo, l)
		}
	}
	if len(todo) == 0 {
		return nil, nil
	}
	// branch is the read of one procedure's slice (procedure writes the
	// condition on the procedure's column).
	branch := func(l *historyList, key string, procedure func(b *sql.Builder, column string)) *sql.Selector {
		t := sql.Table(event.Table)
		b := sliceRead(t, key)
		b.Where(sql.And(sql.EQ(t.C(tenancy.Column), workspaceID), sql.P(func(bb *sql.Builder) { procedure(bb, t.C(event.FieldProcedureID)) })))
		for _, bound := range l.slice.bounds {
			bound(b)
		}
		l.slice.order(b)
		return b.Limit(l.slice.limit)
	}
	// One lateral read serves every list when they share the slice: always
	// but for a list at a cursor, which is one procedure's.
	lateral := len(todo) == 1 || len(todo[0].slice.bounds) == 0
	procs := make([]uuid.UUID, len(todo))
	for i, l := range todo {
		procs[i] = l.procedure
	}
	inBranches := inSlices(event.Table, rowid, procs, lateral, func(i int, key string, procedure func(b *sql.Builder, column string)) *sql.Selector {
		return branch(todo[i], key, procedure)
	})
	// Every list shares the window, so the slices share one order.
	q := s.client.Event.Query().Order(orderBy[event.OrderOption](&todo[0].slice))
	q.Modify(inBranches)
	return q.Select(eventColumns...).All(ctx)
}
