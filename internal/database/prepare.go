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
//
// No lock of the cache is held while a statement is closed or prepared:
// closing waits for the statement's running queries, which may be waiting
// for a connection that a transaction holds while it looks a statement up
// here (that cycle would hold them all until a deadline).
type stmtCache struct {
	db    *sql.DB
	stmts *lru.Cache[string, *sql.Stmt] // safe for concurrent use
	// mu guards evicted: the statements the LRU dropped during an Add,
	// closed by that Add's caller once the LRU's lock is released.
	mu      sync.Mutex
	evicted []*sql.Stmt
	// toPrepare feeds the one goroutine that prepares the texts
	// transactions ran unprepared (prepareLater); done stops it.
	toPrepare chan string
	// settle carries a barrier: the preparer prepares what is queued
	// before it, then closes it (settled).
	settle  chan chan struct{}
	done    chan struct{}
	stopped sync.WaitGroup
}

// stmtCacheSize bounds the distinct query texts kept prepared; IN lists of
// different lengths are different texts.
const stmtCacheSize = 512

// preparerQueue bounds the texts waiting to be prepared for transactions
// (a full queue drops a text: a later transaction offers it again), and
// preparerTimeout the wait of one for a connection.
const (
	preparerQueue   = 64
	preparerTimeout = 5 * time.Second
)

func newStmtCache(db *sql.DB) *stmtCache {
	c := &stmtCache{db: db, toPrepare: make(chan string, preparerQueue), settle: make(chan chan struct{}), done: make(chan struct{})}
	stmts, err := lru.NewWithEvict[string, *sql.Stmt](stmtCacheSize, func(_ string, s *sql.Stmt) {
		c.mu.Lock()
		c.evicted = append(c.evicted, s)
		c.mu.Unlock()
	})
	if err != nil {
		panic(err)
	}
	c.stmts = stmts
	c.stopped.Add(1)
	go c.preparer()
	return c
}

// cached returns the statement of query if it is prepared already.
func (c *stmtCache) cached(query string) (*sql.Stmt, bool) { return c.stmts.Get(query) }

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
	if prev, ok, _ := c.stmts.PeekOrAdd(query, stmt); ok {
		stmt.Close()
		return prev, nil
	}
	c.closeEvicted()
	return stmt, nil
}

// closeEvicted closes what the LRU dropped, outside its lock and ours.
func (c *stmtCache) closeEvicted() {
	c.mu.Lock()
	evicted := c.evicted
	c.evicted = nil
	c.mu.Unlock()
	for _, s := range evicted {
		s.Close()
	}
}

// prepareLater offers query, run unprepared by a transaction, to the
// preparer, without waiting: a full queue drops it.
func (c *stmtCache) prepareLater(query string) {
	select {
	case c.toPrepare <- query:
	default:
	}
}

// preparer prepares the texts transactions offer, one at a time, off
// their path: a transaction that committed never waits for it, so a pool
// whose every connection is busy delays only the preparing.
func (c *stmtCache) preparer() {
	defer c.stopped.Done()
	for {
		select {
		case <-c.done:
			return
		case q := <-c.toPrepare:
			c.prepareOffered(q)
		case barrier := <-c.settle:
			for queued := len(c.toPrepare); queued > 0; queued-- {
				c.prepareOffered(<-c.toPrepare)
			}
			close(barrier)
		}
	}
}

func (c *stmtCache) prepareOffered(query string) {
	if _, ok := c.cached(query); ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), preparerTimeout)
	defer cancel()
	c.prepared(ctx, query) //nolint:errcheck // unprepared, it is offered again by the next transaction
}

// settled waits until the preparer has prepared (or given up on) every
// text offered before the call.
func (c *stmtCache) settled(ctx context.Context) error {
	barrier := make(chan struct{})
	select {
	case c.settle <- barrier:
	case <-c.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-barrier:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
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
// one (a text first seen in a transaction is offered to the preparer after
// its commit, countingTx.Commit): database/sql uses the statement already prepared on
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
		// An evicted (closed) statement is prepared again on the
		// transaction's connection by StmtContext; one evicted while the
		// transaction runs keeps its prepared form until it ends.
		rows, err := txStmt.QueryContext(ctx, args...)
		if err != nil {
			return true, err
		}
		*v = entsql.Rows{ColumnScanner: rows}
	default:
		res, err := txStmt.ExecContext(ctx, args...)
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

// maxPendingPerTx bounds the texts one transaction offers the preparer,
// and maxOfferedArgs the arguments of one offered: a statement of more is
// a bulk write (an import's batch, a copy's), whose texts vary with their
// batch and run rarely, and would push the requests' statements out of the
// pool's 512.
const (
	maxPendingPerTx = 32
	maxOfferedArgs  = 64
)

func (c *stmtCache) close() {
	close(c.done)
	c.stopped.Wait()
	c.stmts.Purge()
	c.closeEvicted()
}
