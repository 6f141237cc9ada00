package database_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// TestLostConnectionsAreRetired: once a statement finds its connection
// lost, none of the pool's connections open then is reused (each is
// replaced by a fresh one as it comes up), one in use goes on serving its
// holder, and none is closed through database/sql's SetMaxIdleConns
// (MaxIdleClosed stays 0). That is how the pool used to drop its idle
// connections, and it races with connections being put back: it closes a
// slice sharing its array with the pool's free list, so a connection put
// back meanwhile was closed and then drawn, and database/sql panicked on
// it during failovers. The race is database/sql's own and cannot be
// forced from outside; MaxIdleClosed tells whether the pool takes that
// path.
func TestLostConnectionsAreRetired(t *testing.T) {
	needPostgres(t)
	const pool = 4
	db, _ := openPostgres(t, database.Options{MaxOpenConns: pool})
	ctx := context.Background()
	pid := func(q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) int {
		t.Helper()
		var n int
		if err := q.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := map[int]bool{}
	var conns []*sql.Conn
	for range pool {
		c, err := db.SQL.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		before[pid(c)] = true
		conns = append(conns, c)
	}
	held := conns[0]
	for _, c := range conns[1:] {
		c.Close()
	}
	db.Lost(dbtest.ErrConnectionLost)
	if p := pid(held); !before[p] {
		t.Fatalf("the connection in use moved to backend %d", p)
	}
	held.Close()
	for range 2 * pool {
		if p := pid(db.SQL); before[p] {
			t.Fatalf("backend %d, open when the connection was lost, served a later query", p)
		}
	}
	if n := db.SQL.Stats().MaxIdleClosed; n != 0 {
		t.Fatalf("%d idle connections closed through SetMaxIdleConns", n)
	}
}
