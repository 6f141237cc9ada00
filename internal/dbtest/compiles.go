package dbtest

import (
	"context"
	"sync/atomic"
	"testing"

	"entgo.io/ent/dialect"
	"modernc.org/sqlite"

	"github.com/procsvc/procsvc/internal/database"
)

// CountCompiles narrows db, a SQLite database, to one connection and
// counts the statements SQLite compiles on it from now on, a statement
// compiled again (its prepared form thrown away) included: SQLite asks the
// connection's authorizer about every table a statement reads each time it
// compiles one, and never when it runs one already compiled.
func CountCompiles(t testing.TB, db *database.DB) *atomic.Int64 {
	t.Helper()
	if db.Dialect != dialect.SQLite {
		t.Fatalf("dbtest: CountCompiles on %s", db.Dialect)
	}
	// Statements prepared off the requests' path, for what a transaction
	// (a seed's) ran unprepared, compile on this connection too: they
	// must be done before counting starts, or a loaded machine counts
	// them as the caller's (seen: 1 in 100 runs beside a second suite).
	if err := db.SettlePreparer(context.Background()); err != nil {
		t.Fatal(err)
	}
	db.SQL.SetMaxOpenConns(1)
	conn, err := db.SQL.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var compiles atomic.Int64
	err = conn.Raw(func(driverConn any) error {
		return driverConn.(sqlite.AuthorizerRegisterer).RegisterAuthorizer(
			func(action sqlite.AuthorizerActionCode, _, _, _, _ string) sqlite.AuthorizerReturnCode {
				if action == sqlite.AuthSelect {
					compiles.Add(1)
				}
				return sqlite.AuthorizerOK
			})
	})
	if err != nil {
		t.Fatal(err)
	}
	return &compiles
}
