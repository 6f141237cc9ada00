package loader

import (
	"context"
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
// cut by a LIMIT, so that a page of 100 procedures of 10 000 comments each
// reads at most 100 × (First + Last) rows, never their million
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
	total  int
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

// commentColumns are what readComments selects, in its scan order.
var commentColumns = []string{
	comment.FieldID, comment.FieldWorkspaceID, comment.FieldProcedureID, comment.FieldAuthorID,
	comment.FieldText, comment.FieldCreatedAt, comment.FieldUpdatedAt,
}

type commentReader struct {
	db *database.DB
	// pg is the whole PostgreSQL statement, by whether it is confined to
	// a workspace (its first parameter); the procedures are one uuid[]
	// parameter, the window two more.
	pg [2]string
	// sqliteHead and sqliteTail are the SQLite statement around its list
	// of procedures, by whether it is confined to a workspace.
	sqliteHead, sqliteTail [2]string
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
		r.pg[index(scoped)] = commentStatement(dialect.Postgres, scoped)
		r.sqliteHead[index(scoped)], r.sqliteTail[index(scoped)], _ = strings.Cut(commentStatement(dialect.SQLite, scoped), "@")
	}
	return r
}

// index is a statement's index in commentReader's pairs.
func index(scoped bool) int {
	if scoped {
		return 1
	}
	return 0
}

// commentStatement is the reader's statement in dialect d, confined to
// the workspace of its first parameter when scoped. Its parameters are, in
// order, that workspace (when scoped), the window's First and Last, and
// the procedures: PostgreSQL's one uuid[], SQLite's a list of numbered
// parameters where the statement has "@". Its rows are the comments of
// each procedure the window takes, with the procedure's count ("n"),
// ordered by procedure, created_at and id; a comment both ends take (a
// procedure with fewer than First + Last) comes twice, in adjacent rows.
//
// Each end is an index range cut by its LIMIT: on PostgreSQL two
// subqueries LATERAL to each procedure; SQLite, which has no LATERAL,
// finds each end's ids by a subquery correlated to the procedure and reads
// the comments they name by primary key. Procedures come from the
// procedures table, with their count, so that one without comments
// (comment_count 0) reads nothing more and one of another workspace
// nothing at all.
func commentStatement(d string, scoped bool) string {
	pg := d == dialect.Postgres
	q := func(name string) string { return `"` + name + `"` }
	param := func(n int) string {
		if pg {
			return "$" + strconv.Itoa(n)
		}
		return "?" + strconv.Itoa(n)
	}
	workspace, first, last, keys := 0, 1, 2, 3
	if scoped {
		workspace, first, last, keys = 1, 2, 3, 4
	}
	// confined is the predicate of the workspace, followed by AND.
	confined := func() string {
		if !scoped {
			return ""
		}
		return q(tenancy.Column) + " = " + param(workspace) + " AND "
	}
	cols := func(table string) string {
		out := make([]string, len(commentColumns))
		for i, c := range commentColumns {
			out[i] = q(c)
			if table != "" {
				out[i] = q(table) + "." + out[i]
			}
		}
		return strings.Join(out, ", ")
	}
	order := func(dir string) string {
		return " ORDER BY " + q(comment.FieldCreatedAt) + dir + ", " + q(comment.FieldID) + dir
	}
	inKeys := " IN (@)"
	if pg {
		inKeys = " = ANY(" + param(keys) + "::uuid[])"
	}
	// The procedures are read by primary key. SQLite, without statistics,
	// would rather read every procedure of the workspace through an index
	// that leads with workspace_id: its unary plus keeps that predicate
	// out of the index choice.
	scope := confined()
	if scoped && !pg {
		scope = "+" + scope
	}
	procs := "SELECT " + q(procedure.FieldID) + ", " + q(procedure.FieldCommentCount) + ` AS "n" FROM ` + q(procedure.Table) +
		" WHERE " + scope + q(procedure.FieldCommentCount) + " > 0 AND " + q(procedure.FieldID) + inKeys
	if pg {
		end := func(limit int, dir string) string {
			return "(SELECT " + cols("") + " FROM " + q(comment.Table) + " WHERE " + confined() + q(comment.FieldProcedureID) +
				` = "k".` + q(procedure.FieldID) + order(dir) + " LIMIT " + param(limit) + ")"
		}
		return "SELECT " + cols("c") + `, "k"."n" FROM (` + procs + `) AS "k" CROSS JOIN LATERAL (` +
			end(first, "") + " UNION ALL " + end(last, " DESC") + `) AS "c" ORDER BY "c".` + q(comment.FieldProcedureID) +
			`, "c".` + q(comment.FieldCreatedAt) + `, "c".` + q(comment.FieldID)
	}
	var where string
	if scoped {
		where = ` WHERE "c".` + q(tenancy.Column) + " = " + param(workspace)
	}
	end := func(limit int, dir string) string {
		return "SELECT " + cols("c") + `, "k"."n" FROM "k" JOIN ` + q(comment.Table) + ` AS "c" ON "c".` + q(comment.FieldID) +
			" IN (SELECT " + q(comment.FieldID) + " FROM " + q(comment.Table) + " WHERE " + q(comment.FieldProcedureID) + ` = "k".` +
			q(procedure.FieldID) + order(dir) + " LIMIT " + param(limit) + ")" + where
	}
	// A compound select orders by its result's columns, here by number.
	at := func(column string) string { return strconv.Itoa(slices.Index(commentColumns, column) + 1) }
	return `WITH "k" AS (` + procs + ") " + end(first, "") + " UNION ALL " + end(last, " DESC") +
		" ORDER BY " + at(comment.FieldProcedureID) + ", " + at(comment.FieldCreatedAt) + ", " + at(comment.FieldID)
}

// sqliteKeysFrom is the number of the first of the SQLite statement's
// parameters that list procedures.
func sqliteKeysFrom(scoped bool) int {
	if scoped {
		return 4
	}
	return 3
}

// read returns the comments of the procedures keys that ctx's viewer can
// see (every procedure's, for the system context), each procedure's window
// w takes, oldest first as ent's query ordered by created_at and id
// returns them, stopping with payload_too_large once their text passes
// budget. A procedure without comments, or that ctx cannot see, has no
// page.
func (r *commentReader) read(ctx context.Context, keys []uuid.UUID, w CommentWindow, budget *textBudget) (map[uuid.UUID]*commentPage, error) {
	workspaceID, scoped, err := tenancy.Of(ctx)
	if err != nil {
		return nil, err
	}
	w = w.normal()
	args := make([]any, 0, 3+len(keys))
	if scoped {
		args = append(args, workspaceID)
	}
	args = append(args, w.First, w.Last)
	var query string
	if r.db.Dialect == dialect.Postgres {
		query, args = r.pg[index(scoped)], append(args, uuidArray(keys))
	} else {
		head, tail := r.sqliteHead[index(scoped)], r.sqliteTail[index(scoped)]
		var q strings.Builder
		q.Grow(len(head) + len(tail) + 6*len(keys))
		q.WriteString(head)
		n := sqliteKeysFrom(scoped)
		for i, k := range keys {
			if i > 0 {
				q.WriteByte(',')
			}
			q.WriteByte('?')
			q.WriteString(strconv.Itoa(n + i))
			args = append(args, k)
		}
		q.WriteString(tail)
		query = q.String()
	}
	var rows entsql.Rows
	if err := r.db.Driver().Query(ctx, query, args, &rows); err != nil {
		return nil, err
	}
	defer rows.Close()
	pages := make(map[uuid.UUID]*commentPage, len(keys))
	// One row's fields are scanned into scratch, through holders made once.
	var (
		scratch ent.Comment
		total   int
		last    *ent.Comment
	)
	dest := []any{database.UUID{ID: &scratch.ID}, database.UUID{ID: &scratch.WorkspaceID}, database.UUID{ID: &scratch.ProcedureID},
		database.UUID{ID: &scratch.AuthorID}, &scratch.Text, &scratch.CreatedAt, &scratch.UpdatedAt, &total}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		if last != nil && last.ID == scratch.ID {
			// Taken by both ends, and read twice (commentStatement).
			continue
		}
		if !budget.spend(len(scratch.Text)) {
			return nil, budget.err()
		}
		c := new(ent.Comment)
		c.ID, c.WorkspaceID, c.ProcedureID, c.AuthorID = scratch.ID, scratch.WorkspaceID, scratch.ProcedureID, scratch.AuthorID
		c.Text, c.CreatedAt, c.UpdatedAt = scratch.Text, scratch.CreatedAt, scratch.UpdatedAt
		p := pages[c.ProcedureID]
		if p == nil {
			p = &commentPage{window: w, total: total}
			pages[c.ProcedureID] = p
		}
		p.rows = append(p.rows, c)
		last = c
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, p := range pages {
		if len(p.rows) < w.First+w.Last {
			// Fewer than the window takes: every comment, whatever the
			// count said.
			p.total = len(p.rows)
		}
	}
	return pages, nil
}

// commentsFetch reads the windows w takes of the comments of keys through
// r, answering every key: a procedure without comments, or one the viewer
// cannot see, has an empty page.
func commentsFetch(r *commentReader) func(ctx context.Context, keys []uuid.UUID, w CommentWindow, budget *textBudget) (map[uuid.UUID]*commentPage, error) {
	return func(ctx context.Context, keys []uuid.UUID, w CommentWindow, budget *textBudget) (map[uuid.UUID]*commentPage, error) {
		pages, err := r.read(ctx, keys, w, budget)
		if err != nil {
			return nil, err
		}
		w = w.normal()
		for _, k := range keys {
			if pages[k] == nil {
				// Not nil: a GraphQL list field must not resolve to null.
				pages[k] = &commentPage{rows: []*ent.Comment{}, window: w}
			}
		}
		return pages, nil
	}
}
