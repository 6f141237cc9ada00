package transfer

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/procsvc/procsvc/internal/database"
)

// The batch bounds' defaults and limits (procsvc copy --batch-rows,
// --batch-mb).
const (
	DefaultBatchRows  = 1000
	MaxBatchRows      = 50000
	DefaultBatchBytes = 16 << 20
	MaxBatchBytes     = 1 << 30
)

// maxParams bounds the arguments of one INSERT: under SQLite's 32766 and
// PostgreSQL's 65535. A batch of wide rows is written in several
// statements of its transaction.
var maxParams = 30000

// Options tune Copy and Verify.
type Options struct {
	// BatchRows and BatchBytes bound a batch: the rows read from the
	// source and written to the target in one transaction, and what they
	// hold in memory (a row larger than BatchBytes is a batch of its own).
	// 0: DefaultBatchRows, DefaultBatchBytes.
	BatchRows  int
	BatchBytes int64
	// Progress receives a line per table now and then, and when it is
	// done; nil: none.
	Progress io.Writer
	// ProgressEvery is the least time between two lines of a table (0:
	// two seconds).
	ProgressEvery time.Duration
	// AfterBatch, when set, is called after each batch is committed, with
	// its table and rows (tests interrupt the copy with it).
	AfterBatch func(table string, rows int)
}

func (o Options) withDefaults() Options {
	if o.BatchRows <= 0 {
		o.BatchRows = DefaultBatchRows
	}
	if o.BatchBytes <= 0 {
		o.BatchBytes = DefaultBatchBytes
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = 2 * time.Second
	}
	return o
}

// TableCopy is what Copy did to one table.
type TableCopy struct {
	Table string
	// Rows is the table's rows in the source; Resumed of them were in the
	// target already (an interrupted copy's), Copied were written now.
	Rows, Resumed, Copied int64
	Batches               int
}

// Result is what Copy did: a TableCopy per table, and the verification
// that followed.
type Result struct {
	Tables   []TableCopy
	Verify   Report
	Copying  time.Duration
	Verified time.Duration
}

// ErrOtherData is Copy's error when the target holds data that is not the
// source's (and not an interrupted copy of it): nothing is written.
type ErrOtherData struct{ Diff Diff }

func (e *ErrOtherData) Error() string {
	return "the target holds data that is not the source's, refusing to merge into it (copy into an empty database, or the one an interrupted copy of this source left): " + e.Diff.String()
}

// ErrSourceSchema: the source's schema is not this binary's.
var ErrSourceSchema = errors.New("the source's schema is not this binary's: run procsvc migrate on it first (on a copy of it, when it is a backup to keep)")

// Copy copies every table of the schema from src to dst, then verifies
// that dst holds exactly src's rows.
//
// The target is migrated first (PostgreSQL: the versioned migrations;
// SQLite: ent's migration). The source is read in one read transaction, a
// batch at a time in key order; each batch is written in one transaction
// of the target, so that the target holds, for each table, the source's
// rows up to some key: a copy interrupted and run again starts each table
// after the target's greatest key, once it has checked that the target's
// rows are exactly the source's up to it (ErrOtherData otherwise, before
// anything is written). The target's triggers are suspended inside each
// batch's transaction: every column is copied as the source holds it,
// those a trigger derives (a procedure's comment count) included.
func Copy(ctx context.Context, src, dst *database.DB, opts Options) (Result, error) {
	if schemaErr != nil {
		return Result{}, schemaErr
	}
	opts = opts.withDefaults()
	var res Result
	if err := checkSource(ctx, src); err != nil {
		return res, err
	}
	// A target holding a workspace the source lacks is refused before its
	// schema is touched.
	if err := foreignWorkspaces(ctx, src, dst); err != nil {
		return res, err
	}
	if err := migrateTarget(ctx, dst); err != nil {
		return res, fmt.Errorf("target: migrate: %w", err)
	}
	srcTx, err := readTx(ctx, src)
	if err != nil {
		return res, fmt.Errorf("source: %w", err)
	}
	defer srcTx.Rollback() //nolint:errcheck // read only
	start := time.Now()

	// Where each table resumes, and the proof that the target holds only
	// the source's rows up to there.
	resume := make([]any, len(schemaTables))
	resumed := make([]int64, len(schemaTables))
	for i, t := range schemaTables {
		if resume[i], err = maxKey(ctx, dst.SQL, t); err != nil {
			return res, fmt.Errorf("target: %w", err)
		}
		if resume[i] == nil {
			continue
		}
		rep, err := compareTable(ctx, [2]querier{srcTx, dst.SQL}, [2]string{src.Dialect, dst.Dialect}, t, resume[i], opts.BatchRows, opts.BatchBytes)
		if err != nil {
			return res, fmt.Errorf("check the target's %s: %w", t.name, err)
		}
		if len(rep.Diffs) > 0 {
			return res, &ErrOtherData{Diff: rep.Diffs[0]}
		}
		resumed[i] = rep.Rows[target]
	}

	for i, t := range schemaTables {
		tc, err := copyTable(ctx, srcTx, src.Dialect, dst, t, resume[i], resumed[i], opts)
		res.Tables = append(res.Tables, tc)
		if err != nil {
			return res, err
		}
	}
	if err := moveSequences(ctx, dst); err != nil {
		return res, fmt.Errorf("target: sequences: %w", err)
	}
	res.Copying = time.Since(start)
	start = time.Now()
	res.Verify, err = verifyWith(ctx, srcTx, src.Dialect, dst, opts)
	res.Verified = time.Since(start)
	return res, err
}

// checkSource makes sure that the source has this binary's schema, without
// changing it: its pending migrations (PostgreSQL), and every column of
// every table readable.
func checkSource(ctx context.Context, src *database.DB) error {
	if src.Dialect == postgres {
		pending, err := src.PendingMigrations(ctx)
		if err != nil {
			return fmt.Errorf("source: %w", err)
		}
		if len(pending) > 0 {
			return fmt.Errorf("%w (pending: %s)", ErrSourceSchema, strings.Join(pending, ", "))
		}
	}
	for _, t := range schemaTables {
		rs, err := src.SQL.QueryContext(ctx, "SELECT "+t.columnList()+" FROM "+quote(t.name)+" WHERE 1 = 0")
		if err != nil {
			return fmt.Errorf("%w (table %s: %v)", ErrSourceSchema, t.name, err)
		}
		rs.Close()
	}
	return nil
}

// foreignWorkspaces refuses a target that already holds a workspace the
// source does not (a database in use, not an interrupted copy of this
// source), reading only the workspaces' keys, which every schema
// version has.
func foreignWorkspaces(ctx context.Context, src, dst *database.DB) error {
	exists, err := tableExists(ctx, dst, workspacesTable)
	if err != nil || !exists {
		return err
	}
	var after any
	for {
		keys, err := readKeys(ctx, dst, workspacesTable, after, DefaultBatchRows)
		if err != nil {
			return fmt.Errorf("target: %w", err)
		}
		if len(keys) == 0 {
			return nil
		}
		for _, k := range keys {
			var one int
			err := src.SQL.QueryRowContext(ctx, "SELECT 1 FROM "+quote(workspacesTable)+" WHERE "+quote("id")+" = "+param(src.Dialect, 1), k).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				return &ErrOtherData{Diff: Diff{Table: workspacesTable, Workspace: k, Key: k, Reason: "in the target, not in the source"}}
			}
			if err != nil {
				return fmt.Errorf("source: %w", err)
			}
		}
		after = keys[len(keys)-1]
	}
}

func tableExists(ctx context.Context, db *database.DB, name string) (bool, error) {
	var q string
	if db.Dialect == postgres {
		q = "SELECT to_regclass($1) IS NOT NULL"
	} else {
		q = "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = ?"
	}
	var ok bool
	err := db.SQL.QueryRowContext(ctx, q, name).Scan(&ok)
	return ok, err
}

// readKeys reads a page of a uuid-keyed table's keys, as text.
func readKeys(ctx context.Context, db *database.DB, name string, after any, limit int) ([]string, error) {
	q := "SELECT " + quote("id") + " FROM " + quote(name)
	var args []any
	if after != nil {
		q += " WHERE " + quote("id") + " > " + param(db.Dialect, 1)
		args = append(args, after)
	}
	rs, err := db.SQL.QueryContext(ctx, q+" ORDER BY "+quote("id")+" LIMIT "+fmt.Sprint(limit), args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		var raw any
		if err := rs.Scan(&raw); err != nil {
			return nil, err
		}
		k, err := normalise(kindUUID, raw)
		if err != nil {
			return nil, err
		}
		out = append(out, k.(string))
	}
	return out, rs.Err()
}

// migrateTarget brings the target's schema up to date, as procsvc migrate
// does.
func migrateTarget(ctx context.Context, dst *database.DB) error {
	if dst.Dialect == postgres {
		_, err := dst.ApplyMigrations(ctx)
		return err
	}
	return dst.Migrate(ctx)
}

// maxKey is t's greatest key in db, nil when t is empty.
func maxKey(ctx context.Context, db querier, t *table) (any, error) {
	// Not max(): PostgreSQL before 16 has no max(uuid).
	key := quote(t.columns[t.key].name)
	rs, err := db.QueryContext(ctx, "SELECT "+key+" FROM "+quote(t.name)+" ORDER BY "+key+" DESC LIMIT 1")
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var raw any
	for rs.Next() {
		if err := rs.Scan(&raw); err != nil {
			return nil, err
		}
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	return normalise(t.columns[t.key].kind, raw)
}

func count(ctx context.Context, q querier, t *table) (int64, error) {
	var n int64
	rs, err := q.QueryContext(ctx, "SELECT count(*) FROM "+quote(t.name))
	if err != nil {
		return 0, err
	}
	defer rs.Close()
	for rs.Next() {
		if err := rs.Scan(&n); err != nil {
			return 0, err
		}
	}
	return n, rs.Err()
}

// copyTable copies t's rows with a key above after, a batch at a time.
func copyTable(ctx context.Context, srcTx *sql.Tx, srcDialect string, dst *database.DB, t *table, after any, resumed int64, opts Options) (TableCopy, error) {
	tc := TableCopy{Table: t.name, Resumed: resumed}
	var err error
	if tc.Rows, err = count(ctx, srcTx, t); err != nil {
		return tc, fmt.Errorf("source: count %s: %w", t.name, err)
	}
	triggers, err := targetTriggers(ctx, dst, t)
	if err != nil {
		return tc, fmt.Errorf("target: triggers of %s: %w", t.name, err)
	}
	started, last := time.Now(), time.Now()
	report := func(final bool) {
		if opts.Progress == nil {
			return
		}
		if final {
			fmt.Fprintf(opts.Progress, "copy: %s: %d/%d rows (done in %s)\n", t.name, resumed+tc.Copied, tc.Rows, time.Since(started).Round(time.Millisecond))
		} else if time.Since(last) >= opts.ProgressEvery {
			fmt.Fprintf(opts.Progress, "copy: %s: %d/%d rows\n", t.name, resumed+tc.Copied, tc.Rows)
			last = time.Now()
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return tc, err
		}
		batch, err := readPage(ctx, srcTx, srcDialect, t, after, nil, opts.BatchRows, opts.BatchBytes)
		if err != nil {
			return tc, fmt.Errorf("source: %w", err)
		}
		if len(batch) == 0 {
			break
		}
		if err := writeBatch(ctx, dst, t, batch, triggers); err != nil {
			return tc, fmt.Errorf("target: write %s after key %v: %w", t.name, after, err)
		}
		after = t.keyOf(batch[len(batch)-1])
		tc.Copied += int64(len(batch))
		tc.Batches++
		if opts.AfterBatch != nil {
			opts.AfterBatch(t.name, len(batch))
		}
		report(false)
	}
	report(true)
	return tc, nil
}

// trigger is one of the target's triggers on a table, with its definition
// (SQLite re-creates it from that).
type trigger struct{ name, ddl string }

// targetTriggers lists the target's own triggers on t (PostgreSQL: those
// not made for constraints, which stay on).
func targetTriggers(ctx context.Context, dst *database.DB, t *table) ([]trigger, error) {
	q, arg := "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ? ORDER BY name", t.name
	if dst.Dialect == postgres {
		q, arg = "SELECT tgname, '' FROM pg_trigger WHERE tgrelid = to_regclass($1) AND NOT tgisinternal ORDER BY tgname", quote(t.name)
	}
	rs, err := dst.SQL.QueryContext(ctx, q, arg)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []trigger
	for rs.Next() {
		var tr trigger
		if err := rs.Scan(&tr.name, &tr.ddl); err != nil {
			return nil, err
		}
		out = append(out, tr)
	}
	return out, rs.Err()
}

// writeBatch inserts rows into t in one transaction of the target, its
// triggers suspended inside it. A plain INSERT: the rows' keys are above
// every key the target holds, so a conflict is an error, never a row
// silently skipped.
func writeBatch(ctx context.Context, dst *database.DB, t *table, rows []row, triggers []trigger) error {
	tx, err := dst.SQL.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if err := suspendTriggers(ctx, tx, dst.Dialect, t, triggers); err != nil {
		return err
	}
	per := max(1, maxParams/len(t.columns))
	for start := 0; start < len(rows); start += per {
		chunk := rows[start:min(start+per, len(rows))]
		if err := insert(ctx, tx, dst.Dialect, t, chunk); err != nil {
			return err
		}
	}
	if err := restoreTriggers(ctx, tx, dst.Dialect, t, triggers); err != nil {
		return err
	}
	return tx.Commit()
}

func insert(ctx context.Context, tx execer, dialect string, t *table, rows []row) error {
	var b strings.Builder
	args := make([]any, 0, len(rows)*len(t.columns))
	b.WriteString("INSERT INTO " + quote(t.name) + " (" + t.columnList() + ") VALUES ")
	for i, r := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for j, c := range t.columns {
			if j > 0 {
				b.WriteString(", ")
			}
			args = append(args, writeValue(dialect, c.kind, r.values[j]))
			b.WriteString(param(dialect, len(args)))
		}
		b.WriteByte(')')
	}
	_, err := tx.ExecContext(ctx, b.String(), args...)
	return err
}

// suspendTriggers turns t's triggers off inside tx: PostgreSQL's ALTER
// TABLE is transactional, as SQLite's DROP TRIGGER is, so no other session
// ever sees them off and a batch that fails leaves them as they were.
func suspendTriggers(ctx context.Context, tx execer, dialect string, t *table, triggers []trigger) error {
	if len(triggers) == 0 {
		return nil
	}
	if dialect == postgres {
		_, err := tx.ExecContext(ctx, "ALTER TABLE "+quote(t.name)+" DISABLE TRIGGER USER")
		return err
	}
	for _, tr := range triggers {
		if _, err := tx.ExecContext(ctx, "DROP TRIGGER "+quote(tr.name)); err != nil {
			return err
		}
	}
	return nil
}

func restoreTriggers(ctx context.Context, tx execer, dialect string, t *table, triggers []trigger) error {
	if len(triggers) == 0 {
		return nil
	}
	if dialect == postgres {
		_, err := tx.ExecContext(ctx, "ALTER TABLE "+quote(t.name)+" ENABLE TRIGGER USER")
		return err
	}
	for _, tr := range triggers {
		if _, err := tx.ExecContext(ctx, tr.ddl); err != nil {
			return fmt.Errorf("re-create trigger %s: %w", tr.name, err)
		}
	}
	return nil
}

// moveSequences sets each integer key's sequence on a PostgreSQL target
// past the greatest key copied: the rows were written with their keys, so
// the sequence has not moved, and the next insert would draw a key taken.
// SQLite needs nothing: its rowid is the greatest key plus one, and an
// AUTOINCREMENT table's counter follows the keys inserted.
func moveSequences(ctx context.Context, dst *database.DB) error {
	if dst.Dialect != postgres {
		return nil
	}
	for _, t := range schemaTables {
		if !t.sequence {
			continue
		}
		key := quote(t.columns[t.key].name)
		if _, err := dst.SQL.ExecContext(ctx, "SELECT setval(pg_get_serial_sequence($1, $2), COALESCE(max("+key+"), 0) + 1, false) FROM "+quote(t.name),
			quote(t.name), t.columns[t.key].name); err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
	}
	return nil
}
