package pgcluster

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/lib/pq"
)

// EnvBin names the directory of PostgreSQL server binaries (initdb, pg_ctl,
// pg_basebackup, pg_rewind).
const EnvBin = "PROCSVC_TEST_PG_BIN"

// defaultBin is where Debian's postgresql-15 package puts them.
const defaultBin = "/usr/lib/postgresql/15/bin"

// Bounds on every wait, so a wedged server fails the test instead of
// hanging it until go test's global timeout.
const (
	cmdTimeout  = 60 * time.Second
	sqlTimeout  = 30 * time.Second
	waitTimeout = 30 * time.Second
	pollEvery   = 50 * time.Millisecond
)

// Bin returns the binaries' directory: $PROCSVC_TEST_PG_BIN, else
// /usr/lib/postgresql/15/bin if initdb exists there. When none, it skips t,
// except under CI=true where it fails t: CI must not skip failover tests.
func Bin(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv(EnvBin); dir != "" {
		if !isFile(filepath.Join(dir, "initdb")) {
			t.Fatalf("%s=%s has no initdb", EnvBin, dir)
		}
		return dir
	}
	if isFile(filepath.Join(defaultBin, "initdb")) {
		return defaultBin
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("no PostgreSQL server binaries: set %s (failover tests may not be skipped under CI)", EnvBin)
	}
	t.Skipf("no PostgreSQL server binaries: set %s or install PostgreSQL 15 in %s", EnvBin, defaultBin)
	return ""
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// host is what one cluster's nodes share: the binaries, the directory they
// live under, and the OS user they run as.
type host struct {
	bin  string
	base string
	// asPostgres: we are root, and PostgreSQL refuses to run as root, so
	// binaries run through runuser as the postgres user, who owns base.
	asPostgres bool
	uid, gid   int
	nodes      []*Node
}

// newHost makes the directory a cluster lives in and registers its
// teardown: stop every node, dump their logs if t failed, remove it all.
func newHost(t testing.TB) *host {
	t.Helper()
	h := &host{bin: Bin(t)}
	base, err := os.MkdirTemp("", "pgcluster-")
	if err != nil {
		t.Fatal(err)
	}
	h.base = base
	t.Cleanup(h.teardown(t))
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root needs a postgres OS user to run the server as: %v", err)
		}
		h.asPostgres = true
		h.uid, _ = strconv.Atoi(u.Uid)
		h.gid, _ = strconv.Atoi(u.Gid)
		// MkdirTemp made it 0700 root: hand it over so initdb can create data dirs in it.
		if err := os.Chmod(base, 0o755); err != nil {
			t.Fatal(err)
		}
		h.chown(t, base)
	}
	return h
}

func (h *host) teardown(t testing.TB) func() {
	return func() {
		for _, n := range h.nodes {
			// Errors are expected for nodes a test already stopped.
			_, _ = h.run("pg_ctl", "stop", "-D", n.Dir, "-m", "immediate", "-w", "-t", "30")
		}
		if t.Failed() {
			for _, n := range h.nodes {
				t.Logf("--- %s (port %d) log tail, %s:\n%s", n.Name, n.Port, n.LogFile, tail(n.LogFile, 40))
			}
		}
		if err := os.RemoveAll(h.base); err != nil {
			t.Errorf("removing %s: %v", h.base, err)
		}
	}
}

func (h *host) chown(t testing.TB, path string) {
	t.Helper()
	if !h.asPostgres {
		return
	}
	if err := os.Chown(path, h.uid, h.gid); err != nil {
		t.Fatal(err)
	}
}

// run runs one of the PostgreSQL binaries and returns its combined
// output.
func (h *host) run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	path := filepath.Join(h.bin, name)
	var cmd *exec.Cmd
	if h.asPostgres {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	// The test's own directory may be closed to the postgres user.
	cmd.Dir = h.base
	// pg_ctl start hands the server's stdio to the log file; should anything
	// still hold our pipe, do not wait on it forever.
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return out.String(), err
}

// mustRun is run that fails t on error.
func (h *host) mustRun(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := h.run(name, args...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// node names a new node with a free port; nothing exists on disk yet.
func (h *host) node(t testing.TB, name string) *Node {
	t.Helper()
	n := &Node{
		Name:    name,
		Port:    freePort(t),
		Dir:     filepath.Join(h.base, name),
		LogFile: filepath.Join(h.base, name+".log"),
		host:    h,
	}
	h.nodes = append(h.nodes, n)
	return n
}

// freePort asks the kernel for a port nobody listens on. Someone may take
// it before the server binds it: startFresh retries on that.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Node is one PostgreSQL server of a Cluster.
type Node struct {
	Name    string // also its application_name as a standby
	Port    int    // on 127.0.0.1
	Dir     string // data directory
	LogFile string // server log, kept across restarts

	host *host
}

// URL returns a connection URL for database db on n.
func (n *Node) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", n.Port, db)
}

// conninfo is n's address in the key=value form replication tools take.
func (n *Node) conninfo() string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=postgres", n.Port)
}

// Stop stops n with pg_ctl stop -m mode ("immediate", "fast", "smart") and
// waits until it is down.
func (n *Node) Stop(t testing.TB, mode string) {
	t.Helper()
	n.host.mustRun(t, "pg_ctl", "stop", "-D", n.Dir, "-m", mode, "-w", "-t", "30")
}

// Start starts n on n.Port and waits until it accepts connections (read-only
// ones, for a standby).
func (n *Node) Start(t testing.TB) {
	t.Helper()
	if out, err := n.start(); err != nil {
		t.Fatalf("%v\n%s\nlog:\n%s", err, out, tail(n.LogFile, 20))
	}
}

func (n *Node) start() (string, error) {
	// The port goes on the command line rather than in postgresql.conf,
	// which pg_basebackup and pg_rewind copy between nodes.
	opts := fmt.Sprintf("-p %d -c cluster_name=%s", n.Port, n.Name)
	return n.host.run("pg_ctl", "start", "-D", n.Dir, "-l", n.LogFile, "-o", opts, "-w", "-t", "30")
}

// startFresh starts a node nothing points at yet: if another process took
// its port in the meantime, it moves to a new one.
func (n *Node) startFresh(t testing.TB) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		logStart := fileSize(n.LogFile)
		out, err := n.start()
		if err == nil {
			return
		}
		if attempt < 3 && strings.Contains(readFrom(n.LogFile, logStart), "could not bind") {
			t.Logf("%s: port %d was taken, retrying on another", n.Name, n.Port)
			n.Port = freePort(t)
			continue
		}
		t.Fatalf("%v\n%s\nlog:\n%s", err, out, tail(n.LogFile, 20))
	}
}

// running reports whether n's server is up.
func (n *Node) running() bool {
	_, err := n.host.run("pg_ctl", "status", "-D", n.Dir)
	return err == nil
}

// Promote ends n's recovery (pg_ctl promote -w) and waits until it accepts
// writes.
func (n *Node) Promote(t testing.TB) {
	t.Helper()
	n.host.mustRun(t, "pg_ctl", "promote", "-D", n.Dir, "-w", "-t", "30")
	waitFor(t, n.Name+" to leave recovery", func() (bool, string) {
		in := n.InRecovery(t)
		return !in, fmt.Sprintf("pg_is_in_recovery() = %v", in)
	})
}

// Exec runs sql (one statement or several) on n's postgres database.
func (n *Node) Exec(t testing.TB, sql string) {
	t.Helper()
	db := n.open(t)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
	defer cancel()
	if _, err := db.ExecContext(ctx, sql); err != nil {
		t.Fatalf("%s: %s: %v", n.Name, sql, err)
	}
}

// QueryRow runs a one-row query on n's postgres database and scans it into
// dest.
func (n *Node) QueryRow(t testing.TB, query string, dest ...any) {
	t.Helper()
	db := n.open(t)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
	defer cancel()
	if err := db.QueryRowContext(ctx, query).Scan(dest...); err != nil {
		t.Fatalf("%s: %s: %v", n.Name, query, err)
	}
}

// InRecovery reports pg_is_in_recovery(): true on a standby.
func (n *Node) InRecovery(t testing.TB) bool {
	t.Helper()
	var in bool
	n.QueryRow(t, "SELECT pg_is_in_recovery()", &in)
	return in
}

// DB opens a pool on n's postgres database, closed when t ends. Unlike
// Exec, it is safe to use from other goroutines.
func (n *Node) DB(t testing.TB) *sql.DB {
	t.Helper()
	db := n.open(t)
	t.Cleanup(func() { db.Close() })
	return db
}

func (n *Node) open(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("postgres", n.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// waitFor polls cond until it holds, failing t after waitTimeout with
// cond's last word on what it saw.
func waitFor(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		ok, seen := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s; last: %s", waitTimeout, what, seen)
		}
		time.Sleep(pollEvery)
	}
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// readFrom returns path's content from offset on, or "" if unreadable.
func readFrom(path string, offset int64) string {
	b, err := os.ReadFile(path)
	if err != nil || offset > int64(len(b)) {
		return ""
	}
	return string(b[offset:])
}

// tail returns the last lines of path, for failure messages.
func tail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "(no log)"
	}
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
