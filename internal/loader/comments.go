package loader

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/comment"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/limits"
	"github.com/procsvc/procsvc/internal/tenancy"
)

// A page's comments are its largest edge, read afresh by every list: ent's
// generated scan allocates a holder per column of every row, parses each
// uuid from a string it copies, and builds the statement anew each time,
// with one parameter per procedure. commentReader reads them with one
// statement text for any number of procedures on PostgreSQL (so it is
// prepared once per connection), straight into ent.Comment's fields.
// TestCommentColumns fails if the schema gains a column it does not read;
// TestCommentsAsEntReadsThem compares what it reads with ent's own read.
//
// A procedure holds any number of comments (thousands, for a long-running
// one), so the statement reads, for every procedure of the page at once,
// only the window of its comments the request shows: its oldest First and
// its newest Last, each an index range on (procedure_id, created_at, id)
// cut by a LIMIT (or, on PostgreSQL, all of them when they are no more),
// so that a page of 100 procedures of 10 000 comments each reads at most
// 100 × (First + Last) rows, never their million
// (TestCommentWindowsAreBounded). Each procedure's total is its
// comment_count, which the database keeps (internal/database), read with
// the window rather than counted; a procedure without comments costs no
// more than its count. The read stops once the text it read passes the
// request's bound.
//
// Tenancy is internal/tenancy's, as the tenant interceptor applies it: the
// statement is confined to the viewer's workspace, a context without a
// viewer reads nothing, and the system context (no tenancy) reads every
// workspace's.

// CommentWindow names which of a procedure's comments, oldest first, a read
// or a view takes: its First oldest and its Last newest (a procedure with
// fewer gives them all). The zero window is the default view of a
// procedure's comments: its newest limits.CommentPage (a page's most).
type CommentWindow struct{ First, Last int }

// DefaultCommentWindow is what the zero CommentWindow stands for.
var DefaultCommentWindow = CommentWindow{Last: limits.CommentPage}

// normal is w, the zero window spelled out.
func (w CommentWindow) normal() CommentWindow {
	if w.First <= 0 && w.Last <= 0 {
		return DefaultCommentWindow
	}
	return CommentWindow{First: max(w.First, 0), Last: max(w.Last, 0)}
}

// Union is the window that takes every comment w or o takes.
func (w CommentWindow) Union(o CommentWindow) CommentWindow {
	w, o = w.normal(), o.normal()
	return CommentWindow{First: max(w.First, o.First), Last: max(w.Last, o.Last)}
}

// commentPage is what was read of one procedure's comments: those of its
// total that window takes, oldest first.
type commentPage struct {
	rows   []*ent.Comment
	window CommentWindow
	// skip is the columns left unread (the zero value of their fields).
	skip  CommentSkip
	total int
}

// serves reports whether p holds every comment w takes with every column a
// view that skips skip shows.
func (p *commentPage) serves(w CommentWindow, skip CommentSkip) bool {
	return p.skip&^skip == 0 && p.covers(w)
}

// covers reports whether p holds every comment w takes.
func (p *commentPage) covers(w CommentWindow) bool {
	w = w.normal()
	return len(p.rows) == p.total || (w.First <= p.window.First && w.Last <= p.window.Last)
}

// view returns the comments of p that w takes, oldest first; p covers w.
// The rows of p are a prefix and a suffix of the procedure's comments, so
// those w takes are a prefix and a suffix of p's rows.
func (p *commentPage) view(w CommentWindow) []*ent.Comment {
	w = w.normal()
	n := len(p.rows)
	// at is the position among all the procedure's comments of row i.
	at := func(i int) int {
		if i < p.window.First {
			return i
		}
		return p.total - (n - i)
	}
	head := 0
	for head < n && at(head) < w.First {
		head++
	}
	tail := n
	for tail > 0 && at(tail-1) >= p.total-w.Last {
		tail--
	}
	switch {
	case head >= tail:
		return p.rows
	case head == 0:
		return p.rows[tail:]
	case tail == n:
		return p.rows[:head]
	}
	out := make([]*ent.Comment, 0, head+n-tail)
	return append(append(out, p.rows[:head]...), p.rows[tail:]...)
}

// commentColumns are every column of comments, in the reader's scan order.
var commentColumns = []string{
	comment.FieldID, comment.FieldWorkspaceID, comment.FieldProcedureID, comment.FieldAuthorID,
	comment.FieldText, comment.FieldCreatedAt, comment.FieldUpdatedAt,
}

// CommentSkip is the columns of comments a read may leave unread because
// nothing shown of its comments holds them. The zero value reads every
// column. Two column groups rather than any subset keep the statement
// texts few (four column lists a statement shape, each text prepared once
// per connection, the pool holding 512).
//
// A comment read without a column holds that field's zero value, so a
// page read that way serves only views that skip at least as much
// (commentPage.serves); Comments reads the others afresh.
type CommentSkip uint8

const (
	// SkipCommentAuthor leaves author_id unread: nothing resolves the
	// comments' author.
	SkipCommentAuthor CommentSkip = 1 << iota
	// SkipCommentUpdatedAt leaves updated_at unread.
	SkipCommentUpdatedAt
	// commentSkips is how many CommentSkip values there are.
	commentSkips = 1 << iota
)

// read reports whether a read that skips s reads column.
func (s CommentSkip) read(column string) bool {
	switch column {
	case comment.FieldAuthorID:
		return s&SkipCommentAuthor == 0
	case comment.FieldUpdatedAt:
		return s&SkipCommentUpdatedAt == 0
	}
	return true
}

// commentColumnsOf are the columns a read that skips s selects, in their
// scan order: a read confined to a workspace (scoped) leaves workspace_id
// unread too, since its statement confines every comment it reads to that
// workspace, which is the comments' workspace_id.
func commentColumnsOf(scoped bool, s CommentSkip) []string {
	var out []string
	for _, c := range commentColumns {
		if s.read(c) && !(scoped && c == comment.FieldWorkspaceID) {
			out = append(out, c)
		}
	}
	return out
}

type commentReader struct {
	db *database.DB
	// pg is the whole PostgreSQL statement, by whether it is confined to
	// a workspace (its first parameter) and whether it reads one
	// procedure's (pgOne); the procedures are one uuid[] parameter (one
	// uuid for one), the window two more.
	pg [2][commentSkips][2]string
	// sqliteHead and sqliteTail are the SQLite statement around its list
	// of procedures, by whether it is confined to a workspace, the
	// columns it skips and the ends the window takes (commentEnds); the
	// tail is cut where each end's LIMIT is written.
	sqliteHead [2][commentSkips][3]string
	sqliteTail [2][commentSkips][3][]string
	// whole is the statement of every comment of procedures known to
	// hold few (wholeStatement), by whether it is confined to a workspace
	// and the columns it skips.
	whole [2][commentSkips]string
	// columns are what each statement selects (commentColumnsOf), by
	// whether it is confined to a workspace and the columns it skips.
	columns [2][commentSkips][]string
}

// textBudget is what one request may still read of comment text, in
// bytes; shared by the reads of a request, which may run at once.
type textBudget struct {
	bound int
	read  atomic.Int64
}

// spend counts n bytes read and reports whether the request is still
// within its bound.
func (b *textBudget) spend(n int) bool {
	return b.read.Add(int64(n)) <= int64(b.bound)
}

func (b *textBudget) err() error {
	return apperr.ResponseTooLarge(b.bound, "ask for fewer procedures (a smaller page), or fewer comments of each (GraphQL: comments(last: n))")
}

func newCommentReader(db *database.DB) *commentReader {
	r := &commentReader{db: db}
	for _, scoped := range []bool{false, true} {
		for skip := range CommentSkip(commentSkips) {
			r.columns[index(scoped)][skip] = commentColumnsOf(scoped, skip)
			r.whole[index(scoped)][skip] = wholeStatement(db.Dialect, scoped, skip)
			for _, one := range []bool{false, true} {
				r.pg[index(scoped)][skip][pgOne(one)] = commentStatement(dialect.Postgres, scoped, skip, bothEnds, one)
			}
			for _, ends := range []commentEnds{bothEnds, firstEnd, lastEnd} {
				head, tail, _ := strings.Cut(commentStatement(dialect.SQLite, scoped, skip, ends, false), "@")
				r.sqliteHead[index(scoped)][skip][ends], r.sqliteTail[index(scoped)][skip][ends] = head, strings.Split(tail, sqliteLimit)
			}
		}
	}
	return r
}

// sqliteLimit marks where a SQLite statement's LIMITs are written.
const sqliteLimit = "#"

// commentEnds says which ends of each procedure's comments a SQLite
// statement reads. SQLite runs an end whose LIMIT is 0 in full but for
// its rows (every procedure looked up again, its correlated subquery
// prepared), a millisecond of the project dashboard's 200 procedures; so
// a window that takes one end has a statement without the other.
// PostgreSQL's executor stops a LIMIT 0 at once: it keeps one statement,
// planned once.
type commentEnds int

const (
	bothEnds commentEnds = iota
	firstEnd
	lastEnd
)

// endsOf is the ends w (normal) takes.
func endsOf(w CommentWindow) commentEnds {
	switch {
	case w.Last == 0:
		return firstEnd
	case w.First == 0:
		return lastEnd
	}
	return bothEnds
}

// pgOne is the index in commentReader.pg of the statement that reads one
// procedure's comments (one) or a list's.
//
// One procedure's has its key as a uuid, not a uuid[] of one: PostgreSQL
// plans a prepared statement afresh at every run (a custom plan) as long
// as the plan it would keep (the generic plan) is estimated dearer than
// those, and it estimates a uuid[] parameter at ten elements. For the
// single procedure of a write's answer or a record's read, that made the
// generic plan the dearer, so the statement was planned at every run,
// 0.25 ms of PostgreSQL's CPU, ten times its run (docs/performance.md,
// "Plans kept for one procedure's comments").
func pgOne(one bool) int {
	if one {
		return 1
	}
	return 0
}

// index is a statement's index in commentReader's pairs.
func index(scoped bool) int {
	if scoped {
		return 1
	}
	return 0
}

// commentStatement is the reader's statement in dialect d, confined to
// the workspace of its first parameter when scoped, selecting
// commentColumnsOf(scoped, skip). Its parameters are
// that workspace (when scoped), the window's First and Last, and the
// procedures: on PostgreSQL in that order, the procedures one uuid[] (a
// uuid when one: a statement of one procedure, see pgOne); on
// SQLite the procedures, a list of parameters where the statement has
// "@", are its only parameters besides the workspace: each end's LIMIT,
// First then Last, is written where the statement has sqliteLimit, and an
// end that ends leaves out has no read. Its rows are the comments of
// each procedure the window takes, with the procedure's count ("n", or 0
// where the rows are all its comments), ordered by procedure, created_at
// and id; a comment both ends take (a procedure with fewer than First +
// Last) may come twice, in adjacent rows.
//
// Each end is an index range cut by its LIMIT: on PostgreSQL two
// subqueries LATERAL to each procedure, for the procedures of more than
// First + Last comments; those of fewer have all their comments read by
// one index scan over the list of them, as cheap as the statement was when
// every procedure held few (two LIMITed scans of each cost a page of 50
// about a tenth of a millisecond more). SQLite, which has no LATERAL,
// finds each end's rows by a subquery correlated to the procedure and reads
// the comments they name by rowid. Procedures come from the
// procedures table, with their count, so that one without comments
// (comment_count 0) reads nothing more and one of another workspace
// nothing at all.
func commentStatement(d string, scoped bool, skip CommentSkip, ends commentEnds, one bool) string {
	q := func(name string) string { return `"` + name + `"` }
	columns := commentColumnsOf(scoped, skip)
	cols := func(table string) string {
		out := make([]string, len(columns))
		for i, c := range columns {
			out[i] = q(c)
			if table != "" {
				out[i] = q(table) + "." + out[i]
			}
			if d == dialect.SQLite && (c == comment.FieldCreatedAt || c == comment.FieldUpdatedAt) {
				// An expression: the driver hands its text over to
				// database.Time unparsed.
				out[i] = "+" + out[i]
			}
		}
		return strings.Join(out, ", ")
	}
	order := func(dir string) string {
		return " ORDER BY " + q(comment.FieldCreatedAt) + dir + ", " + q(comment.FieldID) + dir
	}
	// A compound select orders by its result's columns, here by number.
	at := func(column string) string { return strconv.Itoa(slices.Index(columns, column) + 1) }
	byProcedure := " ORDER BY " + at(comment.FieldProcedureID) + ", " + at(comment.FieldCreatedAt) + ", " + at(comment.FieldID)
	procedures := func(columns, where string) string {
		return "SELECT " + columns + " FROM " + q(procedure.Table) + " WHERE " + where
	}
	id, count := q(procedure.FieldID), q(procedure.FieldCommentCount)

	if d == dialect.Postgres {
		param := func(n int) string { return "$" + strconv.Itoa(n) }
		first, last, keys := param(1), param(2), param(3)
		// confined is the predicate of the workspace, followed by AND.
		confined := ""
		if scoped {
			first, last, keys = param(2), param(3), param(4)
			confined = q(tenancy.Column) + " = " + param(1) + " AND "
		}
		window := first + "::bigint + " + last + "::bigint"
		ofKeys := " AND " + id + " = ANY(" + keys + "::uuid[])"
		if one {
			ofKeys = " AND " + id + " = " + keys + "::uuid"
		}
		few := procedures(id, confined+count+" BETWEEN 1 AND "+window+ofKeys)
		many := procedures(id+", "+count+` AS "n"`, confined+count+" > "+window+ofKeys)
		end := func(limit, dir string) string {
			return "(SELECT " + cols("") + " FROM " + q(comment.Table) + " WHERE " + confined + q(comment.FieldProcedureID) +
				` = "k".` + id + order(dir) + " LIMIT " + limit + ")"
		}
		return "SELECT " + cols("") + ", 0 FROM " + q(comment.Table) + " WHERE " + confined + q(comment.FieldProcedureID) +
			" = ANY(ARRAY(" + few + ")) UNION ALL SELECT " + cols("c") + `, "k"."n" FROM (` + many + `) AS "k" CROSS JOIN LATERAL (` +
			end(first, "") + " UNION ALL " + end(last, " DESC") + `) AS "c"` + byProcedure
	}

	// An end's LIMIT is written into the text rather than bound: SQLite
	// may plan with the value of a LIMIT parameter (it does for a page of
	// 50 procedures), and a statement whose plan used a bound value is
	// compiled again every time it is run with its parameters bound
	// afresh, as every read binds them (6 % of an uncached list page's CPU
	// in a profile; TestSQLiteCommentStatementsStayCompiled); written, the text is the
	// same for every read of one window size and number of procedures,
	// compiled once per connection (database.stmtCache, at most 512
	// texts; each end of a window takes at most limits.CommentPage).
	//
	// SQLite's parameters are positional, each used once in the order
	// they are given (numbered ones would cost the driver a lookup, and an
	// allocation, each): the comments are confined to the procedures'
	// workspace through "ws". The procedures are read by primary key:
	// without statistics SQLite would rather read every procedure of the
	// workspace through an index that leads with workspace_id, and the
	// unary plus keeps that predicate out of its choice of index.
	procs := procedures(id+", "+count+` AS "n"`, count+" > 0 AND "+id+" IN (@)")
	var where string
	if scoped {
		procs = procedures(id+", "+count+` AS "n", `+q(tenancy.Column)+` AS "ws"`, "+"+q(tenancy.Column)+" = ? AND "+count+" > 0 AND "+id+" IN (@)")
		// Both sides without type affinity, compared as the texts they
		// are (docs/performance.md, "SQLite: packed columns, comparisons
		// without affinity").
		where = ` WHERE +"c".` + q(tenancy.Column) + ` = +"k"."ws"`
	}
	// Each end names its comments by rowid, which the index holds, so
	// that each is read from its table at once rather than found again
	// through the index of the ids, comparing UUID texts (a fifth of the
	// statement's time for a dashboard's 200 procedures).
	end := func(dir string) string {
		return "SELECT " + cols("c") + `, "k"."n" FROM "k" JOIN ` + q(comment.Table) + ` AS "c" ON "c"."rowid"` +
			` IN (SELECT "rowid" FROM ` + q(comment.Table) + " WHERE " + q(comment.FieldProcedureID) + ` = "k".` +
			id + order(dir) + " LIMIT " + sqliteLimit + ")" + where
	}
	reads := end("") + " UNION ALL " + end(" DESC")
	switch ends {
	case firstEnd:
		reads = end("")
	case lastEnd:
		reads = end(" DESC")
	}
	return `WITH "k" AS (` + procs + ") " + reads + byProcedure
}

// writtenLimit reports whether a comment window's end of n comments is
// written into the SQLite statement's text (compiled once, kept prepared)
// rather than bound (compiled again at each read, since SQLite weighs a
// bound LIMIT in its plan): the sizes procsvc's faces and common clients
// ask for. Writing every size would let a client sweeping window sizes
// fill the pool's 512 prepared texts with its own, pushing out everyone's.
func writtenLimit(n int) bool {
	switch n {
	case 0, 1, 2, 3, 5, 10, 20:
		return true
	}
	return false
}

// read returns the comments of the procedures keys that ctx's viewer can
// see (every procedure's, for the system context), each procedure's window
// w takes, oldest first as ent's query ordered by created_at and id
// returns them, without the columns skip leaves out, stopping with
// payload_too_large once their text passes budget. A procedure without
// comments, or that ctx cannot see, has no page.
func (r *commentReader) read(ctx context.Context, keys []uuid.UUID, w CommentWindow, skip CommentSkip, budget *textBudget) (map[uuid.UUID]*commentPage, error) {
	workspaceID, scoped, err := tenancy.Of(ctx)
	if err != nil {
		return nil, err
	}
	w, skip = w.normal(), skip&(commentSkips-1) // only the groups there are
	args := make([]any, 0, 3+len(keys))
	if scoped {
		args = append(args, workspaceID)
	}
	var query string
	if r.db.Dialect == dialect.Postgres {
		if len(keys) == 1 {
			query, args = r.pg[index(scoped)][skip][pgOne(true)], append(args, w.First, w.Last, keys[0])
		} else {
			query, args = r.pg[index(scoped)][skip][pgOne(false)], append(args, w.First, w.Last, uuidArray(keys))
		}
	} else {
		ends := endsOf(w)
		head, tail := r.sqliteHead[index(scoped)][skip][ends], r.sqliteTail[index(scoped)][skip][ends]
		q := make([]byte, 0, len(head)+len(tail[0])+len(tail[len(tail)-1])+2*len(keys)+2*20)
		q = append(q, head...)
		for i, k := range keys {
			if i > 0 {
				q = append(q, ',')
			}
			q = append(q, '?')
			args = append(args, k)
		}
		limits := [2]int{w.First, w.Last}
		switch ends {
		case firstEnd:
			limits[1] = 0
		case lastEnd:
			limits[0] = w.Last
		}
		for i, part := range tail {
			if i > 0 {
				if n := limits[i-1]; writtenLimit(n) {
					q = strconv.AppendInt(q, int64(n), 10)
				} else {
					q = append(q, '?')
					args = append(args, n)
				}
			}
			q = append(q, part...)
		}
		query = string(q)
	}
	var rows entsql.Rows
	if err := r.db.Driver().Query(ctx, query, args, &rows); err != nil {
		return nil, err
	}
	defer rows.Close()
	pages := make(map[uuid.UUID]*commentPage, len(keys))
	sc := newCommentScanner(r.columns[index(scoped)][skip], workspaceID, true, false)
	var last *ent.Comment
	for rows.Next() {
		if err := rows.Scan(sc.dest...); err != nil {
			return nil, err
		}
		if last != nil && last.ID == sc.scratch.ID {
			// Taken by both ends, and read twice (commentStatement).
			continue
		}
		c, err := sc.comment(budget)
		if err != nil {
			return nil, err
		}
		p := pages[c.ProcedureID]
		if p == nil {
			p = &commentPage{window: w, skip: skip, total: int(sc.total)}
			pages[c.ProcedureID] = p
		}
		p.rows = append(p.rows, c)
		last = c
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, p := range pages {
		if p.total <= 0 || len(p.rows) < w.First+w.Last {
			// Every comment of the procedure (fewer than the window
			// takes, whatever the count said).
			p.total = len(p.rows)
		}
	}
	return pages, nil
}

// commentScanner scans the rows of the reader's statements into
// ent.Comments: each row's fields into scratch, through holders made once
// (the count into an int64, which database/sql sets as it is rather than
// through its decimal text, as it would an int; 0 rather than -1 marks a
// procedure read whole, since the drivers box an int64 of 256 or more, or
// negative, in an allocation of its own).
type commentScanner struct {
	scratch ent.Comment
	total   int64
	// packed holds a packed column's text, whose fields are set by
	// setters (packedCommentColumns).
	packed  string
	fields  []string
	setters []func(c *ent.Comment, s string) error
	dest    []any
}

// packedCommentColumns splits columns into those a SQLite read packs into
// one text (database.PackSQLite: the ids and times), in their order, and
// the text, which it selects as a column of its own.
func packedCommentColumns(columns []string) (packed, plain []string) {
	for _, c := range columns {
		if c == comment.FieldText {
			plain = append(plain, c)
			continue
		}
		packed = append(packed, c)
	}
	return packed, plain
}

// commentSetters set a comment's field from its text in a packed column.
var commentSetters = map[string]func(c *ent.Comment, s string) error{
	comment.FieldID:          func(c *ent.Comment, s string) (err error) { c.ID, err = uuid.Parse(s); return },
	comment.FieldWorkspaceID: func(c *ent.Comment, s string) (err error) { c.WorkspaceID, err = uuid.Parse(s); return },
	comment.FieldProcedureID: func(c *ent.Comment, s string) (err error) { c.ProcedureID, err = uuid.Parse(s); return },
	comment.FieldAuthorID:    func(c *ent.Comment, s string) (err error) { c.AuthorID, err = uuid.Parse(s); return },
	comment.FieldCreatedAt:   func(c *ent.Comment, s string) (err error) { c.CreatedAt, err = database.TimeText(s); return },
	comment.FieldUpdatedAt:   func(c *ent.Comment, s string) (err error) { c.UpdatedAt, err = database.TimeText(s); return },
}

// newCommentScanner scans columns, then the procedure's count when total;
// a comment's workspace is workspaceID when columns leave it unread (a
// read confined to that workspace). When pack is set, the row's first
// column packs the columns packedCommentColumns packs.
func newCommentScanner(columns []string, workspaceID uuid.UUID, total, pack bool) *commentScanner {
	sc := &commentScanner{dest: make([]any, 0, len(commentColumns)+1)}
	sc.scratch.WorkspaceID = workspaceID
	if pack {
		var packed []string
		packed, columns = packedCommentColumns(columns)
		sc.dest = append(sc.dest, &sc.packed)
		sc.fields = make([]string, len(packed))
		for _, c := range packed {
			sc.setters = append(sc.setters, commentSetters[c])
		}
	}
	for _, c := range columns {
		switch c {
		case comment.FieldID:
			sc.dest = append(sc.dest, database.UUID{ID: &sc.scratch.ID})
		case comment.FieldWorkspaceID:
			sc.dest = append(sc.dest, database.UUID{ID: &sc.scratch.WorkspaceID})
		case comment.FieldProcedureID:
			sc.dest = append(sc.dest, database.UUID{ID: &sc.scratch.ProcedureID})
		case comment.FieldAuthorID:
			sc.dest = append(sc.dest, database.UUID{ID: &sc.scratch.AuthorID})
		case comment.FieldText:
			sc.dest = append(sc.dest, &sc.scratch.Text)
		case comment.FieldCreatedAt:
			sc.dest = append(sc.dest, database.Time{T: &sc.scratch.CreatedAt})
		case comment.FieldUpdatedAt:
			sc.dest = append(sc.dest, database.Time{T: &sc.scratch.UpdatedAt})
		}
	}
	if total {
		sc.dest = append(sc.dest, &sc.total)
	}
	return sc
}

// comment is a copy of the row scanned last, its text counted against
// budget (payload_too_large past it).
func (sc *commentScanner) comment(budget *textBudget) (*ent.Comment, error) {
	if !budget.spend(len(sc.scratch.Text)) {
		return nil, budget.err()
	}
	if len(sc.setters) > 0 {
		if err := database.Unpack(sc.packed, sc.fields); err != nil {
			return nil, err
		}
		for i, set := range sc.setters {
			if err := set(&sc.scratch, sc.fields[i]); err != nil {
				return nil, fmt.Errorf("loader: packed column %d of a comment: %w", i, err)
			}
		}
	}
	c := new(ent.Comment)
	c.ID, c.WorkspaceID, c.ProcedureID, c.AuthorID = sc.scratch.ID, sc.scratch.WorkspaceID, sc.scratch.ProcedureID, sc.scratch.AuthorID
	c.Text, c.CreatedAt, c.UpdatedAt = sc.scratch.Text, sc.scratch.CreatedAt, sc.scratch.UpdatedAt
	return c, nil
}
