package database_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/workspace"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/viewer"
	"modernc.org/sqlite"
)

// TestPreparedReadsReturnWhatPlainReadsReturn runs the same reads, many
// times and concurrently, through a prepared-statement connection and a plain
// one, and requires identical answers.
func TestPreparedReadsReturnWhatPlainReadsReturn(t *testing.T) {
	dbtest.Dialects(t)
	if !hasPostgres() {
		t.Skip("PROCSVC_TEST_POSTGRES is not set")
	}
	ctx := viewer.System(context.Background())
	url := dbtest.CreatePostgres(t)
	open := func(prepare bool) *database.DB {
		db, err := database.Open(ctx, url, database.Options{Prepare: prepare})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	plain, prepared := open(false), open(true)
	if err := plain.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var all []string
	for i := 0; i < 30; i++ {
		name := fmt.Sprintf("w%02d", i)
		if _, err := plain.Client.Workspace.Create().SetName(name).Save(ctx); err != nil {
			t.Fatal(err)
		}
		all = append(all, name)
	}
	want, err := plain.Client.Workspace.Query().Order(workspace.ByName()).All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				got, err := prepared.Client.Workspace.Query().Order(workspace.ByName()).All(ctx)
				if err != nil || len(got) != len(want) || got[i%len(got)].ID != want[i%len(want)].ID {
					errs <- fmt.Errorf("goroutine %d: %d rows, %v", g, len(got), err)
					return
				}
				// IN lists of different lengths are distinct statements.
				k := 1 + (i+g)%len(all)
				n, err := prepared.Client.Workspace.Query().Where(workspace.NameIn(all[:k]...)).Count(ctx)
				if err != nil || n != k {
					errs <- fmt.Errorf("IN of %d: count %d, %v", k, n, err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestPreparedWritesInTransactions: the statements of a transaction run
// through the pool's prepared statements (a write's few texts are compiled
// once per connection, not at every write), and answer as plain ones do:
// concurrent transactions, rolled back or committed, each see their own
// writes and commit exactly theirs.
func TestPreparedWritesInTransactions(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		ctx := viewer.System(context.Background())
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; i < 10; i++ {
					name := fmt.Sprintf("g%d-%d", g, i)
					tx, err := db.Client.Tx(ctx)
					if err != nil {
						errs <- err
						return
					}
					err = createAndRename(ctx, tx, name)
					var seen int
					if err == nil {
						seen, err = tx.Workspace.Query().Where(workspace.Name(name + "!")).Count(ctx)
					}
					if err != nil || seen != 1 {
						tx.Rollback()
						errs <- fmt.Errorf("%s: sees %d of its own, %v", name, seen, err)
						return
					}
					// Every other transaction is rolled back.
					if i%2 == 0 {
						err = tx.Commit()
					} else {
						err = tx.Rollback()
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}(g)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if n, err := db.Client.Workspace.Query().Where(workspace.NameHasSuffix("!")).Count(ctx); err != nil || n != 8*5 {
			t.Fatalf("%d workspaces committed (%v); want %d", n, err, 8*5)
		}
		waitPrepared(t, db)
	})
}

// waitPrepared waits for the preparer to have prepared what the
// transactions so far offered it (it runs off their path) and checks that
// their INSERT and UPDATE are among the statements prepared: no polling, so
// a SettlePreparer that returned before the queue was done fails here.
func waitPrepared(t *testing.T, db *database.DB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.SettlePreparer(ctx); err != nil {
		t.Fatal(err)
	}
	var insert, update bool
	for _, q := range db.PreparedTexts() {
		insert = insert || strings.HasPrefix(q, "INSERT INTO")
		update = update || strings.HasPrefix(q, "UPDATE")
	}
	if !insert || !update {
		t.Fatalf("the transactions' INSERT and UPDATE are not among the prepared statements: %q", db.PreparedTexts())
	}
}

// TestTransactionsCompileTheirWritesOnce: once a write's statements are
// prepared, later transactions run them without SQLite compiling them
// again (counted through SQLite's authorizer, which SQLite asks at every
// compile and never at a run of a compiled statement).
func TestTransactionsCompileTheirWritesOnce(t *testing.T) {
	db := dbtest.Open(t, "sqlite")
	ctx := viewer.System(context.Background())
	db.SQL.SetMaxOpenConns(1)
	var writes atomic.Int64
	conn, err := db.SQL.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = conn.Raw(func(driverConn any) error {
		return driverConn.(sqlite.AuthorizerRegisterer).RegisterAuthorizer(
			func(action sqlite.AuthorizerActionCode, _, _, _, _ string) sqlite.AuthorizerReturnCode {
				if action == sqlite.AuthInsert || action == sqlite.AuthUpdate {
					writes.Add(1)
				}
				return sqlite.AuthorizerOK
			})
	})
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string) {
		t.Helper()
		tx, err := db.Client.Tx(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := createAndRename(ctx, tx, name); err != nil {
			tx.Rollback()
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	write("first")
	waitPrepared(t, db)
	write("second") // the first on this connection through the pool's statements
	before := writes.Load()
	for i := range 5 {
		write(fmt.Sprintf("w%d", i))
	}
	if n := writes.Load() - before; n != 0 {
		t.Fatalf("5 transactions compiled their INSERT or UPDATE again (%d authorizations); want none", n)
	}
}

// createAndRename is a transaction's write of both tests: an INSERT, then
// an UPDATE of what it inserted (name becomes name + "!").
func createAndRename(ctx context.Context, tx *ent.Tx, name string) error {
	w, err := tx.Workspace.Create().SetName(name).Save(ctx)
	if err != nil {
		return err
	}
	return tx.Workspace.UpdateOneID(w.ID).SetName(name + "!").Exec(ctx)
}
