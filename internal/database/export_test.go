package database

import (
	"context"
	"database/sql"
	"io"
)

// MigrationLock is the advisory lock key of ApplyMigrations, for tests that
// hold it.
const MigrationLock = migrationLock

// WriteSchemaDiff writes to w the DDL that ent's automatic migration would
// run against this database (nothing when the schema is current): the drift
// check of the versioned migrations. It shares Migrate's lock: planning
// rewrites ent's package-level tables.
func (db *DB) WriteSchemaDiff(ctx context.Context, w io.Writer) error {
	entSchemaMu.Lock()
	defer entSchemaMu.Unlock()
	return db.Client.Schema.WriteTo(ctx, w)
}

// MoveReadPool makes the read pool start a new generation, as when its
// connections move to another server.
func (db *DB) MoveReadPool() { db.counter.read.conn.generation.Add(1) }

// ReadPoolQueryRow runs query on the read pool.
func (db *DB) ReadPoolQueryRow(ctx context.Context, query string) *sql.Row {
	return db.counter.read.sql.QueryRowContext(ctx, query)
}

// Lost tells the pool that a statement failed with err (counter.lost).
func (db *DB) Lost(err error) { db.counter.lost(err) }

// ApplyMigrationsBefore applies the versioned migrations older than
// version, as a database last migrated by an older binary has them.
func (db *DB) ApplyMigrationsBefore(ctx context.Context, version string) ([]string, error) {
	all, err := Migrations()
	if err != nil {
		return nil, err
	}
	var older []Migration
	for _, m := range all {
		if m.Version < version {
			older = append(older, m)
		}
	}
	return db.applyMigrations(ctx, older)
}

// PreparedTexts are the texts of the statements the primary's pool keeps
// prepared (Options.Prepare), in no order.
func (db *DB) PreparedTexts() []string {
	if db.counter.stmts == nil {
		return nil
	}
	db.counter.stmts.mu.Lock()
	defer db.counter.stmts.mu.Unlock()
	return db.counter.stmts.stmts.Keys()
}

// ProbePrimary runs one probe of the primary pool now, as its interval
// would.
func (db *DB) ProbePrimary() { db.counter.primary.mon.check() }
