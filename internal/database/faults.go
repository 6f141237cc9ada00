package database

import (
	"database/sql"
	"sync"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
)

// Faults are failures a test injects into a DB's statements and commits
// (Inject), to see what procsvc does when the database fails at one given
// point — a commit whose answer never arrives, a read after a write — with
// no real outage and no timing.
type Faults struct {
	// Statement, when set, is asked before each statement sent through
	// ent (in a transaction or not) is sent: an error fails the statement,
	// unsent, as the driver's would.
	Statement func(query string) error
	// Commit, when set, ends each transaction begun through ent in place
	// of its COMMIT. It is given the statements the transaction ran, and
	// commit and rollback, either of which ends the transaction; what it
	// returns is the commit's error.
	Commit func(queries []string, commit, rollback func() error) error
}

// Inject makes f's faults apply to every later statement, and to the
// commits of transactions begun from now on; nil removes them. For tests:
// without faults a statement costs one atomic load more.
func (db *DB) Inject(f *Faults) { db.counter.faults.Store(f) }

// statementFault is the error the injected faults give query, if any.
func (c *counter) statementFault(query string) error {
	if f := c.faults.Load(); f != nil && f.Statement != nil {
		return f.Statement(query)
	}
	return nil
}

// newTx wraps tx, keeping what the injected commit fault needs.
func (c *counter) newTx(tx dialect.Tx) *countingTx {
	t := &countingTx{Tx: tx, c: c}
	if et, ok := tx.(*entsql.Tx); ok {
		t.sqlTx, _ = et.ExecQuerier.(*sql.Tx)
	}
	if f := c.faults.Load(); f != nil && f.Commit != nil {
		t.fault = &txFault{commit: f.Commit}
	}
	return t
}

// txFault is a transaction's injected commit fault, and the statements it
// ran.
type txFault struct {
	commit  func(queries []string, commit, rollback func() error) error
	mu      sync.Mutex
	queries []string
}

func (f *txFault) ran(query string) {
	f.mu.Lock()
	f.queries = append(f.queries, query)
	f.mu.Unlock()
}
