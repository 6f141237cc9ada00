package backup_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/lib/pq"
	_ "modernc.org/sqlite"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/backup"
	"github.com/procsvc/procsvc/internal/cli"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// TestBackupUnderWriteLoadIsTheSourceAtItsVersion is issue #36's done-when:
// a server is written to by several goroutines (procedures created and
// updated, comments added, through the core a served API uses) while the
// database is backed up (procsvc backup on SQLite, pg_dump on PostgreSQL);
// the backup is restored into a new database (procsvc restore,
// pg_restore), and every row of every table of the restored database
// equals the source's row at the backup's version. The source's state at
// that version is its final state with every later change-log event undone,
// newest first: a row created later removed, an updated field set back to
// the event's "before", and the state the log does not carry (updatedAt,
// comment counts, tallies, the workspace's counters) set back with it.
//
// It cannot pass vacuously: every workspace's backup version lies between
// the versions read just before the backup started and just after it
// ended, writes of each kind are on both sides of it, and writes committed
// before the backup started are in it (a copy of the main file without its
// WAL lacks them).
func TestBackupUnderWriteLoadIsTheSourceAtItsVersion(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) { backupUnderLoad(t, dialect) })
	}
}

func backupUnderLoad(t *testing.T, dialect string) {
	ctx := context.Background()
	dir := t.TempDir()
	sourceURL := "sqlite://" + filepath.Join(dir, "source.db")
	if dialect == "postgres" {
		sourceURL = dbtest.CreatePostgres(t)
	}
	db, err := database.Open(ctx, sourceURL, database.Options{Prepare: true, ProbeInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	srv := apitest.Start(t, db)
	workspaces := []*apitest.Workspace{srv.NewWorkspace(t, "Alpha", "ALP"), srv.NewWorkspace(t, "Beta", "BET")}

	load := startLoad(t, srv.Service, workspaces, 4)
	load.waitAll(t, load.warm)
	before := versions(t, db.SQL, dialect)

	var restoredURL string
	var restored *sql.DB
	if dialect == "sqlite" {
		file := filepath.Join(dir, "backup.db")
		out := procsvc(t, 0, "backup", "--database-url", sourceURL, "--to", file)
		after := versions(t, db.SQL, dialect)
		load.backupDone()
		restoredURL = "sqlite://" + filepath.Join(dir, "restored.db")
		procsvc(t, 0, "restore", "--from", file, "--database-url", restoredURL)
		restored = openSQL(t, "sqlite", filepath.Join(dir, "restored.db"))
		checkPrinted(t, out, versions(t, restored, dialect))
		checkBetween(t, before, versions(t, restored, dialect), after)
	} else {
		file := filepath.Join(dir, "backup.pgdump")
		pgTool(t, "pg_dump", backup.PostgresDumpArgs(sourceURL, file)...)
		after := versions(t, db.SQL, dialect)
		load.backupDone()
		restoredURL = dbtest.CreatePostgres(t)
		pgTool(t, "pg_restore", backup.PostgresRestoreArgs(file, restoredURL)...)
		restored = openSQL(t, "postgres", restoredURL)
		// The dump carries the migration records: nothing to apply.
		if out := procsvc(t, 0, "migrate", "--database-url", restoredURL); !strings.Contains(out, "(0 applied now)") {
			t.Fatalf("migrate after pg_restore:\n%s", out)
		}
		checkBetween(t, before, versions(t, restored, dialect), after)
	}
	load.waitAll(t, load.post)
	load.stop(t)

	at := versions(t, restored, dialect)
	source := dumpAll(t, db.SQL, dialect)
	backupRows := dumpAll(t, restored, dialect)
	undone := undoAfter(t, source, at, load.updatedAts())
	for _, kind := range []string{"procedure.created", "procedure.updated", "comment.created"} {
		for ws, v := range at {
			if undone.kinds[ws+" "+kind] == 0 {
				t.Errorf("workspace %s: no %s after the backup's version %d: the load did not write across the backup", ws, kind, v)
			}
			if countEvents(backupRows, ws, kind) == 0 {
				t.Errorf("workspace %s: no %s in the backup: the load did not write before it", ws, kind)
			}
		}
	}
	t.Logf("%s: backup at versions %v (before %v); %d later events undone", dialect, at, before, undone.n)
	compareTables(t, source, backupRows)
}

// procsvc runs the procsvc command line and fails t unless it exits code.
func procsvc(t *testing.T, code int, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	env := cli.Env{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}
	if got := cli.Run(context.Background(), args, env); got != code {
		t.Fatalf("procsvc %s: exit %d, want %d\n%s%s", strings.Join(args, " "), got, code, out.String(), errOut.String())
	}
	return out.String()
}

// pgTool runs pg_dump or pg_restore with args, the commands
// docs/operations.md gives.
func pgTool(t *testing.T, name string, args ...string) {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		path = "/usr/bin/" + name
	}
	out, err := exec.Command(path, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func openSQL(t *testing.T, driver, dsn string) *sql.DB {
	t.Helper()
	if driver == "sqlite" {
		dsn = "file:" + dsn + "?mode=ro"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// versions reads every workspace's version.
func versions(t *testing.T, db *sql.DB, dialect string) map[string]int64 {
	t.Helper()
	rows, err := db.Query("SELECT id, version FROM workspaces")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var id any
		var v int64
		if err := rows.Scan(&id, &v); err != nil {
			t.Fatal(err)
		}
		out[text(id)] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkBetween: each workspace's backup version is at least its version
// before the backup started and at most its version after it ended.
func checkBetween(t *testing.T, before, at, after map[string]int64) {
	t.Helper()
	if len(at) != len(before) || len(at) == 0 {
		t.Fatalf("backup holds workspaces %v, the source held %v", at, before)
	}
	for ws, v := range at {
		if v < before[ws] || v > after[ws] {
			t.Fatalf("workspace %s: backup at version %d, outside [%d, %d], the versions before and after it", ws, v, before[ws], after[ws])
		}
	}
}

// checkPrinted: procsvc backup printed each workspace's version in the
// backup, and its newest event.
func checkPrinted(t *testing.T, out string, at map[string]int64) {
	t.Helper()
	for ws, v := range at {
		// Every write of the load logs an event: the newest event is the
		// version.
		n := strconv.FormatInt(v, 10)
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(ws) + `\s+\S+\s+` + n + `\s+` + n + `\s`).MatchString(out) {
			t.Fatalf("procsvc backup did not print workspace %s at version %d, its newest event %d:\n%s", ws, v, v, out)
		}
	}
}

// load is the write load: writers acting as their workspace's admin.
type load struct {
	cancel    context.CancelFunc
	done      sync.WaitGroup
	warm      []chan struct{} // closed by writer i after its first iterations
	post      []chan struct{} // closed by writer i after iterations begun after the backup
	after     chan struct{}   // closed when the backup has ended
	errs      chan error
	updated   []map[string][]time.Time
	iteration atomic.Int64
}

// iterationsEachSide is how many iterations each writer completes before
// the backup starts, and begins after it ends.
const iterationsEachSide = 6

func startLoad(t *testing.T, svc *core.Service, workspaces []*apitest.Workspace, writers int) *load {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{cancel: cancel, after: make(chan struct{}), errs: make(chan error, writers)}
	for i := range writers {
		w := workspaces[i%len(workspaces)]
		actx, err := svc.ActAsAdmin(ctx, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		warm, post := make(chan struct{}), make(chan struct{})
		updated := map[string][]time.Time{}
		l.warm, l.post, l.updated = append(l.warm, warm), append(l.post, post), append(l.updated, updated)
		l.done.Add(1)
		go func() {
			defer l.done.Done()
			var warmOnce, postOnce sync.Once
			defer warmOnce.Do(func() { close(warm) })
			defer postOnce.Do(func() { close(post) })
			if err := l.write(actx, svc, w, i, updated, func(n, sinceBackup int) {
				if n == iterationsEachSide {
					warmOnce.Do(func() { close(warm) })
				}
				if sinceBackup == iterationsEachSide {
					postOnce.Do(func() { close(post) })
				}
			}); err != nil && ctx.Err() == nil {
				l.errs <- err
			}
		}()
	}
	t.Cleanup(func() { l.cancel(); l.done.Wait() })
	return l
}

// write runs one writer until ctx ends: each iteration creates a
// procedure, renames it, changes the state or priority of one of the
// writer's procedures and comments on another. Each writer updates only its
// own procedures, so it knows the updatedAt each of its writes stored, in
// order.
func (l *load) write(ctx context.Context, svc *core.Service, w *apitest.Workspace, writer int, updated map[string][]time.Time, progress func(n, sinceBackup int)) error {
	rng := rand.New(rand.NewPCG(uint64(writer), 36))
	states := []string{"TODO", "IN_PROGRESS", "COMPLETED", "WAITING"}
	priorities := []string{"LOW", "MEDIUM", "HIGH"}
	var mine []string
	sinceBackup := -1
	for n := 1; ctx.Err() == nil; n++ {
		if sinceBackup < 0 {
			select {
			case <-l.after:
				sinceBackup = 0
			default:
			}
		}
		due := time.Date(2027, 1, 1+n%28, 12, 0, 0, 0, time.UTC)
		p, err := svc.CreateProcedure(ctx, core.CreateProcedureInput{
			Name: fmt.Sprintf("w%d procedure %d", writer, n), Priority: priorities[rng.IntN(3)], State: states[rng.IntN(4)],
			DueAt: &due, ProjectID: w.ProjectID, CategoryID: w.CategoryID, DoerID: w.MemberID, Content: "steps",
		})
		if err != nil {
			return fmt.Errorf("writer %d: create: %w", writer, err)
		}
		id := p.ID.String()
		mine = append(mine, id)
		updated[id] = append(updated[id], p.UpdatedAt)
		if p, err = svc.UpdateProcedure(ctx, id, core.UpdateProcedureInput{Name: core.Some(fmt.Sprintf("w%d procedure %d renamed", writer, n))}); err != nil {
			return fmt.Errorf("writer %d: rename: %w", writer, err)
		}
		updated[id] = append(updated[id], p.UpdatedAt)
		other := mine[rng.IntN(len(mine))]
		change := core.UpdateProcedureInput{Priority: core.Some(priorities[rng.IntN(3)])}
		if rng.IntN(2) == 0 {
			change = core.UpdateProcedureInput{State: core.Some(states[rng.IntN(4)])}
		}
		if p, err = svc.UpdateProcedure(ctx, other, change); err != nil {
			return fmt.Errorf("writer %d: update: %w", writer, err)
		}
		updated[other] = append(updated[other], p.UpdatedAt)
		if _, err := svc.AddComment(ctx, mine[rng.IntN(len(mine))], fmt.Sprintf("comment %d of writer %d", n, writer)); err != nil {
			return fmt.Errorf("writer %d: comment: %w", writer, err)
		}
		l.iteration.Add(1)
		if sinceBackup >= 0 {
			sinceBackup++
		}
		progress(n, sinceBackup)
	}
	return nil
}

// waitAll waits until every channel is closed, failing t on a writer's
// error.
func (l *load) waitAll(t *testing.T, chans []chan struct{}) {
	t.Helper()
	for _, c := range chans {
		select {
		case <-c:
		case err := <-l.errs:
			t.Fatal(err)
		}
	}
}

func (l *load) backupDone() { close(l.after) }

// stop ends the load and waits for its writers.
func (l *load) stop(t *testing.T) {
	t.Helper()
	l.cancel()
	l.done.Wait()
	select {
	case err := <-l.errs:
		t.Fatal(err)
	default:
	}
}

// updatedAts merges the writers' records: each procedure's updatedAt after
// each of its writes, in order.
func (l *load) updatedAts() map[string][]time.Time {
	out := map[string][]time.Time{}
	for _, m := range l.updated {
		for id, ts := range m {
			out[id] = ts
		}
	}
	return out
}

// row is a row as text, by column; rows is a table's rows by key.
type (
	row  map[string]string
	rows map[string]row
)

// dumpAll reads every row of every table of db.
func dumpAll(t *testing.T, db *sql.DB, dialect string) map[string]rows {
	t.Helper()
	q := "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
	if dialect == "postgres" {
		q = "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'"
	}
	var tables []string
	trows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	for trows.Next() {
		var n string
		if err := trows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	trows.Close()
	out := map[string]rows{}
	for _, table := range tables {
		out[table] = dumpTable(t, db, table)
	}
	return out
}

func dumpTable(t *testing.T, db *sql.DB, table string) rows {
	t.Helper()
	r, err := db.Query(`SELECT * FROM "` + table + `"`)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cols, err := r.Columns()
	if err != nil {
		t.Fatal(err)
	}
	out := rows{}
	for r.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := r.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		rw := row{}
		for i, c := range cols {
			rw[c] = text(vals[i])
		}
		out[rowKey(table, rw)] = rw
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// rowKey names a row: its id, or for a tally its workspace and key (a
// tally made after the backup gets an id the backup never had).
func rowKey(table string, r row) string {
	if table == "procedure_tallies" {
		return r["workspace_id"] + " " + r["key"]
	}
	if id, ok := r["id"]; ok {
		return id
	}
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + r[k] + ";")
	}
	return b.String()
}

// text renders a column's value so that equal values of one dialect read
// the same: times in UTC to the microsecond (what both databases keep).
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		return string(x)
	case string:
		return x
	case time.Time:
		return x.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case int64:
		return strconv.FormatInt(x, 10)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}

// jsonText renders a logged value (core.FieldChange's before or after) as
// text renders the column.
func jsonText(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("logged value %s: %v", raw, err)
	}
	return text(v)
}

// undone is what undoAfter undid.
type undone struct {
	n     int
	kinds map[string]int // "WORKSPACE KIND"
}

// columnOf maps the fields the load changes to their columns.
var columnOf = map[string]string{"name": "name", "state": "state", "priority": "priority", "position": "position"}

// undoAfter turns db, the source's final rows, into its rows at the
// versions at (by workspace): every event of a workspace above its version
// is undone, newest first. updatedAt is each procedure's updatedAt after
// each of its writes (the load's record: the log does not carry it).
func undoAfter(t *testing.T, db map[string]rows, at map[string]int64, updatedAt map[string][]time.Time) undone {
	t.Helper()
	var later []row
	for _, ev := range db["events"] {
		v, _ := strconv.ParseInt(ev["version"], 10, 64)
		if v > at[ev["workspace_id"]] {
			later = append(later, ev)
		}
	}
	version := func(r row) int64 { v, _ := strconv.ParseInt(r["version"], 10, 64); return v }
	slices.SortFunc(later, func(a, b row) int { return int(version(b) - version(a)) })
	add := func(r row, col string, d int64) {
		n, err := strconv.ParseInt(r[col], 10, 64)
		if err != nil {
			t.Fatalf("%s of %v: %v", col, r, err)
		}
		r[col] = strconv.FormatInt(n+d, 10)
	}
	tally := func(ws, key string, d int64) {
		r, ok := db["procedure_tallies"][ws+" "+key]
		if !ok {
			t.Fatalf("no tally %s of workspace %s to undo", key, ws)
		}
		add(r, "count", d)
	}
	done := undone{kinds: map[string]int{}}
	for _, ev := range later {
		wsID, entity, v := ev["workspace_id"], ev["entity_id"], version(ev)
		ws := db["workspaces"][wsID]
		if ws["version"] != strconv.FormatInt(v, 10) {
			t.Fatalf("undoing event %d of workspace %s, whose version is then %s", v, wsID, ws["version"])
		}
		var changes []core.FieldChange
		if err := json.Unmarshal([]byte(ev["changes"]), &changes); err != nil {
			t.Fatalf("event %d: changes %s: %v", v, ev["changes"], err)
		}
		switch ev["kind"] {
		case "procedure.created":
			p := db["procedures"][entity]
			if p == nil {
				t.Fatalf("event %d created procedure %s, absent from the source", v, entity)
			}
			if p["number"] != ws["procedure_seq"] {
				t.Fatalf("procedure %s has number %s, the workspace's last is %s", entity, p["number"], ws["procedure_seq"])
			}
			add(ws, "procedure_seq", -1)
			for _, key := range []string{"all", "state:" + p["state"], "priority:" + p["priority"], "project:" + p["project_id"], "category:" + p["category_id"], "doer:" + p["doer_id"]} {
				tally(wsID, key, -1)
			}
			if n := len(updatedAt[entity]); n != 1 {
				t.Fatalf("procedure %s: %d writes recorded left when undoing its creation", entity, n)
			}
			if text(updatedAt[entity][0]) != p["updated_at"] {
				t.Fatalf("procedure %s: updated_at %s, its creation stored %s", entity, p["updated_at"], text(updatedAt[entity][0]))
			}
			delete(db["procedures"], entity)
		case "procedure.updated", "procedure.moved":
			p := db["procedures"][entity]
			if p == nil {
				t.Fatalf("event %d updated procedure %s, absent", v, entity)
			}
			for _, c := range changes {
				col, ok := columnOf[c.Field]
				if !ok {
					t.Fatalf("event %d changed %s, which the load never changes", v, c.Field)
				}
				if got := jsonText(t, c.After); p[col] != got {
					t.Fatalf("procedure %s: %s is %s, event %d logged it became %s", entity, col, p[col], v, got)
				}
				before := jsonText(t, c.Before)
				if col == "state" || col == "priority" {
					tally(wsID, col+":"+p[col], -1)
					tally(wsID, col+":"+before, +1)
				}
				p[col] = before
			}
			ts := updatedAt[entity]
			if len(ts) < 2 || text(ts[len(ts)-1]) != p["updated_at"] {
				t.Fatalf("procedure %s: updated_at %s is not the last write's recorded (%v)", entity, p["updated_at"], ts)
			}
			updatedAt[entity] = ts[:len(ts)-1]
			p["updated_at"] = text(ts[len(ts)-2])
		case "comment.created":
			c := db["comments"][entity]
			if c == nil {
				t.Fatalf("event %d created comment %s, absent", v, entity)
			}
			add(db["procedures"][c["procedure_id"]], "comment_count", -1)
			delete(db["comments"], entity)
		default:
			t.Fatalf("event %d is a %s, which the load never writes", v, ev["kind"])
		}
		ws["version"] = strconv.FormatInt(v-1, 10)
		delete(db["events"], ev["id"])
		done.n++
		done.kinds[wsID+" "+ev["kind"]]++
	}
	for ws, v := range at {
		if got := db["workspaces"][ws]["version"]; got != strconv.FormatInt(v, 10) {
			t.Fatalf("workspace %s: version %s after the undo, want the backup's %d", ws, got, v)
		}
	}
	return done
}

// countEvents counts a workspace's events of kind in db.
func countEvents(db map[string]rows, ws, kind string) int {
	n := 0
	for _, ev := range db["events"] {
		if ev["workspace_id"] == ws && ev["kind"] == kind {
			n++
		}
	}
	return n
}

// compareTables fails t unless want and got hold the same tables with the
// same rows. A tally at 0 is no tally: one a later write made, undone to
// 0, is absent from the backup.
func compareTables(t *testing.T, want, got map[string]rows) {
	t.Helper()
	for _, db := range []map[string]rows{want, got} {
		for key, r := range db["procedure_tallies"] {
			if r["count"] == "0" {
				delete(db["procedure_tallies"], key)
			}
		}
	}
	var names []string
	for name := range want {
		names = append(names, name)
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("the backup has a table %s the source has not", name)
		}
	}
	sort.Strings(names)
	diffs, compared := 0, 0
	for _, name := range names {
		w, g := want[name], got[name]
		if g == nil {
			t.Errorf("the backup lacks the table %s", name)
			continue
		}
		for key, wr := range w {
			compared++
			gr, ok := g[key]
			switch {
			case !ok:
				diffs++
				if diffs <= 10 {
					t.Errorf("%s: the backup lacks the row %s: %v", name, key, wr)
				}
			case fmt.Sprint(gr) != fmt.Sprint(wr):
				diffs++
				if diffs <= 10 {
					t.Errorf("%s row %s:\n backup %v\n source %v", name, key, gr, wr)
				}
			}
		}
		for key, gr := range g {
			if _, ok := w[key]; !ok {
				diffs++
				if diffs <= 10 {
					t.Errorf("%s: the backup has the row %s the source had not at its version: %v", name, key, gr)
				}
			}
		}
	}
	if diffs > 0 {
		t.Fatalf("%d rows differ (of %d)", diffs, compared)
	}
	t.Logf("%d rows of %d tables equal", compared, len(names))
}
