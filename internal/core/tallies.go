package core

import (
	"context"
	"slices"

	"entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/ent/proceduretally"
)

// Tallies are the exact sizes of a workspace's largest procedure sets (all,
// each state, each priority), kept in each write's own transaction under the
// workspace lock: a list filtering by nothing, one state or one priority
// reads its total in one indexed row instead of counting up to the whole
// workspace after every write. Narrower lists (a project, a category, a
// doer, a search, a due range, or any combination) count their rows through
// an index, cached per workspace version (totals.go). docs/performance.md has
// the measurements behind the split.

// tallyAll is the tally of every procedure of the workspace.
const tallyAll = "all"

func stateTally(s procedure.State) string { return "state:" + string(s) }

func priorityTally(p procedure.Priority) string { return "priority:" + string(p) }

func talliesOf(p *ent.Procedure) [3]string {
	return [3]string{tallyAll, stateTally(p.State), priorityTally(p.Priority)}
}

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

// apply adds c to the workspace's tallies in one statement, inside the
// write's transaction (the tenancy hook scopes it to the viewer's
// workspace). A workspace without its tally rows (created before tallies
// existed, on a SQLite file upgraded in place) has them rebuilt here from
// its rows: the workspace lock makes that count exact.
func (c tallyChange) apply(ctx context.Context, tx *ent.Tx, workspaceID uuid.UUID) error {
	keys := c.keys()
	if len(keys) == 0 {
		return nil
	}
	n, err := tx.ProcedureTally.Update().
		Where(proceduretally.WorkspaceID(workspaceID), proceduretally.KeyIn(keys...)).
		Modify(func(u *sql.UpdateBuilder) {
			u.Set(proceduretally.FieldCount, sql.ExprFunc(func(b *sql.Builder) {
				b.Ident(proceduretally.FieldCount).WriteString(" + CASE ").Ident(proceduretally.FieldKey)
				for _, k := range keys {
					b.WriteString(" WHEN ").Arg(k).WriteString(" THEN ").Arg(c[k])
				}
				b.WriteString(" ELSE 0 END")
			}))
		}).
		Save(ctx)
	if err != nil {
		return err
	}
	if n == len(keys) {
		return nil
	}
	return rebuildTallies(ctx, tx.Client(), workspaceID)
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
