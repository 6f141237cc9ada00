package dbtest

import (
	"context"
	"database/sql"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
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

// ErrConnectionLost is what the faults of Faults fail with: a connection
// reset mid-conversation, which database.ConnectionLost recognises (and
// apperr answers unavailable).
var ErrConnectionLost error = &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}

// Faults injects failures into a database's statements and commits
// (database.DB.Inject), rule by rule, for the rest of a test: a commit
// whose answer is lost after it committed, one that never reached the
// database, statements that fail as if the connection broke. A rule
// matches a statement by a substring of its text with the identifiers'
// quotes removed (`INSERT INTO procedures`), the same on both dialects.
type Faults struct {
	mu         sync.Mutex
	commits    []*commitRule
	statements []*statementRule
}

type commitRule struct {
	match  string
	commit bool   // the COMMIT reaches the database
	lose   bool   // its answer is lost (else it succeeds)
	then   func() // run once the transaction is over, if set
	// held, when set, receives the transaction's commit instead: the
	// transaction stays open until it is called (HoldCommit).
	held chan func() error
}

type statementRule struct {
	match string
	left  int // statements left to fail; negative: every one
}

// InjectFaults starts injecting faults into db, none yet, until the test
// ends.
func InjectFaults(t testing.TB, db *database.DB) *Faults {
	t.Helper()
	f := &Faults{}
	db.Inject(&database.Faults{Statement: f.statement, Commit: f.commit})
	t.Cleanup(func() { db.Inject(nil) })
	return f
}

// LoseCommitAnswer makes the COMMIT of the next transaction that ran a
// statement containing match reach the database and commit, and then fail
// with ErrConnectionLost, as when the connection dies while its answer is
// on the way (a primary failing).
func (f *Faults) LoseCommitAnswer(match string) {
	f.addCommit(&commitRule{match: match, commit: true, lose: true})
}

// DropCommit makes the connection of the next transaction that ran a
// statement containing match break before its COMMIT is sent: the
// transaction rolls back, and the commit fails with ErrConnectionLost.
func (f *Faults) DropCommit(match string) {
	f.addCommit(&commitRule{match: match, lose: true})
}

// HoldCommit makes the COMMIT of the next transaction that ran a statement
// containing match fail at once with ErrConnectionLost while the
// transaction stays open, holding its locks, as when the COMMIT is still on
// its way to a server that will get it: the transaction commits when the
// returned function is called (it waits for the transaction to be held),
// or when the test ends.
func (f *Faults) HoldCommit(t testing.TB, match string) (commit func() error) {
	t.Helper()
	held := make(chan func() error, 1)
	f.addCommit(&commitRule{match: match, held: held})
	var once sync.Once
	var end func() error
	take := func() func() error {
		once.Do(func() {
			select {
			case end = <-held:
			case <-time.After(faultGuard):
			}
		})
		return end
	}
	t.Cleanup(func() {
		f.mu.Lock()
		fired := !slices.ContainsFunc(f.commits, func(r *commitRule) bool { return r.held == held })
		f.mu.Unlock()
		if fired {
			if c := take(); c != nil {
				_ = c()
			}
		}
	})
	return func() error {
		c := take()
		if c == nil {
			t.Fatalf("no transaction ran %q and committed within %s", match, faultGuard)
		}
		return c()
	}
}

// AfterCommit runs then once the next transaction that ran a statement
// containing match has committed (normally), before its commit returns.
func (f *Faults) AfterCommit(match string, then func()) {
	f.addCommit(&commitRule{match: match, commit: true, then: then})
}

// FailStatements makes the next n statements containing match fail with
// ErrConnectionLost, unsent; every one from now on when n is negative,
// until Heal.
func (f *Faults) FailStatements(match string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statements = append(f.statements, &statementRule{match: match, left: n})
}

// Heal drops every rule that has not fired yet.
func (f *Faults) Heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.commits, f.statements = nil, nil
}

// Pending counts the rules that have not fired yet: a test checks it is 0,
// so that it cannot pass without its fault.
func (f *Faults) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.commits)
	for _, r := range f.statements {
		if r.left > 0 {
			n++
		}
	}
	return n
}

func (f *Faults) addCommit(r *commitRule) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.commits = append(f.commits, r)
}

func (f *Faults) statement(query string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, r := range f.statements {
		if r.left == 0 || !strings.Contains(unquoted(query), r.match) {
			continue
		}
		if r.left > 0 {
			r.left--
			if r.left == 0 {
				f.statements = append(f.statements[:i:i], f.statements[i+1:]...)
			}
		}
		return ErrConnectionLost
	}
	return nil
}

func (f *Faults) commit(queries []string, commit, rollback func() error) error {
	f.mu.Lock()
	var rule *commitRule
	for i, r := range f.commits {
		if slices.ContainsFunc(queries, func(q string) bool { return strings.Contains(unquoted(q), r.match) }) {
			rule = r
			f.commits = append(f.commits[:i:i], f.commits[i+1:]...)
			break
		}
	}
	f.mu.Unlock()
	if rule == nil {
		return commit()
	}
	if rule.held != nil {
		var once sync.Once
		var err error
		rule.held <- func() error {
			once.Do(func() { err = commit() })
			return err
		}
		return ErrConnectionLost
	}
	var err error
	if rule.commit {
		err = commit()
	} else {
		err = rollback()
	}
	if rule.then != nil {
		rule.then()
	}
	if err == nil && rule.lose {
		err = ErrConnectionLost
	}
	return err
}

// unquoted is query without the quotes of its identifiers, as ent writes
// them: double quotes on PostgreSQL, backticks on SQLite.
func unquoted(query string) string {
	return strings.NewReplacer(`"`, "", "`", "").Replace(query)
}
