package bench_test

import (
	"context"
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
		r := srv.GraphQL(t, seeded.AdminToken, bench.DashboardQuery, nil)
		db.Record(nil)
		if r.Code() != "" {
			t.Fatalf("dashboard: %s", r.Code())
		}
		mu.Lock()
		defer mu.Unlock()
		if nested == nil {
			t.Fatal("the dashboard sent no nested procedures statement")
		}
		rows, err := db.SQL.QueryContext(ctx, "EXPLAIN QUERY PLAN "+nested.Query, nested.Args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		// The outer read is the plan's first step.
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
	const byKey = "USING INDEX sqlite_autoindex_procedures_1 (id=?)"
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
