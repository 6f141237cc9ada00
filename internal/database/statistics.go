package database

import (
	"context"
	"fmt"

	"entgo.io/ent/dialect"
)

// RefreshStatistics gives SQLite's query planner statistics for the
// tables that have none or whose size has changed much since (SQLite's
// PRAGMA optimize, every table considered). A refresh reads the tables it
// analyses whole, inside one write transaction: on workload W (200 000
// procedures, 300 000 comments) the first took 0.5 s, and one with nothing
// to do takes microseconds. PostgreSQL keeps its own (autovacuum's
// ANALYZE); there it does nothing.
//
// Without statistics SQLite assumes an equality on any indexed column
// picks about ten rows, so it prefers the index that leads with
// workspace_id to a primary-key lookup of the 200 procedures a nested
// page names, and reads every procedure of the workspace to find them:
// the project dashboard on a 100 000-procedure SQLite database took 37 ms
// in its one statement before the first refresh and 3 ms after
// (docs/performance.md, "Statistics on SQLite").
func (db *DB) RefreshStatistics(ctx context.Context) error {
	if db.Dialect != dialect.SQLite {
		return nil
	}
	// One connection for both: analysis_limit is a setting of the
	// connection that runs the analysis. 0 reads every index whole: a
	// sampled analysis (a limit of 1 000) estimated every leading column
	// at about 1 000 rows a value, workspace and project alike, and the
	// list pages lost what the exact figures gave them.
	conn, err := db.SQL.Conn(ctx)
	if err != nil {
		return fmt.Errorf("database: refresh statistics: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA analysis_limit = 0"); err != nil {
		return fmt.Errorf("database: refresh statistics: %w", err)
	}
	// 0x10000: every table, not only those this connection has queried;
	// 0x2: analyse what needs it.
	if _, err := conn.ExecContext(ctx, "PRAGMA optimize = 0x10002"); err != nil {
		return fmt.Errorf("database: refresh statistics: %w", err)
	}
	return nil
}
