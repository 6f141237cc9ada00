package pgcluster

import (
	"context"
	"fmt"
	"testing"
	"time"
)

const replayTimeout = 20 * time.Second

// ids lists the rows of table t on n, in order, as "1,2,3".
func ids(tb testing.TB, n *Node) string {
	tb.Helper()
	var s string
	n.QueryRow(tb, "SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM t", &s)
	return s
}

func syncState(tb testing.TB, primary, standby *Node) string {
	tb.Helper()
	var state string
	primary.QueryRow(tb, "SELECT coalesce(max(sync_state), 'absent') FROM pg_stat_replication WHERE application_name = '"+standby.Name+"'", &state)
	return state
}

// TestSynchronousFailover walks a synchronous cluster through the life
// failover tests need: replication, COMMIT waiting on the standby, a crash
// of the primary, promotion, the old primary rejoining, and all of it once
// more in the other direction.
func TestSynchronousFailover(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := New(t, Options{Synchronous: true})
	t.Logf("New: %v", time.Since(start))

	if got := syncState(t, c.Primary, c.Standby); got != "sync" {
		t.Fatalf("standby sync_state = %q, want sync", got)
	}
	if !c.Standby.InRecovery(t) || c.Primary.InRecovery(t) {
		t.Fatal("want the standby, and only it, in recovery")
	}
	c.Primary.Exec(t, "CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1)")
	c.WaitReplayed(t, replayTimeout)
	if got := ids(t, c.Standby); got != "1" {
		t.Fatalf("standby has rows %q, want 1", got)
	}

	// With the synchronous standby down, COMMIT waits for it.
	c.Standby.Stop(t, "fast")
	db := c.Primary.DB(t)
	committed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
		defer cancel()
		_, err := db.ExecContext(ctx, "INSERT INTO t VALUES (2)")
		committed <- err
	}()
	select {
	case err := <-committed:
		t.Fatalf("COMMIT returned (%v) with the synchronous standby down", err)
	case <-time.After(time.Second):
	}
	c.Standby.Start(t)
	if err := <-committed; err != nil {
		t.Fatalf("COMMIT after the standby came back: %v", err)
	}

	for round := 1; round <= 2; round++ {
		start := time.Now()
		old, promoted := c.Primary, c.Standby
		old.Stop(t, "immediate")
		promoted.Promote(t)
		if promoted.InRecovery(t) {
			t.Fatalf("round %d: %s still in recovery after Promote", round, promoted.Name)
		}
		// Hangs (and fails on Exec's timeout) if the promoted node waits
		// for a synchronous standby it does not have.
		promoted.Exec(t, fmt.Sprintf("INSERT INTO t VALUES (%d)", 10+round))
		failedOver := time.Since(start)

		c.Rejoin(t, old, promoted)
		if c.Primary != promoted || c.Standby != old {
			t.Fatalf("round %d: after Rejoin Primary=%s Standby=%s, want %s and %s",
				round, c.Primary.Name, c.Standby.Name, promoted.Name, old.Name)
		}
		if !old.InRecovery(t) {
			t.Fatalf("round %d: rejoined %s is not in recovery", round, old.Name)
		}
		if got := syncState(t, promoted, old); got != "sync" {
			t.Fatalf("round %d: rejoined sync_state = %q, want sync", round, got)
		}
		c.Primary.Exec(t, fmt.Sprintf("INSERT INTO t VALUES (%d)", 20+round))
		c.WaitReplayed(t, replayTimeout)
		if got, want := ids(t, old), ids(t, promoted); got != want {
			t.Fatalf("round %d: rejoined %s has rows %q, primary %q", round, old.Name, got, want)
		}
		t.Logf("round %d: failover %v, Rejoin by %s, total %v", round, failedOver, c.rejoinedBy, time.Since(start))
	}
	if got := ids(t, c.Primary); got != "1,2,11,12,21,22" {
		t.Fatalf("rows %q after two failovers", got)
	}
}

// TestRejoinRewindsDivergence promotes the standby while the primary still
// takes writes (split brain): Rejoin must rewind the old primary's
// divergent write away, not keep it or fail.
func TestRejoinRewindsDivergence(t *testing.T) {
	t.Parallel()
	c := New(t, Options{})
	c.Primary.Exec(t, "CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1)")
	c.WaitReplayed(t, replayTimeout)

	old, promoted := c.Primary, c.Standby
	promoted.Promote(t)
	old.Exec(t, "INSERT INTO t VALUES (100)") // lost with the old timeline
	promoted.Exec(t, "INSERT INTO t VALUES (2)")
	old.Stop(t, "fast")

	c.Rejoin(t, old, promoted)
	if c.rejoinedBy != "pg_rewind" {
		t.Errorf("Rejoin used %s, want pg_rewind", c.rejoinedBy)
	}
	c.Primary.Exec(t, "INSERT INTO t VALUES (3)")
	c.WaitReplayed(t, replayTimeout)
	if got := ids(t, old); got != "1,2,3" {
		t.Fatalf("rejoined %s has rows %q, want 1,2,3", old.Name, got)
	}
}

// TestApplyDelay: a delayed standby shows a commit only once the delay has
// passed.
func TestApplyDelay(t *testing.T) {
	t.Parallel()
	const delay = 2 * time.Second
	c := New(t, Options{ApplyDelay: delay})
	c.Primary.Exec(t, "CREATE TABLE t (id int PRIMARY KEY)")
	c.WaitReplayed(t, replayTimeout)

	// before is taken ahead of the commit, so the standby may show the row
	// no sooner than before+delay.
	before := time.Now()
	c.Primary.Exec(t, "INSERT INTO t VALUES (1)")
	got := ids(t, c.Standby)
	if time.Since(before) >= delay {
		t.Fatalf("the first look took %v, not less than the delay: nothing proven", time.Since(before))
	}
	if got != "" {
		t.Fatalf("standby shows rows %q right after the commit, despite a %v delay", got, delay)
	}
	waitFor(t, "the delayed row on the standby", func() (bool, string) {
		got := ids(t, c.Standby)
		return got == "1", "rows " + got
	})
	if seen := time.Since(before); seen < delay {
		t.Fatalf("standby showed the row after %v, before its %v delay", seen, delay)
	} else {
		t.Logf("row visible on the standby after %v (delay %v)", seen, delay)
	}
}
