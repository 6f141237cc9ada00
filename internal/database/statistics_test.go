package database_test

import (
	"context"
	"testing"

	"github.com/procsvc/procsvc/internal/dbtest"
)

// TestRefreshedStatisticsKeepStatementsCompiled: after a refresh, a
// prepared statement that binds a value compared with an indexed column
// runs again, with another value, without being compiled again, on the
// connection that ran the refresh (the pool narrowed to it). SQLite built
// with STAT4 plans such a statement with the value bound when the index has
// samples and compiles it again whenever one is bound; the refresh drops
// the samples, and the connection that dropped them kept them in memory
// until it reloaded its statistics (dropSamples).
func TestRefreshedStatisticsKeepStatementsCompiled(t *testing.T) {
	db := dbtest.Open(t, "sqlite")
	ctx := context.Background()
	for _, q := range []string{
		"CREATE TABLE skewed (id INTEGER PRIMARY KEY, k INTEGER NOT NULL)",
		"CREATE INDEX skewed_k ON skewed (k)",
		// 2 000 rows, 1 900 of them of one value: what samples are for.
		"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) INSERT INTO skewed (k) SELECT CASE WHEN i <= 1900 THEN 1 ELSE i END FROM n",
	} {
		if _, err := db.SQL.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.RefreshStatistics(ctx); err != nil {
		t.Fatal(err)
	}
	var analysed bool
	if err := db.SQL.QueryRowContext(ctx, "SELECT count(*) > 0 FROM sqlite_stat1 WHERE tbl = 'skewed'").Scan(&analysed); err != nil || !analysed {
		t.Fatalf("the refresh left no statistics of the table (%v): nothing is tested", err)
	}
	compiles := dbtest.CountCompiles(t, db)
	stmt, err := db.SQL.PrepareContext(ctx, "SELECT count(*) FROM skewed WHERE k = ?")
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	run := func(k int) {
		t.Helper()
		var n int
		if err := stmt.QueryRowContext(ctx, k).Scan(&n); err != nil {
			t.Fatal(err)
		}
	}
	run(1)
	if compiles.Load() == 0 {
		t.Fatal("the statement's first run compiled nothing: compiles are not counted")
	}
	before := compiles.Load()
	run(1950)
	run(1)
	if n := compiles.Load() - before; n != 0 {
		t.Errorf("running the prepared statement again with other values compiled it %d more times; want none", n)
	}
}
