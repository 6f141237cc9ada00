package database

import (
	"context"
	"database/sql"
	"sync"

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

func (c *stmtCache) query(ctx context.Context, query string, args []any, v *entsql.Rows) error {
	c.mu.Lock()
	stmt, ok := c.stmts.Get(query)
	c.mu.Unlock()
	if !ok {
		var err error
		if stmt, err = c.db.PrepareContext(ctx, query); err != nil {
			return err
		}
		c.mu.Lock()
		if prev, ok := c.stmts.Get(query); ok {
			stmt.Close()
			stmt = prev
		} else {
			c.stmts.Add(query, stmt)
		}
		c.mu.Unlock()
	}
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil && err.Error() == "sql: statement is closed" {
		// Evicted (and closed) between lookup and use: run it unprepared.
		rows, err = c.db.QueryContext(ctx, query, args...)
	}
	if err != nil {
		return err
	}
	*v = entsql.Rows{ColumnScanner: rows}
	return nil
}

func (c *stmtCache) close() { c.stmts.Purge() }
