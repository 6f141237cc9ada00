package database_test

// Faults of the database itself (a timeout, a lock held by a stuck session,
// backends terminated, the server unreachable, a closed pool, a busy SQLite
// file) must surface as errors that apperr answers unavailable, and the pool
// must recover from them without a restart.

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"github.com/google/uuid"
	"github.com/lib/pq"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/viewer"
)

// guard bounds a step that must not hang; reaching it is a failure, told
// apart from the fault under test by its error (context.DeadlineExceeded).
const guard = 30 * time.Second

func needPostgres(t *testing.T) {
	t.Helper()
	dbtest.Dialects(t) // fails under CI=true without PostgreSQL
	if !hasPostgres() {
		t.Skipf("%s is not set", dbtest.EnvPostgres)
	}
}

// openPostgres opens a fresh, migrated PostgreSQL database with opts and
// returns it with its URL.
func openPostgres(t *testing.T, opts database.Options) (*database.DB, string) {
	t.Helper()
	rawURL := dbtest.CreatePostgres(t)
	db, err := database.Open(context.Background(), rawURL, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db, rawURL
}

// session is a plain connection of another client of the same database.
func session(t *testing.T, driverName, dsn string) *sql.Conn {
	t.Helper()
	other, err := sql.Open(driverName, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	c, err := other.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func newWorkspace(t *testing.T, db *database.DB) uuid.UUID {
	t.Helper()
	w, err := db.Client.Workspace.Create().SetName("Faults").SetKey("FLT").Save(viewer.System(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	return w.ID
}

func wantUnavailable(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%s hung until the test's guard: %v", what, err)
	}
	if c := apperr.CodeOf(err); c != apperr.Unavailable {
		t.Fatalf("%s: %v answers %s, want unavailable", what, err, c)
	}
}

func wantSQLState(t *testing.T, err error, code string) {
	t.Helper()
	var pe *pq.Error
	if !errors.As(err, &pe) || string(pe.Code) != code {
		t.Fatalf("want SQLSTATE %s, got %v", code, err)
	}
}

func show(t *testing.T, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, setting string) string {
	t.Helper()
	var v string
	if err := q.QueryRowContext(context.Background(), "SHOW "+setting).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func busyTimeout(t *testing.T, db *database.DB) string {
	t.Helper()
	var v string
	if err := db.SQL.QueryRowContext(context.Background(), "PRAGMA busy_timeout").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSessionSettings: the timeouts of Options are set on every connection of
// the pool; a setting in the URL wins; none are set when Options has none.
func TestSessionSettings(t *testing.T) {
	needPostgres(t)
	db, rawURL := openPostgres(t, database.Options{MaxOpenConns: 3,
		LockTimeout: 1500 * time.Millisecond, StatementTimeout: 2 * time.Second, IdleInTransactionTimeout: time.Minute})
	ctx := context.Background()
	conns := make([]*sql.Conn, 3) // held together: three distinct connections
	for i := range conns {
		c, err := db.SQL.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	for i, c := range conns {
		got := [3]string{show(t, c, "lock_timeout"), show(t, c, "statement_timeout"), show(t, c, "idle_in_transaction_session_timeout")}
		if got != [3]string{"1500ms", "2s", "1min"} {
			t.Fatalf("connection %d: lock, statement, idle-in-transaction timeouts = %v", i, got)
		}
	}

	u, _ := url.Parse(rawURL)
	q := u.Query()
	q.Set("statement_timeout", "7000")
	u.RawQuery = q.Encode()
	mine, err := database.Open(ctx, u.String(), database.Options{StatementTimeout: time.Second, LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Close()
	if got := show(t, mine.SQL, "statement_timeout"); got != "7s" {
		t.Fatalf("the URL's statement_timeout was overridden: %s", got)
	}
	if got := show(t, mine.SQL, "lock_timeout"); got != "1s" {
		t.Fatalf("lock_timeout = %s", got)
	}

	none, err := database.Open(ctx, rawURL, database.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer none.Close()
	if got := show(t, none.SQL, "lock_timeout"); got != "0" {
		t.Fatalf("lock_timeout without the option = %s, want the server's 0", got)
	}
}

// TestStatementTimeoutIsUnavailable: a statement cancelled by
// statement_timeout (57014) is unavailable, not internal, and leaves its
// connection usable.
func TestStatementTimeoutIsUnavailable(t *testing.T) {
	needPostgres(t)
	db, _ := openPostgres(t, database.Options{MaxOpenConns: 1, StatementTimeout: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	var rows entsql.Rows
	err := db.Driver().Query(ctx, "SELECT pg_sleep(20)", []any{}, &rows)
	if err == nil {
		rows.Close()
	}
	wantSQLState(t, err, "57014")
	wantUnavailable(t, "a statement past statement_timeout", err)
	if _, err := db.Client.Workspace.Query().Count(viewer.System(ctx)); err != nil {
		t.Fatalf("the connection is unusable after the timeout: %v", err)
	}
}

// TestLockTimeoutIsUnavailable: a write waiting on a row lock held by a
// session idle in its transaction fails after lock_timeout (55P03) and is
// unavailable; once the lock is released, writes succeed again.
func TestLockTimeoutIsUnavailable(t *testing.T) {
	needPostgres(t)
	db, rawURL := openPostgres(t, database.Options{LockTimeout: 100 * time.Millisecond})
	id := newWorkspace(t, db)
	stuck := session(t, "postgres", rawURL)
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	if _, err := stuck.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := stuck.ExecContext(ctx, "SELECT id FROM workspaces WHERE id = $1 FOR UPDATE", id); err != nil {
		t.Fatal(err)
	}
	sys := viewer.System(ctx)
	err := db.Client.Workspace.UpdateOneID(id).AddVersion(1).Exec(sys)
	wantSQLState(t, err, "55P03")
	wantUnavailable(t, "a write behind a held lock", err)

	tx, err := db.Client.Tx(sys)
	if err != nil {
		t.Fatal(err)
	}
	err = tx.Workspace.UpdateOneID(id).AddVersion(1).Exec(sys)
	_ = tx.Rollback()
	wantUnavailable(t, "a write behind a held lock, in a transaction", err)

	if _, err := stuck.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := db.Client.Workspace.UpdateOneID(id).AddVersion(1).Exec(sys); err != nil {
		t.Fatalf("write after the lock was released: %v", err)
	}
}

// warmPool leaves n idle connections in db's pool.
func warmPool(t *testing.T, db *database.DB, n int) {
	t.Helper()
	ctx := context.Background()
	var conns []*sql.Conn
	for range n {
		c, err := db.SQL.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.PingContext(ctx); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Close()
	}
	if idle := db.SQL.Stats().Idle; idle != n {
		t.Fatalf("%d idle connections, want %d", idle, n)
	}
}

// TestPingAfterBackendsTerminated: once every backend of the pool was
// terminated, Ping (what /readyz runs) answers at once, as requests do,
// instead of failing once per dead pooled connection.
func TestPingAfterBackendsTerminated(t *testing.T) {
	needPostgres(t)
	const pool = 8
	db, rawURL := openPostgres(t, database.Options{MaxOpenConns: pool, Prepare: true})
	for round := range 3 {
		// Drop what the last round left dead; then fill the pool.
		db.SQL.SetMaxIdleConns(0)
		db.SQL.SetMaxIdleConns(pool)
		warmPool(t, db, pool)
		dbtest.TerminateBackends(t, rawURL)
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		if err := db.Ping(ctx); err != nil {
			t.Fatalf("round %d: Ping after the backends were terminated: %v", round, err)
		}
		cancel()
		for i := range pool {
			if _, err := db.Client.Workspace.Query().Count(viewer.System(context.Background())); err != nil {
				t.Fatalf("round %d: query %d after recovery: %v", round, i, err)
			}
		}
	}
}

// TestQueriesAfterBackendsTerminated: requests through ent (prepared reads,
// writes, transactions) on a pool whose backends were all terminated either
// succeed on a fresh connection or fail unavailable, never internal, and the
// pool serves again without a restart.
func TestQueriesAfterBackendsTerminated(t *testing.T) {
	needPostgres(t)
	const pool = 6
	db, rawURL := openPostgres(t, database.Options{MaxOpenConns: pool, Prepare: true})
	id := newWorkspace(t, db)
	sys := viewer.System(context.Background())
	ops := map[string]func() error{
		"read": func() error { _, err := db.Client.Workspace.Query().Count(sys); return err },
		"write": func() error {
			return db.Client.Workspace.UpdateOneID(id).AddVersion(1).Exec(sys)
		},
		"transaction": func() error {
			tx, err := db.Client.Tx(sys)
			if err != nil {
				return err
			}
			if err := tx.Workspace.UpdateOneID(id).AddVersion(1).Exec(sys); err != nil {
				_ = tx.Rollback()
				return err
			}
			return tx.Commit()
		},
	}
	for name, op := range ops {
		db.SQL.SetMaxIdleConns(0)
		db.SQL.SetMaxIdleConns(pool)
		warmPool(t, db, pool)
		dbtest.TerminateBackends(t, rawURL)
		var wg sync.WaitGroup
		errs := make([]error, pool)
		for i := range pool {
			wg.Go(func() { errs[i] = op() })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil && apperr.CodeOf(err) != apperr.Unavailable {
				t.Fatalf("%s after terminated backends: %v answers %s", name, err, apperr.CodeOf(err))
			}
		}
		if err := op(); err != nil {
			t.Fatalf("%s does not recover: %v", name, err)
		}
	}
}

// TestUnreachableServerIsUnavailable: a server that refuses connections
// (ECONNREFUSED) is unavailable.
func TestUnreachableServerIsUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	_, err = database.Open(ctx, "postgres://postgres@"+addr+"/procsvc?sslmode=disable", database.Options{})
	wantUnavailable(t, "opening a database nobody listens for", err)
	if !database.ConnectionLost(err) {
		t.Fatalf("ConnectionLost(%v) = false", err)
	}
}

// TestClosedDatabaseIsUnavailable: statements on a closed pool (the process
// shutting down) are unavailable on both databases.
func TestClosedDatabaseIsUnavailable(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		db.SQL.Close()
		_, err := db.Client.Workspace.Query().Count(viewer.System(context.Background()))
		wantUnavailable(t, "a read on a closed database", err)
		wantUnavailable(t, "Ping on a closed database", db.Ping(context.Background()))
	})
}

// busySQLite returns a migrated SQLite database at a new path with a short
// busy timeout and a single connection, and a connection of another client
// holding the file's write lock until released.
func busySQLite(t *testing.T, busyMS string) (db *database.DB, release func()) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "busy.db")
	db, err := database.Open(context.Background(), "sqlite://"+path+"?_pragma=busy_timeout("+busyMS+")", database.Options{MaxOpenConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := busyTimeout(t, db); got != busyMS {
		t.Fatalf("busy_timeout = %s, want the URL's %s", got, busyMS)
	}
	newWorkspace(t, db)
	holder := session(t, "sqlite", "file:"+path)
	if _, err := holder.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	return db, func() {
		if _, err := holder.ExecContext(context.Background(), "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
	}
}

func wantSQLiteBusy(t *testing.T, err error) {
	t.Helper()
	var se *sqlite.Error
	if !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY {
		t.Fatalf("want SQLITE_BUSY, got %v", err)
	}
}

// TestBusySQLiteIsUnavailable: a write that finds the SQLite file locked
// past the busy timeout (SQLITE_BUSY) is unavailable; reads go on (WAL).
func TestBusySQLiteIsUnavailable(t *testing.T) {
	db, release := busySQLite(t, "50")
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	sys := viewer.System(ctx)
	_, err := db.Client.Workspace.Create().SetName("Second").SetKey("SEC").Save(sys)
	wantSQLiteBusy(t, err)
	wantUnavailable(t, "a write on a busy SQLite file", err)
	if _, err := db.Client.Workspace.Query().Count(sys); err != nil {
		t.Fatalf("a read while the file is write-locked: %v", err)
	}
	release()
	if _, err := db.Client.Workspace.Create().SetName("Second").SetKey("SEC").Save(sys); err != nil {
		t.Fatalf("a write after the lock was released: %v", err)
	}
}

// TestTryWrite: TryWrite gives up on a held lock after its own short wait,
// whatever the connection's setting, leaves that setting as it was, and
// otherwise commits what fn wrote, counting its statements.
func TestTryWrite(t *testing.T) {
	bump := func(id uuid.UUID, d string) func(ctx context.Context, tx dialect.Tx) error {
		return func(ctx context.Context, tx dialect.Tx) error {
			q, args := entsql.Dialect(d).Update("workspaces").Add("version", 1).Where(entsql.EQ("id", id)).Query()
			return tx.Exec(ctx, q, args, nil)
		}
	}
	version := func(t *testing.T, db *database.DB, id uuid.UUID) int64 {
		w, err := db.Client.Workspace.Get(viewer.System(context.Background()), id)
		if err != nil {
			t.Fatal(err)
		}
		return w.Version
	}
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()

	t.Run("sqlite", func(t *testing.T) {
		db, release := busySQLite(t, "10000") // the default: 10 s
		id, _ := db.Client.Workspace.Query().OnlyID(viewer.System(ctx))
		err := db.TryWrite(ctx, 20*time.Millisecond, bump(id, dialect.SQLite))
		wantSQLiteBusy(t, err)
		wantUnavailable(t, "TryWrite on a busy file", err)
		if got := busyTimeout(t, db); got != "10000" {
			t.Fatalf("busy_timeout left at %s", got)
		}
		release()
		before, n := version(t, db, id), db.Statements()
		if err := db.TryWrite(ctx, 20*time.Millisecond, bump(id, dialect.SQLite)); err != nil {
			t.Fatal(err)
		}
		if db.Statements()-n != 1 || version(t, db, id) != before+1 {
			t.Fatalf("%d statements counted, version %d → %d", db.Statements()-n, before, version(t, db, id))
		}
	})

	t.Run("postgres", func(t *testing.T) {
		needPostgres(t)
		db, rawURL := openPostgres(t, database.Options{MaxOpenConns: 1}) // no lock_timeout of its own
		id := newWorkspace(t, db)
		stuck := session(t, "postgres", rawURL)
		if _, err := stuck.ExecContext(ctx, "BEGIN"); err != nil {
			t.Fatal(err)
		}
		if _, err := stuck.ExecContext(ctx, "UPDATE workspaces SET version = version WHERE id = $1", id); err != nil {
			t.Fatal(err)
		}
		err := db.TryWrite(ctx, 20*time.Millisecond, bump(id, dialect.Postgres))
		wantSQLState(t, err, "55P03")
		wantUnavailable(t, "TryWrite behind a held lock", err)
		if got := show(t, db.SQL, "lock_timeout"); got != "0" {
			t.Fatalf("lock_timeout left at %s on the connection", got)
		}
		if _, err := stuck.ExecContext(ctx, "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
		before, n := version(t, db, id), db.Statements()
		if err := db.TryWrite(ctx, 20*time.Millisecond, bump(id, dialect.Postgres)); err != nil {
			t.Fatal(err)
		}
		if db.Statements()-n != 1 || version(t, db, id) != before+1 {
			t.Fatalf("%d statements counted, version %d → %d", db.Statements()-n, before, version(t, db, id))
		}
	})
}

// TestMigrateIgnoresSessionTimeouts: the request timeouts do not apply to
// migrations, which may rightly wait for another replica's migration lock
// (or build an index) for longer.
func TestMigrateIgnoresSessionTimeouts(t *testing.T) {
	needPostgres(t)
	rawURL := dbtest.CreatePostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	db, err := database.Open(ctx, rawURL, database.Options{LockTimeout: time.Millisecond, StatementTimeout: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	other := session(t, "postgres", rawURL)
	if _, err := other.ExecContext(ctx, "SELECT pg_advisory_lock($1)", database.MigrationLock); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- db.Migrate(ctx) }()
	// Release the lock only once Migrate waits for it.
	for {
		var waiting bool
		if err := other.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks
			WHERE locktype = 'advisory' AND NOT granted)`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("Migrate returned before taking the migration lock: %v", err)
		default:
		}
	}
	if _, err := other.ExecContext(ctx, "SELECT pg_advisory_unlock($1)", database.MigrationLock); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	plain, err := database.Open(ctx, rawURL, database.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.Ready(ctx); err != nil {
		t.Fatalf("Ready after Migrate: %v", err)
	}
}
