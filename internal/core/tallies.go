package core

import (
	"context"
	"slices"
	"strings"

	"entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/ent/proceduretally"
)

// Tallies are the exact sizes of a workspace's largest procedure sets (all,
// each state, each priority) and of each parent's (each project's,
// category's and doer's procedures), kept in each write's own transaction
// under the workspace lock: a list filtering by nothing, by states or by
// priorities reads its total in a few indexed rows instead of counting up
// to the whole workspace after every write, and so does every parent's
// nested list filtering by nothing more (a project dashboard's totals).
// Other lists (a search, a due range, or any combination) count their rows
// through an index, cached per workspace version (totals.go).
// docs/performance.md has the measurements behind the split.

// tallyAll is the tally of every procedure of the workspace.
const tallyAll = "all"

func stateTally(s procedure.State) string { return "state:" + string(s) }

func priorityTally(p procedure.Priority) string { return "priority:" + string(p) }

// parentTally is the tally of the procedures of one project, category or
// doer: the total of a nested list that filters by nothing more.
func parentTally(e Parent, id uuid.UUID) string { return string(e) + ":" + id.String() }

func talliesOf(p *ent.Procedure) []string {
	keys := append(make([]string, 0, 6), tallyAll, stateTally(p.State), priorityTally(p.Priority), parentTally(ParentProject, p.ProjectID))
	if p.CategoryID != nil {
		keys = append(keys, parentTally(ParentCategory, *p.CategoryID))
	}
	if p.DoerID != nil {
		keys = append(keys, parentTally(ParentDoer, *p.DoerID))
	}
	return keys
}

// globalTally reports whether key is one of tallyKeys (not a parent's).
func globalTally(key string) bool { return slices.Contains(tallyKeys(), key) }

func tallyKeys() []string {
	keys := []string{tallyAll}
	for _, s := range procedure.StateValues() {
		keys = append(keys, stateTally(s))
	}
	for _, p := range procedure.PriorityValues() {
		keys = append(keys, priorityTally(p))
	}
	return keys
}

// tallyKeys names the tallies whose sum is the filter's total, if it
// filters by nothing, by states only or by priorities only: a procedure has
// one state and one priority, so those lists' totals are sums of tallies.
func (pf parsedFilter) tallyKeys() ([]string, bool) {
	if pf.search != "" || pf.categories.filters() || pf.doers.filters() || pf.projects.filters() ||
		pf.dueFrom != nil || pf.dueTo != nil {
		return nil, false
	}
	switch {
	case len(pf.states) == 0 && len(pf.priorities) == 0:
		return []string{tallyAll}, true
	case len(pf.priorities) == 0:
		keys := make([]string, len(pf.states))
		for i, st := range pf.states {
			keys[i] = stateTally(st)
		}
		return keys, true
	case len(pf.states) == 0:
		keys := make([]string, len(pf.priorities))
		for i, p := range pf.priorities {
			keys[i] = priorityTally(p)
		}
		return keys, true
	}
	return nil, false
}

// tallyChange accumulates a write's effect on the tallies.
type tallyChange map[string]int64

// added and removed record p entering or leaving the workspace's sets.
func (c tallyChange) added(p *ent.Procedure) {
	for _, k := range talliesOf(p) {
		c[k]++
	}
}

func (c tallyChange) removed(p *ent.Procedure) {
	for _, k := range talliesOf(p) {
		c[k]--
	}
}

// keys are the tallies c changes, sorted (a stable statement text). Tally
// rows are only ever updated under the workspace's version bump, so their
// lock order does not matter.
func (c tallyChange) keys() []string {
	keys := make([]string, 0, len(c))
	for k, d := range c {
		if d != 0 {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// count writes the SQL of a tally row's count after c: its count plus
// c's change of its key. Both ways a write's finish updates the tallies
// (apply, sharedFinish) set it, over keys (c.keys()).
func (c tallyChange) count(b *sql.Builder, keys []string) {
	b.Ident(proceduretally.FieldCount).WriteString(" + CASE ").Ident(proceduretally.FieldKey)
	for _, k := range keys {
		b.WriteString(" WHEN ").Arg(k).WriteString(" THEN ").Arg(c[k])
	}
	b.WriteString(" ELSE 0 END")
}

// apply adds c to the workspace's tallies of keys (c.keys()) in one
// statement, inside the write's transaction (the tenancy hook scopes it to
// the viewer's workspace). A workspace without its tally rows (created
// before tallies existed, on a SQLite file upgraded in place) has them
// rebuilt here from its rows: the workspace lock makes that count exact.
func (c tallyChange) apply(ctx context.Context, tx *ent.Tx, workspaceID uuid.UUID, keys []string) error {
	n, err := tx.ProcedureTally.Update().
		Where(proceduretally.WorkspaceID(workspaceID), proceduretally.KeyIn(keys...)).
		Modify(func(u *sql.UpdateBuilder) {
			u.Set(proceduretally.FieldCount, sql.ExprFunc(func(b *sql.Builder) { c.count(b, keys) }))
		}).
		Save(ctx)
	if err != nil {
		return err
	}
	if n == len(keys) {
		return nil
	}
	return repairTallies(ctx, tx.Client(), workspaceID, keys)
}

// repairTallies makes the tally rows of keys that a write found missing:
// a parent's (a project, category or doer first given a procedure since
// tallies of parents exist) is counted from its rows, which the write has
// already changed; a missing global tally (a workspace from before
// tallies) has every tally rebuilt. It runs in the write's transaction,
// under the workspace lock, so the counts are exact.
func repairTallies(ctx context.Context, c *ent.Client, workspaceID uuid.UUID, keys []string) error {
	have, err := c.ProcedureTally.Query().Where(proceduretally.WorkspaceID(workspaceID), proceduretally.KeyIn(keys...)).
		Select(proceduretally.FieldKey).Strings(ctx)
	if err != nil {
		return err
	}
	var rows []*ent.ProcedureTallyCreate
	for _, k := range keys {
		if slices.Contains(have, k) {
			continue
		}
		if globalTally(k) {
			return rebuildTallies(ctx, c, workspaceID)
		}
		edge, id, ok := parseParentTally(k)
		if !ok {
			return rebuildTallies(ctx, c, workspaceID)
		}
		n, err := c.Procedure.Query().Where(procedure.WorkspaceID(workspaceID), func(s *sql.Selector) {
			s.Where(sql.EQ(s.C(edge.column()), id))
		}).Count(ctx)
		if err != nil {
			return err
		}
		rows = append(rows, c.ProcedureTally.Create().SetWorkspaceID(workspaceID).SetKey(k).SetCount(int64(n)))
	}
	if len(rows) == 0 {
		return nil
	}
	return c.ProcedureTally.CreateBulk(rows...).Exec(ctx)
}

// parseParentTally reads a parent's tally key.
func parseParentTally(key string) (Parent, uuid.UUID, bool) {
	edge, raw, ok := strings.Cut(key, ":")
	if !ok {
		return "", uuid.Nil, false
	}
	id, err := uuid.Parse(raw)
	switch e := Parent(edge); {
	case err != nil:
	case e == ParentProject, e == ParentCategory, e == ParentDoer:
		return e, id, true
	}
	return "", uuid.Nil, false
}

// rebuildTallies replaces the workspace's tallies with counts of its rows.
// c is a write's tx.Client() (under the workspace lock) or, for a bulk load
// with no concurrent writer, the client.
func rebuildTallies(ctx context.Context, c *ent.Client, workspaceID uuid.UUID) error {
	counts := map[string]int64{}
	for _, k := range tallyKeys() {
		counts[k] = 0
	}
	var byState []struct {
		State procedure.State `json:"state"`
		Count int64           `json:"count"`
	}
	if err := c.Procedure.Query().Where(procedure.WorkspaceID(workspaceID)).
		GroupBy(procedure.FieldState).Aggregate(ent.Count()).Scan(ctx, &byState); err != nil {
		return err
	}
	for _, r := range byState {
		counts[stateTally(r.State)] = r.Count
		counts[tallyAll] += r.Count
	}
	var byPriority []struct {
		Priority procedure.Priority `json:"priority"`
		Count    int64              `json:"count"`
	}
	if err := c.Procedure.Query().Where(procedure.WorkspaceID(workspaceID)).
		GroupBy(procedure.FieldPriority).Aggregate(ent.Count()).Scan(ctx, &byPriority); err != nil {
		return err
	}
	for _, r := range byPriority {
		counts[priorityTally(r.Priority)] = r.Count
	}
	for _, e := range []Parent{ParentProject, ParentCategory, ParentDoer} {
		var byParent []struct {
			Parent *uuid.UUID `sql:"parent"`
			Count  int64      `sql:"count"`
		}
		if err := c.Procedure.Query().Where(procedure.WorkspaceID(workspaceID)).Modify(func(s *sql.Selector) {
			s.Select(sql.As(s.C(e.column()), "parent"), sql.As(sql.Count("*"), "count")).GroupBy(s.C(e.column()))
		}).Scan(ctx, &byParent); err != nil {
			return err
		}
		for _, r := range byParent {
			if r.Parent != nil {
				counts[parentTally(e, *r.Parent)] = r.Count
			}
		}
	}
	if _, err := c.ProcedureTally.Delete().Where(proceduretally.WorkspaceID(workspaceID)).Exec(ctx); err != nil {
		return err
	}
	rows := make([]*ent.ProcedureTallyCreate, 0, len(counts))
	for k, n := range counts {
		rows = append(rows, c.ProcedureTally.Create().SetWorkspaceID(workspaceID).SetKey(k).SetCount(n))
	}
	return c.ProcedureTally.CreateBulk(rows...).Exec(ctx)
}

// RebuildTallies recounts a workspace's tallies from its rows. It is for
// bulk loads that insert procedures without the core (bench seed), run with
// no concurrent writer in that workspace; ctx must be the system context or
// a viewer of that workspace.
func RebuildTallies(ctx context.Context, client *ent.Client, workspaceID uuid.UUID) error {
	return rebuildTallies(ctx, client, workspaceID)
}

// parentTallies reads the tallies of the parents ids, by parent; a
// parent without one (no procedure since tallies of parents exist) is
// missing.
func (s *Service) parentTallies(ctx context.Context, workspaceID uuid.UUID, e Parent, ids []uuid.UUID) (map[uuid.UUID]int, error) {
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = parentTally(e, id)
	}
	var rows []struct {
		Key   string `json:"key"`
		Count int    `json:"count"`
	}
	if err := s.client.ProcedureTally.Query().Where(proceduretally.WorkspaceID(workspaceID), proceduretally.KeyIn(keys...)).
		Select(proceduretally.FieldKey, proceduretally.FieldCount).Scan(ctx, &rows); err != nil {
		return nil, err
	}
	out := make(map[uuid.UUID]int, len(rows))
	for _, r := range rows {
		if _, id, ok := parseParentTally(r.Key); ok {
			out[id] = r.Count
		}
	}
	return out, nil
}

// tally reads the sum of the workspace's tallies keys, if it has them all.
func (s *Service) tally(ctx context.Context, workspaceID uuid.UUID, keys []string) (int, bool, error) {
	ns, err := s.client.ProcedureTally.Query().Where(proceduretally.WorkspaceID(workspaceID), proceduretally.KeyIn(keys...)).
		Select(proceduretally.FieldCount).Ints(ctx)
	if err != nil || len(ns) != len(keys) {
		return 0, false, err
	}
	total := 0
	for _, n := range ns {
		total += n
	}
	return total, true, nil
}
