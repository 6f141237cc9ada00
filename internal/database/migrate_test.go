package database_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

func openEmptyPostgres(t *testing.T) *database.DB {
	t.Helper()
	dbtest.Dialects(t) // fails under CI without PostgreSQL
	if !hasPostgres() {
		t.Skip("PROCSVC_TEST_POSTGRES is not set")
	}
	db, err := database.Open(context.Background(), dbtest.CreatePostgres(t), database.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestMigrationsMatchTheEntSchema is the drift check: the versioned
// migrations, applied to an empty database, produce exactly the schema ent
// expects. Changing ent/schema without adding a migration fails here.
func TestMigrationsMatchTheEntSchema(t *testing.T) {
	db := openEmptyPostgres(t)
	ctx := context.Background()
	pending, err := db.PendingMigrations(ctx)
	if err != nil || len(pending) == 0 {
		t.Fatalf("pending on an empty database: %v, %v", pending, err)
	}
	applied, err := db.ApplyMigrations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(applied) != len(pending) {
		t.Fatalf("applied %v, want %v", applied, pending)
	}
	var diff bytes.Buffer
	if err := db.WriteSchemaDiff(ctx, &diff); err != nil {
		t.Fatal(err)
	}
	if ddl := strings.TrimSpace(strings.NewReplacer("BEGIN;", "", "COMMIT;", "").Replace(diff.String())); ddl != "" {
		t.Fatalf("the ent schema differs from the migrations; run `go run ./cmd/migrationdiff -name <change> -dev-url <empty db>`:\n%s", ddl)
	}
	again, err := db.ApplyMigrations(ctx)
	if err != nil || len(again) != 0 {
		t.Fatalf("re-applying: %v, %v; want a no-op", again, err)
	}
	if err := db.Ready(ctx); err != nil {
		t.Fatalf("Ready after migrating: %v", err)
	}
}

func TestMigrationsRefuseEditedFilesAndUnknownVersions(t *testing.T) {
	db := openEmptyPostgres(t)
	ctx := context.Background()
	if _, err := db.ApplyMigrations(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SQL.ExecContext(ctx, "UPDATE procsvc_schema_migrations SET checksum = 'tampered' WHERE version = (SELECT min(version) FROM procsvc_schema_migrations)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ApplyMigrations(ctx); err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("edited migration accepted: %v", err)
	}
	if err := db.Ready(ctx); err == nil {
		t.Fatal("Ready accepted an edited migration")
	}
	ms, _ := database.Migrations()
	if _, err := db.SQL.ExecContext(ctx, "UPDATE procsvc_schema_migrations SET checksum = $1 WHERE version = $2", ms[0].Checksum, ms[0].Version); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SQL.ExecContext(ctx, "INSERT INTO procsvc_schema_migrations (version, name, checksum) VALUES ('99991231000000', 'future', 'x')"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ApplyMigrations(ctx); err == nil || !strings.Contains(err.Error(), "newer than this binary") {
		t.Fatalf("unknown version accepted: %v", err)
	}
}

func TestServeRefusesAStaleSchema(t *testing.T) {
	db := openEmptyPostgres(t)
	if err := db.Ready(context.Background()); err == nil || !strings.Contains(err.Error(), "procsvc migrate") {
		t.Fatalf("Ready on an empty database: %v", err)
	}
}

func TestMigrationFilesAreWellFormed(t *testing.T) {
	ms, err := database.Migrations()
	if err != nil || len(ms) == 0 {
		t.Fatalf("migrations: %v (%d)", err, len(ms))
	}
	for i := 1; i < len(ms); i++ {
		if ms[i].Version <= ms[i-1].Version {
			t.Fatalf("versions out of order: %s after %s", ms[i].Version, ms[i-1].Version)
		}
	}
}
