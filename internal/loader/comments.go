package loader

import (
	"context"
	"strings"
	"sync/atomic"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/comment"
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
// A procedure holds at most limits.CommentsPerProcedure comments, but one
// written before that bound may hold more: the statement reads, for every
// procedure of the page at once, only the window of its comments the
// request shows (a window function numbers each procedure's comments), and
// it stops reading once the text it read passes the request's bound.
//
// Tenancy is internal/tenancy's, as the tenant interceptor applies it: the
// statement is confined to the viewer's workspace, a context without a
// viewer reads nothing, and the system context (no tenancy) is left to ent.

// CommentWindow names which of a procedure's comments, oldest first, a read
// or a view takes: its First oldest and its Last newest (a procedure with
// fewer gives them all). The zero window is the default view of a
// procedure's comments: its newest limits.CommentsPerProcedure, which are
// all of them for every procedure within the bound.
type CommentWindow struct{ First, Last int }

// DefaultCommentWindow is what the zero CommentWindow stands for.
var DefaultCommentWindow = CommentWindow{Last: limits.CommentsPerProcedure}

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
	// pgQuery is the whole PostgreSQL statement: the procedures are one
	// uuid[] parameter, the window two more.
	pgQuery string
	// sqlite is the SQLite statement around its list of procedures.
	sqliteHead, sqliteTail string
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
	cols := make([]string, len(commentColumns))
	for i, c := range commentColumns {
		cols[i] = `"` + c + `"`
	}
	list := strings.Join(cols, ", ")
	// Each procedure's comments are numbered oldest first (rn) and counted
	// (n); the window keeps the first and the last of them.
	inner := "SELECT " + list + `, ROW_NUMBER() OVER (PARTITION BY "` + comment.FieldProcedureID + `" ORDER BY "` +
		comment.FieldCreatedAt + `", "` + comment.FieldID + `") AS "rn", COUNT(*) OVER (PARTITION BY "` +
		comment.FieldProcedureID + `") AS "n" FROM "` + comment.Table + `" WHERE "` + tenancy.Column + `" = `
	outer := func(inner string, first, last string) string {
		return "SELECT " + list + `, "n" FROM (` + inner + `) AS "c" WHERE "rn" <= ` + first + ` OR "rn" > "n" - ` + last +
			` ORDER BY "` + comment.FieldProcedureID + `", "rn"`
	}
	r := &commentReader{db: db}
	r.pgQuery = outer(inner+`$1 AND "`+comment.FieldProcedureID+`" = ANY($2::uuid[])`, "$3", "$4")
	head, tail, _ := strings.Cut(outer(inner+`? AND "`+comment.FieldProcedureID+`" IN (@)`, "?", "?"), "@")
	r.sqliteHead, r.sqliteTail = head, tail
	return r
}

// read returns the comments of the procedures keys that ctx's viewer can
// see, each procedure's window w takes (as ent's query ordered by
// created_at and id returns them, numbered), stopping with
// payload_too_large once their text passes budget. ok is false for the
// system context, which this reader does not serve.
func (r *commentReader) read(ctx context.Context, keys []uuid.UUID, w CommentWindow, budget *textBudget) (pages map[uuid.UUID]*commentPage, ok bool, err error) {
	workspaceID, scoped, err := tenancy.Of(ctx)
	if err != nil || !scoped {
		return nil, scoped, err
	}
	w = w.normal()
	var (
		query string
		args  []any
	)
	if r.db.Dialect == dialect.Postgres {
		query, args = r.pgQuery, []any{workspaceID, uuidArray(keys), w.First, w.Last}
	} else {
		var q strings.Builder
		q.Grow(len(r.sqliteHead) + len(r.sqliteTail) + 2*len(keys))
		q.WriteString(r.sqliteHead)
		args = make([]any, 0, 3+len(keys))
		args = append(args, workspaceID)
		for i, k := range keys {
			if i > 0 {
				q.WriteByte(',')
			}
			q.WriteByte('?')
			args = append(args, k)
		}
		q.WriteString(r.sqliteTail)
		query, args = q.String(), append(args, w.First, w.Last)
	}
	var rows entsql.Rows
	if err := r.db.Driver().Query(ctx, query, args, &rows); err != nil {
		return nil, true, err
	}
	defer rows.Close()
	pages = make(map[uuid.UUID]*commentPage, len(keys))
	// One row's fields are scanned into scratch, through holders made once.
	var (
		scratch ent.Comment
		total   int
	)
	dest := []any{database.UUID{ID: &scratch.ID}, database.UUID{ID: &scratch.WorkspaceID}, database.UUID{ID: &scratch.ProcedureID},
		database.UUID{ID: &scratch.AuthorID}, &scratch.Text, &scratch.CreatedAt, &scratch.UpdatedAt, &total}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, true, err
		}
		if !budget.spend(len(scratch.Text)) {
			return nil, true, budget.err()
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
	}
	return pages, true, rows.Err()
}

// windowed is read's answer from every comment of some procedures, oldest
// first (ent's read, for the system context).
func windowed(all []*ent.Comment, w CommentWindow, budget *textBudget) (map[uuid.UUID]*commentPage, error) {
	w = w.normal()
	pages := map[uuid.UUID]*commentPage{}
	var order []uuid.UUID
	for _, c := range all {
		p := pages[c.ProcedureID]
		if p == nil {
			p = &commentPage{window: w}
			pages[c.ProcedureID] = p
			order = append(order, c.ProcedureID)
		}
		p.rows = append(p.rows, c)
	}
	for _, id := range order {
		p := pages[id]
		p.total = len(p.rows)
		p.rows = p.view(w)
		for _, c := range p.rows {
			if !budget.spend(len(c.Text)) {
				return nil, budget.err()
			}
		}
	}
	return pages, nil
}

// commentsFetch reads the windows w takes of the comments of keys through
// r (ent for the system context), answering every key: a procedure
// without comments, or one the viewer cannot see, has an empty page.
func commentsFetch(client *ent.Client, r *commentReader) func(ctx context.Context, keys []uuid.UUID, w CommentWindow, budget *textBudget) (map[uuid.UUID]*commentPage, error) {
	return func(ctx context.Context, keys []uuid.UUID, w CommentWindow, budget *textBudget) (map[uuid.UUID]*commentPage, error) {
		pages, ok, err := r.read(ctx, keys, w, budget)
		if !ok {
			var all []*ent.Comment
			all, err = client.Comment.Query().Where(comment.ProcedureIDIn(keys...)).
				Order(comment.ByCreatedAt(), comment.ByID()).All(ctx)
			if err == nil {
				pages, err = windowed(all, w, budget)
			}
		}
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
