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
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/events"
	"github.com/procsvc/procsvc/internal/viewer"
)

// postgresService is a Service wired as the server is on PostgreSQL: its
// announcer, and field updates sharing the workspace lock.
func postgresService(db *database.DB) *core.Service {
	return core.New(db.Client, core.WithClock(func() time.Time { return clock }), core.WithAnnouncer(events.NewPostgresAnnouncer(nil)),
		core.WithLockPolicy(core.SharedFieldUpdates))
}

// lockGuard bounds every wait of these tests: reaching it is a failure (a
// write that should have gone ahead is blocked, or one that should block
// never reached its lock), never a pass.
const lockGuard = 20 * time.Second

// heldWorkspace is a transaction of another session holding what a write
// of procsvc in flight holds on PostgreSQL: the workspace's advisory lock
// shared (a field update before its bump) or exclusive (any other write),
// or the workspace's row (a field update's bump).
type heldWorkspace struct{ conn *sql.Conn }

// The ways heldWorkspace holds a workspace.
const (
	holdShared    = "SELECT pg_advisory_xact_lock_shared($1)"
	holdExclusive = "SELECT pg_advisory_xact_lock($1)"
	holdBump      = "SELECT id FROM workspaces WHERE id = $1 FOR NO KEY UPDATE"
)

func holdWorkspace(t *testing.T, db *database.DB, workspaceID uuid.UUID, hold string) *heldWorkspace {
	t.Helper()
	ctx := context.Background()
	conn, err := db.SQL.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	var arg any = database.WorkspaceLockKey(workspaceID)
	if hold == holdBump {
		arg = workspaceID.String()
	}
	if _, err := conn.ExecContext(ctx, hold, arg); err != nil {
		t.Fatal(err)
	}
	h := &heldWorkspace{conn: conn}
	t.Cleanup(h.release)
	return h
}

// commit runs stmt in the holding transaction, then commits it.
func (h *heldWorkspace) commit(t *testing.T, stmt string, args ...any) {
	t.Helper()
	ctx := context.Background()
	if _, err := h.conn.ExecContext(ctx, stmt, args...); err != nil {
		t.Fatal(err)
	}
	if _, err := h.conn.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	h.conn.Close()
	h.conn = nil
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
	waitersOnLock(t, db, 1, what, done)
}

// waitersOnLock waits until n sessions of the database wait for a lock,
// failing t if the write done reports finishes first or fewer wait within
// lockGuard.
func waitersOnLock(t *testing.T, db *database.DB, n int, what string, done <-chan error) {
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
		if waiting >= n {
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
// flight, and a field update arriving after it waits behind it.
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
		h := holdWorkspace(t, db, ws, holdShared)
		finished(t, "a field update", started(prioritise(p1.ID.String(), "HIGH")))
		move := started(func() error {
			_, err := f.svc.MoveProcedure(f.admin, p2.ID.String(), strp("IN_PROGRESS"), nil, nil)
			return err
		})
		blockedOnLock(t, db, "a move", move)
		// A field update arriving now queues behind the move, not beside
		// the one in flight: a stream of them cannot starve the move.
		var granted bool
		if err := db.SQL.QueryRow("SELECT pg_try_advisory_lock_shared($1)", database.WorkspaceLockKey(ws)).Scan(&granted); err != nil {
			t.Fatal(err)
		}
		if granted {
			t.Error("a shared lock was granted past a waiting exclusive write")
			if _, err := db.SQL.Exec("SELECT pg_advisory_unlock_shared($1)", database.WorkspaceLockKey(ws)); err != nil {
				t.Fatal(err)
			}
		}
		late := started(prioritise(p1.ID.String(), "LOW"))
		waitersOnLock(t, db, 2, "a field update behind a waiting move", late)
		h.release()
		finished(t, "the move", move)
		finished(t, "the field update behind it", late)
	})

	t.Run("behind an exclusive write", func(t *testing.T) {
		h := holdWorkspace(t, db, ws, holdExclusive)
		update := started(prioritise(p1.ID.String(), "LOW"))
		blockedOnLock(t, db, "a field update", update)
		if rowLocked(t, db, p1.ID) {
			t.Error("a field update waiting for an exclusive write already holds its procedure's row")
		}
		h.release()
		finished(t, "the field update", update)
	})

	t.Run("behind another field update's bump", func(t *testing.T) {
		before := f.version(t)
		h := holdWorkspace(t, db, ws, holdBump)
		update := started(prioritise(p1.ID.String(), "MEDIUM"))
		blockedOnLock(t, db, "a field update", update)
		if !rowLocked(t, db, p1.ID) {
			t.Error("a field update waiting for the version bump does not hold its procedure's row")
		}
		h.release()
		finished(t, "the field update", update)
		after := f.version(t)
		if after != before+1 {
			t.Errorf("version %d → %d; a field update bumps it once", before, after)
		}
	})
}

// TestFieldUpdateSeesAccessChangedWhileItWaits: a field update blocked on
// its workspace's lock while an exclusive write removes its member,
// revokes its token or demotes its member, and commits, is refused as that
// write left the member (disconnected, disconnected, forbidden) and writes
// nothing. Its member is re-read by the statement after the lock, whose
// snapshot follows the wait.
func TestFieldUpdateSeesAccessChangedWhileItWaits(t *testing.T) {
	dbtest.NeedPostgres(t)
	db := dbtest.Open(t, "postgres")
	f := setup(t, db, "ACCW")
	f.svc = postgresService(db)
	p := f.newProcedure(t, "guarded", "TODO", f.project)
	ws := f.boot.Workspace.ID
	cases := []struct {
		name   string
		change func(m *ent.Member, token uuid.UUID) (string, []any)
		want   apperr.Code
	}{
		{"member removed", func(m *ent.Member, _ uuid.UUID) (string, []any) {
			return "UPDATE members SET removed_at = now() WHERE id = $1", []any{m.ID.String()}
		}, apperr.Disconnected},
		{"token revoked", func(_ *ent.Member, token uuid.UUID) (string, []any) {
			return "UPDATE tokens SET revoked_at = now() WHERE id = $1", []any{token.String()}
		}, apperr.Disconnected},
		{"member demoted", func(m *ent.Member, _ uuid.UUID) (string, []any) {
			return "UPDATE members SET role = 'VIEWER' WHERE id = $1", []any{m.ID.String()}
		}, apperr.Forbidden},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, m := f.as(t, viewer.RoleMember)
			token := uuid.New()
			if _, err := db.Client.Token.Create().SetID(token).SetWorkspaceID(ws).SetMemberID(m.ID).
				SetName("t").SetSecretHash(uuid.NewString()).Save(sys()); err != nil {
				t.Fatal(err)
			}
			v := *viewer.FromContext(ctx)
			v.TokenID = token
			ctx = viewer.NewContext(context.Background(), &v)
			before, err := db.Client.Procedure.Get(sys(), p.ID)
			if err != nil {
				t.Fatal(err)
			}
			h := holdWorkspace(t, db, ws, holdExclusive)
			update := started(func() error {
				_, err := f.svc.UpdateProcedure(ctx, p.ID.String(), core.UpdateProcedureInput{Name: core.Some("changed by " + c.name)})
				return err
			})
			blockedOnLock(t, db, "a field update", update)
			stmt, args := c.change(m, token)
			h.commit(t, stmt, args...)
			select {
			case err := <-update:
				wantCode(t, err, c.want)
			case <-time.After(lockGuard):
				t.Fatal("the field update is still blocked")
			}
			after, err := db.Client.Procedure.Get(sys(), p.ID)
			if err != nil {
				t.Fatal(err)
			}
			if after.Name != before.Name || !after.UpdatedAt.Equal(before.UpdatedAt) {
				t.Errorf("the refused update wrote: %q at %s", after.Name, after.UpdatedAt)
			}
		})
	}
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
		start := f.version(t)
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
		end := f.version(t)
		if end-start != written {
			t.Errorf("version moved by %d over %d committed writes", end-start, written)
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
// statement for the version bump, the change log, the tallies and the notification — the
// only statement it runs while it holds the workspace exclusively. The
// statement keeps the tallies exact and bumps the version once, whether the
// update changes a tally or not.
func TestFieldUpdateStatementsOnPostgres(t *testing.T) {
	dbtest.NeedPostgres(t)
	db := dbtest.Open(t, "postgres")
	f := setup(t, db, "PGST")
	l := &txLog{}
	client := ent.NewClient(ent.Driver(dialect.DebugWithContext(db.Driver(), l.log)))
	svc := core.New(client, core.WithClock(func() time.Time { return clock }), core.WithAnnouncer(events.NewPostgresAnnouncer(nil)),
		core.WithLockPolicy(core.SharedFieldUpdates))
	p := f.newProcedure(t, "counted", "TODO", f.project)
	ws := f.boot.Workspace.ID
	want := []*regexp.Regexp{
		regexp.MustCompile(`^SELECT "workspaces"."id", \(pg_advisory_xact_lock_shared\(\$1\)\) AS "locked" FROM "workspaces" WHERE `),
		regexp.MustCompile(`^SELECT .* FROM "procedures" WHERE .* FOR NO KEY UPDATE`),
		regexp.MustCompile(`^UPDATE "procedures" SET `),
		regexp.MustCompile(`^WITH "bumped" AS \(UPDATE "workspaces" SET "version" = .*"logged" AS \(INSERT INTO "events" .*"tallied" AS \(UPDATE "procedure_tallies" .*pg_notify\(`),
	}
	for _, in := range []core.UpdateProcedureInput{
		{Priority: core.Some("HIGH")},
		{Name: core.Some("renamed")}, // no tally changes
	} {
		before := f.version(t)
		stmts := counted(t, l, func() error {
			_, err := svc.UpdateProcedure(f.admin, p.ShortID, in)
			return err
		})
		if in.Name.Set {
			want[3] = regexp.MustCompile(`^WITH "bumped" AS \(UPDATE "workspaces" SET "version" = .*"logged" AS \(INSERT INTO "events" .*\) SELECT .*pg_notify\(`)
		}
		if len(stmts) != len(want) {
			t.Fatalf("%+v ran %d statements; want %d:%s", in, len(stmts), len(want), short(stmts))
		}
		for i, re := range want {
			if !re.MatchString(stmts[i]) {
				t.Errorf("%+v: statement %d is %.200s; want %s", in, i, stmts[i], re)
			}
		}
		after := f.version(t)
		if after != before+1 {
			t.Errorf("%+v: version %d → %d; want one bump", in, before, after)
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
