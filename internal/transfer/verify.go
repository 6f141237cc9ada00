package transfer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"slices"

	"github.com/procsvc/procsvc/internal/database"
)

// Source and target index the two sides of a comparison.
const (
	source = 0
	target = 1
)

var sideName = [2]string{"source", "target"}

// TableReport is one table compared: its rows and the SHA-256 of their
// canonical encoding in key order, on each side, and its differences.
type TableReport struct {
	Table      string
	Rows       [2]int64
	Digest     [2]string
	Workspaces int
	// Diffs: a line per workspace whose rows differ, at most maxDiffs.
	Diffs []Diff
}

// Diff is one workspace's rows of one table that differ between the two
// sides, with the first key (in key order) at which they do.
type Diff struct {
	Table, Workspace string
	Rows             [2]int64
	Key              any
	Reason           string
}

func (d Diff) String() string {
	return fmt.Sprintf("table %s, workspace %s: %d rows in the source, %d in the target; first differing key %v: %s",
		d.Table, d.Workspace, d.Rows[source], d.Rows[target], d.Key, d.Reason)
}

// maxDiffs bounds the differences one table's report keeps: the first are
// what an operator needs, and a report of every row of a wrong target
// would be as large as it.
const maxDiffs = 20

// group is one workspace's rows of a table, as the comparison goes.
type group struct {
	rows      [2]int64
	hash      [2]hash.Hash
	firstKey  any
	reason    string
	different bool
}

// compareTable reads t on both sides in key order, up to upto (nil: every
// row), a page of each at a time, and compares them row by row: each
// side's rows feed its digests (the table's, and its workspace's), and the
// first row that differs in each workspace is kept. Memory: a page per
// side and two hash states per workspace.
func compareTable(ctx context.Context, q [2]querier, dialect [2]string, t *table, upto any, limit int, budget int64) (TableReport, error) {
	rep := TableReport{Table: t.name}
	groups := map[string]*group{}
	var order []string
	var tableHash = [2]hash.Hash{sha256.New(), sha256.New()}
	groupOf := func(ws string) *group {
		g := groups[ws]
		if g == nil {
			g = &group{hash: [2]hash.Hash{sha256.New(), sha256.New()}}
			groups[ws] = g
			order = append(order, ws)
		}
		return g
	}
	var lenBuf [binary.MaxVarintLen64]byte
	account := func(side int, r row, enc []byte) *group {
		g := groupOf(t.workspaceOf(r))
		g.rows[side]++
		rep.Rows[side]++
		n := binary.PutUvarint(lenBuf[:], uint64(len(enc)))
		for _, h := range []hash.Hash{g.hash[side], tableHash[side]} {
			h.Write(lenBuf[:n])
			h.Write(enc)
		}
		return g
	}
	differ := func(g *group, key any, reason string) {
		if !g.different {
			g.different, g.firstKey, g.reason = true, key, reason
		}
	}

	var (
		pages [2][]row
		pos   [2]int
		after [2]any
		done  [2]bool
	)
	peek := func(side int) (row, bool, error) {
		if pos[side] == len(pages[side]) && !done[side] {
			p, err := readPage(ctx, q[side], dialect[side], t, after[side], upto, limit, budget)
			if err != nil {
				return row{}, false, fmt.Errorf("%s: %w", sideName[side], err)
			}
			pages[side], pos[side] = p, 0
			if len(p) == 0 {
				done[side] = true
			} else {
				after[side] = t.keyOf(p[len(p)-1])
			}
		}
		if pos[side] == len(pages[side]) {
			return row{}, false, nil
		}
		return pages[side][pos[side]], true, nil
	}
	var encBuf [2][]byte
	for {
		a, aok, err := peek(source)
		if err != nil {
			return rep, err
		}
		b, bok, err := peek(target)
		if err != nil {
			return rep, err
		}
		if !aok && !bok {
			break
		}
		c := 0
		switch {
		case !aok:
			c = 1
		case !bok:
			c = -1
		default:
			c = compareKeys(t.keyOf(a), t.keyOf(b))
		}
		if c <= 0 {
			encBuf[source] = appendRow(encBuf[source][:0], t, a)
			pos[source]++
		}
		if c >= 0 {
			encBuf[target] = appendRow(encBuf[target][:0], t, b)
			pos[target]++
		}
		switch {
		case c < 0:
			differ(account(source, a, encBuf[source]), t.keyOf(a), "in the source, not in the target")
		case c > 0:
			differ(account(target, b, encBuf[target]), t.keyOf(b), "in the target, not in the source")
		default:
			ga, gb := account(source, a, encBuf[source]), account(target, b, encBuf[target])
			if !bytes.Equal(encBuf[source], encBuf[target]) {
				reason := "column " + firstDifferentColumn(t, a, b) + " differs"
				differ(ga, t.keyOf(a), reason)
				differ(gb, t.keyOf(b), reason)
			}
		}
	}
	for side := range tableHash {
		rep.Digest[side] = hex.EncodeToString(tableHash[side].Sum(nil))
	}
	rep.Workspaces = len(groups)
	slices.Sort(order)
	for _, ws := range order {
		g := groups[ws]
		if !g.different || len(rep.Diffs) == maxDiffs {
			// Equal keys and encodings throughout make equal digests: the
			// digests only repeat what the walk found.
			continue
		}
		rep.Diffs = append(rep.Diffs, Diff{Table: t.name, Workspace: ws, Rows: g.rows, Key: g.firstKey, Reason: g.reason})
	}
	return rep, nil
}

// firstDifferentColumn names the first column whose canonical values
// differ between a and b.
func firstDifferentColumn(t *table, a, b row) string {
	for i, c := range t.columns {
		if !bytes.Equal(appendValue(nil, c.kind, a.values[i]), appendValue(nil, c.kind, b.values[i])) {
			return c.name
		}
	}
	return "(none)"
}

// Report is a verification: a TableReport per table of the schema.
type Report struct {
	Tables []TableReport
}

// Diffs returns every difference found.
func (r Report) Diffs() []Diff {
	var out []Diff
	for _, t := range r.Tables {
		out = append(out, t.Diffs...)
	}
	return out
}

// Write prints a line per table: its rows and digest on both sides.
func (r Report) Write(w io.Writer) {
	for _, t := range r.Tables {
		state := "identical"
		if len(t.Diffs) > 0 || t.Digest[source] != t.Digest[target] {
			state = "DIFFERENT"
		}
		fmt.Fprintf(w, "verify: %-20s %9d rows, %5d workspaces, sha256 %s  %s\n", t.Table, t.Rows[source], t.Workspaces, t.Digest[source][:16], state)
		if state != "identical" {
			fmt.Fprintf(w, "verify: %-20s %9d rows in the target, sha256 %s\n", "", t.Rows[target], t.Digest[target][:16])
		}
	}
}

// ErrDifferent is Verify's error when the two databases differ.
type ErrDifferent struct{ Diffs []Diff }

func (e *ErrDifferent) Error() string {
	d := e.Diffs[0]
	more := ""
	if len(e.Diffs) > 1 {
		more = fmt.Sprintf(" (and %d more differences above)", len(e.Diffs)-1)
	}
	return "verification failed: " + d.String() + more
}

// Verify compares every table of the schema on src and dst, each read in
// one read transaction, and returns the report; the error is an
// *ErrDifferent when they differ.
func Verify(ctx context.Context, src, dst *database.DB, opts Options) (Report, error) {
	if schemaErr != nil {
		return Report{}, schemaErr
	}
	opts = opts.withDefaults()
	srcTx, err := readTx(ctx, src)
	if err != nil {
		return Report{}, fmt.Errorf("source: %w", err)
	}
	defer srcTx.Rollback() //nolint:errcheck // read only
	return verifyWith(ctx, srcTx, src.Dialect, dst, opts)
}

// verifyWith is Verify with the source read through srcTx (Copy's own
// read transaction, so that it verifies the snapshot it copied).
func verifyWith(ctx context.Context, srcTx *sql.Tx, srcDialect string, dst *database.DB, opts Options) (Report, error) {
	dstTx, err := readTx(ctx, dst)
	if err != nil {
		return Report{}, fmt.Errorf("target: %w", err)
	}
	defer dstTx.Rollback() //nolint:errcheck // read only
	var rep Report
	for _, t := range schemaTables {
		tr, err := compareTable(ctx, [2]querier{srcTx, dstTx}, [2]string{srcDialect, dst.Dialect}, t, nil, opts.BatchRows, opts.BatchBytes)
		if err != nil {
			return rep, fmt.Errorf("verify %s: %w", t.name, err)
		}
		rep.Tables = append(rep.Tables, tr)
	}
	if d := rep.Diffs(); len(d) > 0 {
		return rep, &ErrDifferent{Diffs: d}
	}
	return rep, nil
}

// readTx begins a read-only transaction: one snapshot of the database for
// every page read (REPEATABLE READ on PostgreSQL; on SQLite a deferred
// transaction, whose snapshot is taken at its first read).
func readTx(ctx context.Context, db *database.DB) (*sql.Tx, error) {
	opts := &sql.TxOptions{ReadOnly: true}
	if db.Dialect == postgres {
		opts.Isolation = sql.LevelRepeatableRead
	}
	return db.SQL.BeginTx(ctx, opts)
}
