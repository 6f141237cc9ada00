package bench_test

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"testing"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// TestSQLiteNestedReadsFindRowsByKey: the project dashboard's nested page
// finds each procedure its per-project branches named by its rowid,
// whatever statistics the planner has, and each branch reads the
// project's index alone (a covering index: the branch selects the rowid,
// which the index holds, and does not confine its rows to the workspace,
// which it does not; the outer read does). The branches' keys CROSS JOIN the
// table, which keeps them the outer loop (core's inSlices). The statement
// before it, which took the rows whose rowid was IN the branches', needed
// statistics: without them SQLite walked every procedure of the workspace
// through an index that leads with workspace_id, testing each against the
// list (on workload W 37 ms instead of 3).
func TestSQLiteNestedReadsFindRowsByKey(t *testing.T) {
	db := dbtest.Open(t, "sqlite")
	ctx := context.Background()
	seeded, err := bench.Seed(ctx, db.Client, "Bench", "BEN", bench.Shape{Procedures: 3000, Projects: 20, Categories: 5, Members: 5, MaxComments: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	srv := apitest.Start(t, db)
	check := func(when string) {
		t.Helper()
		steps := plan(t, db.SQL, nestedStatement(t, db, srv, seeded.AdminToken))
		byKeys, branches := 0, 0
		for _, step := range steps {
			switch {
			case strings.Contains(step, byKey):
				byKeys++
			case strings.Contains(step, "USING COVERING INDEX procedure_project_id_created_at_id (project_id=?)"):
				branches++
			case strings.Contains(step, "procedures"):
				t.Errorf("%s a step of the nested read is %q; want each branch's index alone (covering) or the lookup by key (%s)", when, step, byKey)
			}
		}
		if branches == 0 || byKeys != branches {
			t.Errorf("%s the nested read's plan has %d branches and %d lookups by key; want one each a project: %q", when, branches, byKeys, steps)
		}
	}
	check("without statistics")
	if err := db.RefreshStatistics(ctx); err != nil {
		t.Fatal(err)
	}
	check("with statistics")
}

// byKey is the step of a plan that finds a row by its rowid.
const byKey = "USING INTEGER PRIMARY KEY (rowid=?)"

// TestSQLiteRefreshReachesEveryConnectionAndKeepsNoSamples: a refresh
// leaves sqlite_stat1's figures and no stat4 samples (with samples, SQLite
// compiles a prepared statement again whenever a value bound to it changes:
// every execution of procsvc's), and a connection that loaded the
// statistics before the refresh plans with the new ones from its next
// statement on. ANALYZE alone does not tell the other connections: with
// its statistics tables in place already it leaves the schema's version
// as it was, and they keep what they loaded.
func TestSQLiteRefreshReachesEveryConnectionAndKeepsNoSamples(t *testing.T) {
	db := dbtest.Open(t, "sqlite")
	ctx := context.Background()
	seeded, err := bench.Seed(ctx, db.Client, "Bench", "BEN", bench.Shape{Procedures: 3000, Projects: 20, Categories: 5, Members: 5, MaxComments: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	// The nested read's shape before it joined its branches' keys, whose
	// plan statistics decide (TestSQLiteNestedReadsFindRowsByKey).
	nested := database.Statement{
		Query: `SELECT "id" FROM "procedures" WHERE "workspace_id" = ? AND "rowid" IN (SELECT "rowid" FROM (SELECT "rowid" FROM "procedures"` +
			` WHERE "workspace_id" = ? AND "project_id" = ? ORDER BY "created_at" DESC, "id" DESC LIMIT 11))`,
		Args: []any{seeded.WorkspaceID, seeded.WorkspaceID, seeded.ProjectIDs[0]},
	}
	// The statistics tables in place, empty: as a server finds them
	// whose tables have grown since its last refresh.
	for _, q := range []string{"ANALYZE", "DELETE FROM sqlite_stat1", "DELETE FROM sqlite_stat4"} {
		if _, err := db.SQL.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	early, err := db.SQL.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer early.Close()
	// early loads the empty statistics (whichever connection ran the
	// ANALYZE keeps what it found until it is told to reload).
	if _, err := early.ExecContext(ctx, "ANALYZE sqlite_schema"); err != nil {
		t.Fatal(err)
	}
	// A statement run checks the schema's version (EXPLAIN alone does not).
	read := func() {
		t.Helper()
		if _, err := early.ExecContext(ctx, "SELECT count(*) FROM workspaces"); err != nil {
			t.Fatal(err)
		}
	}
	if got := plan(t, early, nested)[0]; strings.Contains(got, byKey) {
		t.Skipf("without statistics the outer read already uses the key (%s): nothing to tell the connections", got)
	}
	if err := db.RefreshStatistics(ctx); err != nil { // on another connection: early is held
		t.Fatal(err)
	}
	read()
	if got := plan(t, early, nested)[0]; !strings.Contains(got, byKey) {
		t.Errorf("a connection that loaded the statistics before the refresh plans the outer read as %q; want the new statistics' lookup by primary key (%s)", got, byKey)
	}
	count := func(table string) int {
		var n int
		if err := early.QueryRowContext(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count("sqlite_stat4"); n != 0 {
		t.Errorf("sqlite_stat4 holds %d samples after a refresh; want none", n)
	}
	if n := count("sqlite_stat1"); n == 0 {
		t.Error("sqlite_stat1 is empty after a refresh")
	}
	// A refresh with nothing to analyse leaves the schema's version alone
	// (no connection reloads for nothing).
	version := func() int {
		var v int
		if err := early.QueryRowContext(ctx, "PRAGMA schema_version").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := version()
	if err := db.RefreshStatistics(ctx); err != nil {
		t.Fatal(err)
	}
	if after := version(); after != before {
		t.Errorf("a refresh with nothing to analyse moved the schema version %d → %d", before, after)
	}
}

// nestedStatement is the dashboard's nested procedures statement, as sent.
func nestedStatement(t *testing.T, db *database.DB, srv *apitest.Server, token string) database.Statement {
	t.Helper()
	var (
		mu     sync.Mutex
		nested *database.Statement
	)
	db.Record(func(s database.Statement) {
		if strings.HasPrefix(s.Query, "SELECT ") && strings.Contains(s.Query, "UNION ALL") && strings.Contains(s.Query, "`slice_key`") {
			mu.Lock()
			nested = &s
			mu.Unlock()
		}
	})
	r := srv.GraphQL(t, token, bench.DashboardQuery, nil)
	db.Record(nil)
	if r.Code() != "" {
		t.Fatalf("dashboard: %s", r.Code())
	}
	mu.Lock()
	defer mu.Unlock()
	if nested == nil {
		t.Fatal("the dashboard sent no nested procedures statement")
	}
	return *nested
}

// plan is the steps of the plan q (a pool or one connection) makes for
// st, the outer read's first.
func plan(t *testing.T, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, st database.Statement) []string {
	t.Helper()
	rows, err := q.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+st.Query, st.Args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var steps []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		steps = append(steps, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(steps) == 0 {
		t.Fatal("no plan")
	}
	return steps
}
