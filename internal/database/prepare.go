package database

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"time"

	entsql "entgo.io/ent/dialect/sql"
	lru "github.com/hashicorp/golang-lru/v2"
)

// stmtCache keeps prepared statements by query text. database/sql prepares a
// statement on each connection the first time it runs there, and closing an
// evicted statement releases it everywhere.
type stmtCache struct {
	db    *sql.DB
	mu    sync.Mutex
	stmts *lru.Cache[string, *sql.Stmt]
}

// stmtCacheSize bounds the distinct query texts kept prepared; IN lists of
// different lengths are different texts.
const stmtCacheSize = 512

func newStmtCache(db *sql.DB) *stmtCache {
	c, err := lru.NewWithEvict[string, *sql.Stmt](stmtCacheSize, func(_ string, s *sql.Stmt) { s.Close() })
	if err != nil {
		panic(err)
	}
	return &stmtCache{db: db, stmts: c}
}

// cached returns the statement of query if it is prepared already.
func (c *stmtCache) cached(query string) (*sql.Stmt, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stmts.Get(query)
}

// prepared returns the statement of query, preparing it on first use (on
// a connection of the pool: never from inside a transaction, which holds
// one already and would wait for another while holding it).
func (c *stmtCache) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	if stmt, ok := c.cached(query); ok {
		return stmt, nil
	}
	stmt, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.stmts.Get(query); ok {
		stmt.Close()
		return prev, nil
	}
	c.stmts.Add(query, stmt)
	return stmt, nil
}

// statementClosed is database/sql's answer for a statement evicted (and
// closed) between its lookup and its use; the caller runs it unprepared.
func statementClosed(err error) bool { return err != nil && err.Error() == "sql: statement is closed" }

func (c *stmtCache) query(ctx context.Context, query string, args []any, v *entsql.Rows) error {
	stmt, err := c.prepared(ctx, query)
	if err != nil {
		return err
	}
	rows, err := stmt.QueryContext(ctx, args...)
	if statementClosed(err) {
		rows, err = c.db.QueryContext(ctx, query, args...)
	}
	if err != nil {
		return err
	}
	*v = entsql.Rows{ColumnScanner: rows}
	return nil
}

// inTx runs query in tx through its prepared statement when the pool has
// one (a text first seen in a transaction is prepared after its commit,
// countingTx.Commit): database/sql uses the statement already prepared on
// the transaction's connection, or prepares it there once for the later
// transactions on that connection. v is what ent passes: *entsql.Rows for
// a query, *sql.Result or nil for an exec. handled reports false when the
// statement is to run unprepared.
func (c *stmtCache) inTx(ctx context.Context, tx *sql.Tx, query string, args []any, v any) (handled bool, err error) {
	switch v.(type) {
	case *entsql.Rows, *sql.Result, nil:
	default:
		return false, nil
	}
	stmt, ok := c.cached(query)
	if !ok {
		return false, nil
	}
	// Closed with the transaction (database/sql keeps its statements).
	txStmt := tx.StmtContext(ctx, stmt)
	switch v := v.(type) {
	case *entsql.Rows:
		rows, err := txStmt.QueryContext(ctx, args...)
		if statementClosed(err) {
			rows, err = tx.QueryContext(ctx, query, args...)
		}
		if err != nil {
			return true, err
		}
		*v = entsql.Rows{ColumnScanner: rows}
	default:
		res, err := txStmt.ExecContext(ctx, args...)
		if statementClosed(err) {
			res, err = tx.ExecContext(ctx, query, args...)
		}
		if err != nil {
			return true, err
		}
		if r, ok := v.(*sql.Result); ok {
			*r = res
		}
	}
	return true, nil
}

// preparable reports whether query is worth preparing for the next
// transactions: a read or a write of rows, not a schema change (a
// migration's statements run once, and preparing them on a connection
// outside the migration's transaction would fail).
func preparable(query string) bool {
	verb, _, _ := strings.Cut(strings.TrimSpace(query), " ")
	switch strings.ToUpper(verb) {
	case "SELECT", "INSERT", "UPDATE", "DELETE", "WITH":
		return true
	}
	return false
}

// prepareAfterCommit bounds the texts one transaction leaves to prepare,
// and the wait for a connection to prepare them on.
const (
	maxPendingPerTx    = 32
	prepareAfterCommit = time.Second
)

func (c *stmtCache) close() { c.stmts.Purge() }
