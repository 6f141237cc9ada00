// Package dbtest gives tests real databases: a fresh SQLite file always, and
// a fresh PostgreSQL database when PROCSVC_TEST_POSTGRES names a server
// (required under CI=true). Each PostgreSQL database is created for one test
// and dropped after it, so packages running in parallel never share state;
// its name starts with the run's prefix (EnvPrefix, names.go), so a run's
// sweep after a crash drops its own databases and no one else's.
package dbtest

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/lib/pq"

	"github.com/procsvc/procsvc/internal/database"
)

// EnvPostgres names the PostgreSQL server URL tests use.
const EnvPostgres = "PROCSVC_TEST_POSTGRES"

// Dialects returns the databases this run covers: "sqlite" always, and
// "postgres" when EnvPostgres is set. Under CI=true a missing EnvPostgres
// fails the test instead of silently narrowing coverage.
func Dialects(t testing.TB) []string {
	t.Helper()
	if os.Getenv(EnvPostgres) != "" {
		return []string{"sqlite", "postgres"}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s must be set under CI: PostgreSQL tests may not be skipped", EnvPostgres)
	}
	return []string{"sqlite"}
}

// Each runs fn once per dialect, as a subtest named for it, on a fresh,
// migrated database.
func Each(t *testing.T, fn func(t *testing.T, db *database.DB)) {
	t.Helper()
	for _, d := range Dialects(t) {
		t.Run(d, func(t *testing.T) { fn(t, Open(t, d)) })
	}
}

// Open returns a fresh, migrated database of dialect ("sqlite" or
// "postgres"), closed and removed when t ends.
func Open(t testing.TB, dialect string) *database.DB {
	t.Helper()
	ctx := context.Background()
	var rawURL string
	switch dialect {
	case "sqlite":
		rawURL = "sqlite://" + filepath.Join(t.TempDir(), "test.db")
	case "postgres":
		rawURL = CreatePostgres(t)
	default:
		t.Fatalf("dbtest: unknown dialect %q", dialect)
	}
	// Prepared statements are the server's default on PostgreSQL. The
	// probe of the pool's server (database.Options.ProbeInterval) is off:
	// a package opens dozens of databases at once, each probe would hold a
	// connection of its own, and the tests of failover turn it on.
	db, err := database.Open(ctx, rawURL, database.Options{Prepare: true, ProbeInterval: -1})
	if err != nil {
		t.Fatalf("dbtest: open %s: %v", dialect, err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(ctx); err != nil {
		t.Fatalf("dbtest: migrate %s: %v", dialect, err)
	}
	return db
}

// CreatePostgres creates an empty database on the EnvPostgres server and
// returns its URL; the database is dropped when t ends.
func CreatePostgres(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvPostgres)
	if base == "" {
		t.Fatalf("dbtest: %s is not set", EnvPostgres)
	}
	admin, err := sql.Open("postgres", withSSLDefault(base))
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := admin.PingContext(ctx); err != nil {
		t.Fatalf("dbtest: PostgreSQL at %s is unreachable: %v", redacted(base), err)
	}
	prefix, err := RunPrefix()
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	name := databaseName(prefix)
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("dbtest: create database: %v", err)
	}
	t.Cleanup(func() {
		a, err := sql.Open("postgres", withSSLDefault(base))
		if err != nil {
			return
		}
		defer a.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// FORCE ends sessions a test left open; the name is this test's own.
		if _, err := a.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("dbtest: drop %s: %v", name, err)
		}
	})
	u, err := url.Parse(withSSLDefault(base))
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

func withSSLDefault(raw string) string {
	if strings.Contains(raw, "sslmode=") {
		return raw
	}
	if strings.Contains(raw, "?") {
		return raw + "&sslmode=disable"
	}
	return raw + "?sslmode=disable"
}

func redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
