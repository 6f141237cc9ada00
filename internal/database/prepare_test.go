package database_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/procsvc/procsvc/ent/workspace"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/viewer"
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
