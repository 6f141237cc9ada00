package database

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"entgo.io/ent/dialect"

	"github.com/procsvc/procsvc/ent/migrate/migrations"
)

// Migration is one versioned SQL file.
type Migration struct {
	Version  string
	Name     string
	SQL      string
	Checksum string
}

// Migrations returns the embedded PostgreSQL migrations in version order.
func Migrations() ([]Migration, error) {
	return readMigrations(migrations.FS)
}

func readMigrations(fsys fs.FS) ([]Migration, error) {
	files, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	out := make([]Migration, 0, len(files))
	for _, f := range files {
		body, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		version, name, ok := strings.Cut(strings.TrimSuffix(f, ".sql"), "_")
		if !ok {
			return nil, fmt.Errorf("migration %s: name must be VERSION_NAME.sql", f)
		}
		sum := sha256.Sum256(body)
		out = append(out, Migration{Version: version, Name: name, SQL: string(body), Checksum: hex.EncodeToString(sum[:])})
	}
	return out, nil
}

// migrationsTable records applied versions.
const migrationsTable = "procsvc_schema_migrations"

// migrationLock is the advisory lock key that serialises replicas migrating
// at once ("procsvc" in ASCII).
const migrationLock = 0x70726f63737663

// ErrSchemaBehind means the database lacks migrations this binary needs.
var ErrSchemaBehind = errors.New("the database schema is behind this binary: run `procsvc migrate` or start with --migrate")

// ApplyMigrations brings a PostgreSQL database up to date with the embedded
// migrations, each in its own transaction, and returns the versions applied.
// It is idempotent, safe to run from several replicas at once (an advisory
// lock serialises them), and refuses to run when an applied migration's file
// has changed or the database has versions this binary does not know.
func (db *DB) ApplyMigrations(ctx context.Context) ([]string, error) {
	all, err := Migrations()
	if err != nil {
		return nil, err
	}
	return db.applyMigrations(ctx, all)
}

// applyMigrations is ApplyMigrations of the migrations all, in version
// order.
func (db *DB) applyMigrations(ctx context.Context, all []Migration) ([]string, error) {
	if db.Dialect != dialect.Postgres {
		return nil, fmt.Errorf("database: versioned migrations are for PostgreSQL; %s migrates automatically", db.Dialect)
	}
	conn, err := db.SQL.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", migrationLock); err != nil {
		return nil, fmt.Errorf("database: take migration lock: %w", err)
	}
	defer conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock($1)", migrationLock) //nolint:errcheck
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+migrationsTable+` (
		version text PRIMARY KEY,
		name text NOT NULL,
		checksum text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, fmt.Errorf("database: create %s: %w", migrationsTable, err)
	}
	pending, err := pendingOn(ctx, conn, all)
	if err != nil {
		return nil, err
	}
	var applied []string
	for _, m := range pending {
		if err := applyOne(ctx, conn, m); err != nil {
			return applied, err
		}
		applied = append(applied, m.Version+"_"+m.Name)
	}
	return applied, nil
}

func applyOne(ctx context.Context, conn *sql.Conn, m Migration) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		tx.Rollback()
		return fmt.Errorf("database: migration %s_%s: %w", m.Version, m.Name, err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO "+migrationsTable+" (version, name, checksum) VALUES ($1, $2, $3)",
		m.Version, m.Name, m.Checksum); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// pendingOn verifies the applied migrations against all and returns those
// not yet applied.
func pendingOn(ctx context.Context, q querier, all []Migration) ([]Migration, error) {
	rows, err := q.QueryContext(ctx, "SELECT version, checksum FROM "+migrationsTable)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	applied := map[string]string{}
	for rows.Next() {
		var v, sum string
		if err := rows.Scan(&v, &sum); err != nil {
			return nil, err
		}
		applied[v] = sum
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	known := map[string]bool{}
	var pending []Migration
	for _, m := range all {
		known[m.Version] = true
		sum, ok := applied[m.Version]
		switch {
		case !ok:
			pending = append(pending, m)
		case sum != m.Checksum:
			return nil, fmt.Errorf("database: migration %s_%s was changed after it was applied (checksum mismatch); restore the original file and add a new migration instead", m.Version, m.Name)
		}
	}
	for v := range applied {
		if !known[v] {
			return nil, fmt.Errorf("database: the database has migration %s, which this binary does not know: it is newer than this binary", v)
		}
	}
	return pending, nil
}

// PendingMigrations returns the versions not yet applied (all of them on an
// empty database). Errors as ApplyMigrations.
func (db *DB) PendingMigrations(ctx context.Context) ([]string, error) {
	all, err := Migrations()
	if err != nil {
		return nil, err
	}
	var exists bool
	if err := db.SQL.QueryRowContext(ctx, "SELECT to_regclass($1) IS NOT NULL", migrationsTable).Scan(&exists); err != nil {
		return nil, err
	}
	pending := all
	if exists {
		if pending, err = pendingOn(ctx, db.SQL, all); err != nil {
			return nil, err
		}
	}
	out := make([]string, len(pending))
	for i, m := range pending {
		out[i] = m.Version + "_" + m.Name
	}
	return out, nil
}
