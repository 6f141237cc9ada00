package core_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"sync"
	"testing"
	"time"

	"entgo.io/ent/dialect"
	"github.com/google/uuid"
	"github.com/lib/pq"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/proceduretally"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/events"
)

// postgresService is a Service announcing as the server does on
// PostgreSQL, which makes field updates share the workspace lock.
func postgresService(db *database.DB) *core.Service {
	return core.New(db.Client, core.WithClock(func() time.Time { return clock }), core.WithAnnouncer(events.NewPostgresAnnouncer(nil)))
}

// lockGuard bounds every wait of these tests: reaching it is a failure (a
// write that should have gone ahead is blocked, or one that should block
// never reached its lock), never a pass.
const lockGuard = 20 * time.Second

// heldWorkspace is a transaction of another session holding the
// workspace's row in one of PostgreSQL's row-lock modes, as a write of
// procsvc in flight does: FOR KEY SHARE (a field update, before its bump),
// FOR NO KEY UPDATE (a field update's bump), FOR UPDATE (an exclusive
// write).
type heldWorkspace struct{ conn *sql.Conn }

func holdWorkspace(t *testing.T, db *database.DB, workspaceID fmt.Stringer, mode string) *heldWorkspace {
	t.Helper()
	ctx := context.Background()
	conn, err := db.SQL.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "SELECT id FROM workspaces WHERE id = $1 FOR "+mode, workspaceID.String()); err != nil {
		t.Fatal(err)
	}
	h := &heldWorkspace{conn: conn}
	t.Cleanup(h.release)
	return h
}

func (h *heldWorkspace) release() {
	if h.conn == nil {
		return
	}
	_, _ = h.conn.ExecContext(context.Background(), "ROLLBACK")
	h.conn.Close()
	h.conn = nil
}

// started runs write in a goroutine; its error arrives on the channel.
func started(write func() error) <-chan error {
	done := make(chan error, 1)
	go func() { done <- write() }()
	return done
}

// finished waits for a started write, failing t if it errs or is still
// blocked after lockGuard.
func finished(t *testing.T, what string, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(lockGuard):
		t.Fatalf("%s is still blocked after %s", what, lockGuard)
	}
}

// blockedOnLock waits until another session of the database waits for a
// lock (the write under test, since the holder does not wait), failing t
// if the write finishes first or nothing waits within lockGuard.
func blockedOnLock(t *testing.T, db *database.DB, what string, done <-chan error) {
	t.Helper()
	deadline := time.Now().Add(lockGuard)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			t.Fatalf("%s finished (err %v) while it should wait for the workspace lock", what, err)
		default:
		}
		var waiting int
		if err := db.SQL.QueryRow(`SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s never waited for a lock", what)
}

// rowLocked reports whether another transaction holds the procedure's row.
func rowLocked(t *testing.T, db *database.DB, id fmt.Stringer) bool {
	t.Helper()
	tx, err := db.SQL.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	_, err = tx.Exec("SELECT id FROM procedures WHERE id = $1 FOR UPDATE NOWAIT", id.String())
	var pqErr *pq.Error
	if errors.As(err, &pqErr) && pqErr.Code == "55P03" { // lock_not_available
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return false
}

// TestFieldUpdatesShareTheWorkspaceLock pins, on PostgreSQL, how an update
// of a procedure's fields takes its workspace's lock: it goes ahead beside
// another field update in flight, waits for an exclusive write, and waits
// for another field update's version bump only once it has updated its own
// row, holding that row; an exclusive write waits for a field update in
// flight.
func TestFieldUpdatesShareTheWorkspaceLock(t *testing.T) {
	dbtest.NeedPostgres(t)
	db := dbtest.Open(t, "postgres")
	f := setup(t, db, "SHRD")
	f.svc = postgresService(db)
	p1 := f.newProcedure(t, "first", "TODO", f.project)
	p2 := f.newProcedure(t, "second", "TODO", f.project)
	ws := f.boot.Workspace.ID
	prioritise := func(id, priority string) func() error {
		return func() error {
			_, err := f.svc.UpdateProcedure(f.admin, id, core.UpdateProcedureInput{Priority: core.Some(priority)})
			return err
		}
	}

	t.Run("beside a field update in flight", func(t *testing.T) {
		h := holdWorkspace(t, db, ws, "KEY SHARE")
		finished(t, "a field update", started(prioritise(p1.ID.String(), "HIGH")))
		move := started(func() error {
			_, err := f.svc.MoveProcedure(f.admin, p2.ID.String(), strp("IN_PROGRESS"), nil, nil)
			return err
		})
		blockedOnLock(t, db, "a move", move)
		h.release()
		finished(t, "the move", move)
	})

	t.Run("behind an exclusive write", func(t *testing.T) {
		h := holdWorkspace(t, db, ws, "UPDATE")
		update := started(prioritise(p1.ID.String(), "LOW"))
		blockedOnLock(t, db, "a field update", update)
		if rowLocked(t, db, p1.ID) {
			t.Error("a field update waiting for an exclusive write already holds its procedure's row")
		}
		h.release()
		finished(t, "the field update", update)
	})

	t.Run("behind another field update's bump", func(t *testing.T) {
		before, err := db.Client.Workspace.Get(sys(), ws)
		if err != nil {
			t.Fatal(err)
		}
		h := holdWorkspace(t, db, ws, "NO KEY UPDATE")
		update := started(prioritise(p1.ID.String(), "MEDIUM"))
		blockedOnLock(t, db, "a field update", update)
		if !rowLocked(t, db, p1.ID) {
			t.Error("a field update waiting for the version bump does not hold its procedure's row")
		}
		h.release()
		finished(t, "the field update", update)
		after, err := db.Client.Workspace.Get(sys(), ws)
		if err != nil {
			t.Fatal(err)
		}
		if after.Version != before.Version+1 {
			t.Errorf("version %d → %d; a field update bumps it once", before.Version, after.Version)
		}
	})
}

// TestConcurrentMixedWrites runs field updates (under the shared lock) and
// exclusive writes of the same few procedures at once, on both databases:
// every write succeeds (no deadlock, no serialization failure), each bumps
// the workspace's version exactly once, and the tallies match the rows.
func TestConcurrentMixedWrites(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db, "MIX")
		svc := f.svc
		if db.Dialect == dialect.Postgres {
			svc = postgresService(db) // field updates share the lock
		}
		var ids []string
		for i := range 6 {
			ids = append(ids, f.newProcedure(t, fmt.Sprintf("shared %d", i), "TODO", f.project).ID.String())
		}
		ws := f.boot.Workspace.ID
		start, err := db.Client.Workspace.Get(sys(), ws)
		if err != nil {
			t.Fatal(err)
		}
		priorities := []string{"LOW", "MEDIUM", "HIGH"}
		states := []string{"TODO", "IN_PROGRESS", "COMPLETED", "WAITING"}
		const writers, opsEach = 6, 25
		var wg sync.WaitGroup
		var mu sync.Mutex
		var written int64
		errs := make(chan error, writers)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), 7))
				for op := range opsEach {
					id := ids[rng.IntN(len(ids))]
					var err error
					switch k := rng.IntN(10); {
					case k < 4: // shared
						_, err = svc.UpdateProcedure(f.admin, id, core.UpdateProcedureInput{Priority: core.Some(priorities[rng.IntN(len(priorities))])})
					case k < 5: // shared, with a position of its own
						_, err = svc.UpdateProcedure(f.admin, id, core.UpdateProcedureInput{
							State: core.Some(states[rng.IntN(len(states))]), Position: core.Some(float64(rng.IntN(1000)) + 0.5)})
					case k < 6: // shared
						_, err = svc.UpdateProcedure(f.admin, id, core.UpdateProcedureInput{Name: core.Some(fmt.Sprintf("w%d op%d", w, op))})
					case k < 7: // exclusive: to the end of a column
						_, err = svc.UpdateProcedure(f.admin, id, core.UpdateProcedureInput{State: core.Some(states[rng.IntN(len(states))])})
					case k < 8: // exclusive
						_, err = svc.MoveProcedure(f.admin, id, strp(states[rng.IntN(len(states))]), nil, nil)
					case k < 9: // exclusive
						_, err = svc.AddComment(f.admin, id, "note")
					default: // exclusive, numbering
						_, err = svc.CreateProcedure(f.admin, f.input(fmt.Sprintf("new w%d op%d", w, op), "TODO", f.project))
					}
					if err != nil {
						errs <- fmt.Errorf("writer %d op %d: %w", w, op, err)
						return
					}
					mu.Lock()
					written++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		end, err := db.Client.Workspace.Get(sys(), ws)
		if err != nil {
			t.Fatal(err)
		}
		if end.Version-start.Version != written {
			t.Errorf("version moved by %d over %d committed writes", end.Version-start.Version, written)
		}
		kept := tallies(t, db, ws)
		if err := core.RebuildTallies(sys(), db.Client, ws); err != nil {
			t.Fatal(err)
		}
		if counted := tallies(t, db, ws); fmt.Sprint(kept) != fmt.Sprint(counted) {
			t.Errorf("tallies kept by the writes %v; counted from the rows %v", kept, counted)
		}
	})
}

// tallies reads the workspace's tally rows as key → count.
func tallies(t *testing.T, db *database.DB, ws uuid.UUID) map[string]int64 {
	t.Helper()
	rows, err := db.Client.ProcedureTally.Query().Where(proceduretally.WorkspaceID(ws)).All(sys())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, r := range rows {
		out[r.Key] = r.Count
	}
	return out
}

// TestFieldUpdateStatementsOnPostgres pins a field update's statements on
// PostgreSQL with its announcer: the shared workspace lock, the procedure
// read (locking its row, with the acting member), its UPDATE, and one
// statement for the version bump, the tallies and the notification — the
// only statement it runs while it holds the workspace exclusively. The
// statement keeps the tallies exact and bumps the version once, whether the
// update changes a tally or not.
func TestFieldUpdateStatementsOnPostgres(t *testing.T) {
	dbtest.NeedPostgres(t)
	db := dbtest.Open(t, "postgres")
	f := setup(t, db, "PGST")
	l := &txLog{}
	client := ent.NewClient(ent.Driver(dialect.DebugWithContext(db.Driver(), l.log)))
	svc := core.New(client, core.WithClock(func() time.Time { return clock }), core.WithAnnouncer(events.NewPostgresAnnouncer(nil)))
	p := f.newProcedure(t, "counted", "TODO", f.project)
	ws := f.boot.Workspace.ID
	want := []*regexp.Regexp{
		regexp.MustCompile(`^SELECT .* FROM "workspaces" WHERE .* FOR KEY SHARE`),
		regexp.MustCompile(`^SELECT .* FROM "procedures" WHERE .* FOR NO KEY UPDATE`),
		regexp.MustCompile(`^UPDATE "procedures" SET `),
		regexp.MustCompile(`^WITH "bumped" AS \(UPDATE "workspaces" SET "version" = .*"tallied" AS \(UPDATE "procedure_tallies" .*pg_notify\(`),
	}
	for _, in := range []core.UpdateProcedureInput{
		{Priority: core.Some("HIGH")},
		{Name: core.Some("renamed")}, // no tally changes
	} {
		before, err := db.Client.Workspace.Get(sys(), ws)
		if err != nil {
			t.Fatal(err)
		}
		stmts := counted(t, l, func() error {
			_, err := svc.UpdateProcedure(f.admin, p.ShortID, in)
			return err
		})
		if in.Name.Set {
			want[3] = regexp.MustCompile(`^WITH "bumped" AS \(UPDATE "workspaces" SET "version" = .*\) SELECT .*pg_notify\(`)
		}
		if len(stmts) != len(want) {
			t.Fatalf("%+v ran %d statements; want %d:%s", in, len(stmts), len(want), short(stmts))
		}
		for i, re := range want {
			if !re.MatchString(stmts[i]) {
				t.Errorf("%+v: statement %d is %.200s; want %s", in, i, stmts[i], re)
			}
		}
		after, err := db.Client.Workspace.Get(sys(), ws)
		if err != nil {
			t.Fatal(err)
		}
		if after.Version != before.Version+1 {
			t.Errorf("%+v: version %d → %d; want one bump", in, before.Version, after.Version)
		}
		kept := tallies(t, db, ws)
		if err := core.RebuildTallies(sys(), db.Client, ws); err != nil {
			t.Fatal(err)
		}
		if counted := tallies(t, db, ws); fmt.Sprint(kept) != fmt.Sprint(counted) {
			t.Errorf("%+v: tallies kept %v; counted from the rows %v", in, kept, counted)
		}
	}
}
