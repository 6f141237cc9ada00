package database_test

import (
	"context"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/procsvc/procsvc/internal/database"
)

// TestMigrateManyDatabasesAtOnce pins that migrating is safe to run
// concurrently in one process: ent's schema planner rewrites package-level
// table descriptions, and unserialised it crashed the whole test binary
// ("concurrent map writes") whenever parallel tests migrated together.
func TestMigrateManyDatabasesAtOnce(t *testing.T) {
	const databases = 24
	ctx := context.Background()
	dir := t.TempDir()
	dbs := make([]*database.DB, databases)
	for i := range dbs {
		db, err := database.Open(ctx, "sqlite://"+filepath.Join(dir, strconv.Itoa(i)+".db"), database.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs[i] = db
	}
	// Several rounds: the first creates every table, the later ones plan
	// against existing schemas; both paths rewrite ent's tables.
	for round := range 3 {
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make([]error, databases)
		for i, db := range dbs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[i] = db.Migrate(ctx)
			}()
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, database %d: %v", round, i, err)
			}
		}
	}
	for i := range dbs {
		var n int
		if err := dbs[i].SQL.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'procedures'").Scan(&n); err != nil || n != 1 {
			t.Fatalf("database %d has no procedures table after migrating: %d, %v", i, n, err)
		}
	}
}
