package dbtest

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/lib/pq"

	"github.com/procsvc/procsvc/internal/database"
)

// faultGuard bounds how long a fault helper may wait on the database.
const faultGuard = 30 * time.Second

// NeedPostgres skips t when EnvPostgres is unset; under CI=true it fails
// instead, like Dialects.
func NeedPostgres(t testing.TB) {
	t.Helper()
	Dialects(t)
	if os.Getenv(EnvPostgres) == "" {
		t.Skipf("%s is not set", EnvPostgres)
	}
}

// TerminateBackends ends every other session of the PostgreSQL database
// named by rawURL, as an operator or a failover does, through a connection
// of its own, and waits until those sessions are gone. Sessions opened
// since (a listener or a pool reconnecting at once) are left alone: waiting
// for none at all would race with them.
func TerminateBackends(t testing.TB, rawURL string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("postgres", rawURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	admin.SetMaxOpenConns(1)
	ctx, cancel := context.WithTimeout(context.Background(), faultGuard)
	defer cancel()
	name := strings.TrimPrefix(u.Path, "/")
	var pids pq.Int64Array
	if err := admin.QueryRowContext(ctx, `SELECT coalesce(array_agg(pid), '{}') FROM (
		SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = $1 AND pid <> pg_backend_pid()) ended`, name).Scan(&pids); err != nil {
		t.Fatal(err)
	}
	for {
		var left int
		if err := admin.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE pid = ANY($1)`, pids).Scan(&left); err != nil {
			t.Fatalf("waiting for the backends to exit: %v", err)
		}
		if left == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// HoldWorkspace makes another client hold what every write of the
// workspace needs (on PostgreSQL its advisory lock, exclusively, and its
// row, which the version bump and the token bookkeeping take; on SQLite the
// write lock) in a transaction left open, until the returned function ends
// it.
func HoldWorkspace(t testing.TB, driverName, dsn, workspaceID string) (release func()) {
	t.Helper()
	ctx := context.Background()
	other, err := sql.Open(driverName, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stmts := []string{"BEGIN IMMEDIATE"}
	if driverName == "postgres" {
		id, err := uuid.Parse(workspaceID)
		if err != nil {
			t.Fatal(err)
		}
		stmts = []string{"BEGIN", "SELECT pg_advisory_xact_lock(" + strconv.FormatInt(database.WorkspaceLockKey(id), 10) + ")",
			"UPDATE workspaces SET version = version WHERE id = '" + workspaceID + "'"}
	}
	for _, s := range stmts {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	return func() {
		if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
		conn.Close()
	}
}
