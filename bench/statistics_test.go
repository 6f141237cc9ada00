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

// TestSQLiteStatisticsKeepNestedReadsOnTheKey: the project dashboard's
// nested page reads the procedures its per-project branches named by
// primary key once the planner has statistics (what the server refreshes
// at start and hourly). Without them SQLite walked every procedure of the
// workspace through an index that leads with workspace_id, testing each
// against the list: on workload W the statement took 37 ms instead of 3.
// The first half holds the case that made the refresh necessary, so that
// a SQLite whose planner no longer needs it shows here.
func TestSQLiteStatisticsKeepNestedReadsOnTheKey(t *testing.T) {
	db := dbtest.Open(t, "sqlite")
	ctx := context.Background()
	seeded, err := bench.Seed(ctx, db.Client, "Bench", "BEN", bench.Shape{Procedures: 3000, Projects: 20, Categories: 5, Members: 5, MaxComments: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	srv := apitest.Start(t, db)
	plan := func() string {
		t.Helper()
		return outerPlan(t, db.SQL, nestedStatement(t, db, srv, seeded.AdminToken))
	}
	if got := plan(); strings.Contains(got, byKey) {
		t.Logf("without statistics the outer read already uses the key (%s): the refresh is no longer what keeps it there", got)
	} else if !strings.Contains(got, "workspace_id") {
		t.Errorf("without statistics the outer read is %q; want the walk of the workspace's index this test was written for", got)
	}
	if err := db.RefreshStatistics(ctx); err != nil {
		t.Fatal(err)
	}
	if got := plan(); !strings.Contains(got, byKey) {
		t.Errorf("with statistics the outer read is %q; want a lookup by primary key (%s)", got, byKey)
	}
}

// byKey is the outer step of the nested read's plan by primary key.
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
	nested := nestedStatement(t, db, apitest.Start(t, db), seeded.AdminToken)
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
	if got := outerPlan(t, early, nested); strings.Contains(got, byKey) {
		t.Skipf("without statistics the outer read already uses the key (%s): nothing to tell the connections", got)
	}
	if err := db.RefreshStatistics(ctx); err != nil { // on another connection: early is held
		t.Fatal(err)
	}
	read()
	if got := outerPlan(t, early, nested); !strings.Contains(got, byKey) {
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
		if strings.HasPrefix(s.Query, "SELECT `procedures`.") && strings.Contains(s.Query, "UNION ALL") {
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

// outerPlan is the first step of the plan q (a pool or one connection)
// makes for st: the nested read's outer read.
func outerPlan(t *testing.T, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, st database.Statement) string {
	t.Helper()
	rows, err := q.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+st.Query, st.Args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		return detail
	}
	t.Fatal("no plan")
	return ""
}
