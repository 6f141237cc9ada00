package database

import (
	"context"
	"database/sql"
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
	if err := dropSamples(ctx, conn); err != nil {
		return fmt.Errorf("database: refresh statistics: %w", err)
	}
	return nil
}

// dropSamples deletes the samples ANALYZE leaves in sqlite_stat4 and makes
// every connection of the pool load the statistics anew.
//
// modernc's SQLite is built with SQLITE_ENABLE_STAT4. With samples, a
// prepared statement whose plan compared a bound value with them is
// compiled again at its next step each time that value changes, which for
// procsvc's statements is every execution (each names its workspace, its
// page's ids, its cursor): on workload W a fifth of the server's CPU under
// the REST mix went to compiling statements that were prepared already,
// and the nested dashboard read was compiled on every dashboard
// (docs/performance.md, "Statistics on SQLite"). sqlite_stat1's per-index
// figures, which are what made the nested reads take the primary key, stay.
//
// ANALYZE does not change the schema's version, so the other connections
// would keep the statistics they loaded (samples included) until some
// schema change; a table created and dropped in the same transaction is
// such a change, and every connection reloads the schema and its
// statistics before its next statement: every connection but this one,
// whose schema is already the new one and which kept its samples in
// memory (and compiled its statements again on every run, as before), so
// it reloads its statistics itself (ANALYZE sqlite_schema analyses nothing
// and reloads them; TestRefreshedStatisticsKeepStatementsCompiled).
func dropSamples(ctx context.Context, conn *sql.Conn) error {
	var tables int
	err := conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE name = 'sqlite_stat4'").Scan(&tables)
	if err != nil || tables == 0 {
		return err // tables == 0: nothing analysed yet (an empty database)
	}
	var samples int
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_stat4").Scan(&samples); err != nil || samples == 0 {
		return err // samples == 0: nothing analysed since the last refresh
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	for _, stmt := range []string{
		"DELETE FROM sqlite_stat4",
		"CREATE TABLE procsvc_statistics_reload (x INTEGER)",
		"DROP TABLE procsvc_statistics_reload",
		// In the same transaction: a reload that failed after the
		// commit would leave this connection with its samples, and the
		// next refresh, finding none in the file, would not try again.
		"ANALYZE sqlite_schema",
	} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	return tx.Commit()
}
