// Package pgcluster builds throwaway PostgreSQL streaming-replication
// clusters (a primary and a hot standby on 127.0.0.1) for failover tests,
// and a TCP proxy that can go silent like a partitioned host.
//
// Nodes run the server binaries found by Bin; as root they run as the
// postgres OS user (runuser), which owns everything under the cluster's
// temporary directory. Settings favour speed over durability (fsync=off):
// a cluster lives only as long as its test.
package pgcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// serverConf is appended to every initdb'd postgresql.conf; pg_basebackup
// and pg_rewind copy it to the other node, so both always share it. Role
// settings (primary_conninfo, synchronous_standby_names) go in
// postgresql.auto.conf instead, per node.
const serverConf = `
# pgcluster: a throwaway test node.
listen_addresses = '127.0.0.1'
# No Unix socket: nodes must not clash with a system server's socket.
unix_socket_directories = ''
fsync = off
# pg_rewind needs full-page writes and hint-bit logging.
full_page_writes = on
wal_log_hints = on
wal_level = replica
hot_standby = on
max_wal_senders = 4
max_replication_slots = 4
wal_keep_size = '256MB'
# Reconnect to a restarted or new primary quickly (default 5s).
wal_retrieve_retry_interval = '200ms'
wal_receiver_status_interval = '1s'
shared_buffers = '16MB'
max_connections = 40
autovacuum = off
log_line_prefix = '%m [%p] %q%a '
`

// Cluster is a primary and a standby streaming from it.
type Cluster struct {
	Primary, Standby *Node

	opts Options
	host *host
	// rejoinedBy says how the last Rejoin rebuilt the old primary:
	// "pg_rewind" or "pg_basebackup".
	rejoinedBy string
}

// Options shape a Cluster.
type Options struct {
	// Synchronous names the standby in the primary's
	// synchronous_standby_names, so COMMIT waits until the standby has
	// flushed it (synchronous_commit=on).
	Synchronous bool
	// ApplyDelay is the standby's recovery_min_apply_delay (0: none); a
	// standby rebuilt by Rejoin gets it too.
	ApplyDelay time.Duration
}

// New starts a primary and a hot standby streaming from it (synchronously
// when o.Synchronous) and returns once the standby streams. Both are
// stopped (-m immediate) and removed when t ends.
func New(t testing.TB, o Options) *Cluster {
	t.Helper()
	h := newHost(t)
	c := &Cluster{opts: o, host: h}

	primary := h.node(t, "pg1")
	h.mustRun(t, "initdb", "-D", primary.Dir, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	appendFile(t, filepath.Join(primary.Dir, "postgresql.conf"), serverConf)
	primary.startFresh(t)

	standby := h.node(t, "pg2")
	c.basebackup(t, standby, primary)
	c.makeStandby(t, standby, primary)
	standby.startFresh(t)
	c.attach(t, primary, standby)

	c.Primary, c.Standby = primary, standby
	return c
}

// basebackup copies from's data directory to n's, which must not exist.
func (c *Cluster) basebackup(t testing.TB, n, from *Node) {
	t.Helper()
	c.host.mustRun(t, "pg_basebackup", "-d", from.conninfo(), "-D", n.Dir,
		"-X", "stream", "-c", "fast", "--no-sync")
}

// makeStandby configures n's (stopped) data directory to stream from
// primary.
func (c *Cluster) makeStandby(t testing.TB, n, primary *Node) {
	t.Helper()
	signal := filepath.Join(n.Dir, "standby.signal")
	if err := os.WriteFile(signal, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c.host.chown(t, signal)
	// Appended, so these win over whatever pg_basebackup or pg_rewind copied
	// from the source's postgresql.auto.conf: above all a
	// synchronous_standby_names, which would make this node's writes hang
	// once promoted, as it then has no standby of its own. (attach sets it
	// only after the copy, but a test's own ALTER SYSTEM may not.)
	appendFile(t, filepath.Join(n.Dir, "postgresql.auto.conf"), fmt.Sprintf(`
primary_conninfo = 'host=127.0.0.1 port=%d user=postgres application_name=%s'
synchronous_standby_names = ''
recovery_min_apply_delay = '%dms'
`, primary.Port, n.Name, c.opts.ApplyDelay.Milliseconds()))
}

// attach waits until standby streams from primary and, for a Synchronous
// cluster, makes it primary's synchronous standby.
func (c *Cluster) attach(t testing.TB, primary, standby *Node) {
	t.Helper()
	waitStreaming(t, primary, standby, false)
	if !c.opts.Synchronous {
		return
	}
	// ALTER SYSTEM may not run inside the implicit transaction of a
	// multi-statement query, hence two calls.
	primary.Exec(t, fmt.Sprintf(`ALTER SYSTEM SET synchronous_standby_names = 'FIRST 1 ("%s")'`, standby.Name))
	primary.Exec(t, "SELECT pg_reload_conf()")
	waitStreaming(t, primary, standby, true)
}

// waitStreaming waits until primary's pg_stat_replication shows standby
// streaming, and as its synchronous standby when sync.
func waitStreaming(t testing.TB, primary, standby *Node, sync bool) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%s to stream from %s (sync=%v)", standby.Name, primary.Name, sync), func() (bool, string) {
		var state, syncState string
		primary.QueryRow(t, fmt.Sprintf(`SELECT coalesce(max(state), 'absent'), coalesce(max(sync_state), 'absent')
			FROM pg_stat_replication WHERE application_name = '%s'`, standby.Name), &state, &syncState)
		ok := state == "streaming" && (!sync || syncState == "sync")
		return ok, fmt.Sprintf("state=%s sync_state=%s", state, syncState)
	})
}

// Rejoin turns oldPrimary (stopped) into a standby of newPrimary (the
// promoted standby): pg_rewind, or a fresh pg_basebackup if that fails;
// then it starts it and waits until it streams (as the synchronous standby
// for a Synchronous cluster). Afterwards c.Primary is newPrimary and
// c.Standby oldPrimary.
func (c *Cluster) Rejoin(t testing.TB, oldPrimary, newPrimary *Node) {
	t.Helper()
	if oldPrimary.running() {
		t.Fatalf("Rejoin: %s is still running; Stop it first", oldPrimary.Name)
	}
	// A promoted server records its new timeline in pg_control only at its
	// next checkpoint; until then pg_rewind sees one timeline and wrongly
	// reports that no rewind is needed.
	newPrimary.Exec(t, "CHECKPOINT")
	c.rejoinedBy = "pg_rewind"
	out, err := c.host.run("pg_rewind", "--target-pgdata", oldPrimary.Dir,
		"--source-server", newPrimary.conninfo(), "--no-sync")
	if err != nil {
		t.Logf("Rejoin: %v\n%s\nfalling back to pg_basebackup", err, out)
		if err := os.RemoveAll(oldPrimary.Dir); err != nil {
			t.Fatal(err)
		}
		c.basebackup(t, oldPrimary, newPrimary)
		c.rejoinedBy = "pg_basebackup"
	}
	c.makeStandby(t, oldPrimary, newPrimary)
	oldPrimary.Start(t)
	c.attach(t, newPrimary, oldPrimary)
	c.Primary, c.Standby = newPrimary, oldPrimary
}

// WaitReplayed waits until c.Standby has replayed all the WAL c.Primary
// had written when it was called, failing t after timeout.
func (c *Cluster) WaitReplayed(t testing.TB, timeout time.Duration) {
	t.Helper()
	var target string
	c.Primary.QueryRow(t, "SELECT pg_current_wal_lsn()::text", &target)
	deadline := time.Now().Add(timeout)
	for {
		var replayed string
		var done bool
		c.Standby.QueryRow(t, fmt.Sprintf(`SELECT coalesce(pg_last_wal_replay_lsn()::text, 'none'),
			coalesce(pg_last_wal_replay_lsn() >= '%s'::pg_lsn, false)`, target), &replayed, &done)
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v %s has replayed up to %s, %s wrote up to %s",
				timeout, c.Standby.Name, replayed, c.Primary.Name, target)
		}
		time.Sleep(pollEvery)
	}
}

// appendFile appends text to path, which exists (its owner stays).
func appendFile(t testing.TB, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
