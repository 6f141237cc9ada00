package loader

// The comments of procedures a list counted (PrimeListed): read whole,
// without looking the procedures up again, when every one holds no more
// than the window takes (docs/performance.md, "A procedure of any number
// of comments"). The windowed read they fall back to is comments.go's.

import (
	"context"
	"strings"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/comment"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/tenancy"
)

// wholeStatement is the statement of every comment of a list of procedures
// in dialect d, confined to the workspace of its first parameter when
// scoped, selecting commentColumnsOf(scoped, skip) (on SQLite all but the
// text packed into its first column: commentScanner), ordered by procedure,
// created_at and id: one index scan over the list of them, without
// looking the procedures up. Its parameters are that workspace (when
// scoped), the procedures, and on PostgreSQL a LIMIT: a uuid[] there; on
// SQLite a JSON array of their ids, so that the text is the same for any
// number of procedures (compiled once per connection) and binding it one
// call. SQLite reads the rows in the index's order, as they are asked
// for, so the caller bounds the read by stopping.
func wholeStatement(d string, scoped bool, skip CommentSkip) string {
	q := func(name string) string { return `"` + name + `"` }
	columns := commentColumnsOf(scoped, skip)
	var cols []string
	if d == dialect.SQLite {
		// The ids and times packed into one text (commentScanner).
		packed, plain := packedCommentColumns(columns)
		for i, c := range packed {
			packed[i] = q(c)
		}
		cols = append(cols, database.PackSQLite(packed, make([]bool, len(packed))))
		columns = plain
	}
	for _, c := range columns {
		cols = append(cols, q(c))
	}
	order := " ORDER BY " + q(comment.FieldProcedureID) + ", " + q(comment.FieldCreatedAt) + ", " + q(comment.FieldID)
	head := "SELECT " + strings.Join(cols, ", ") + " FROM " + q(comment.Table) + " WHERE "
	if d == dialect.Postgres {
		keys, limit := "$1", "$2"
		if scoped {
			head += q(tenancy.Column) + " = $1 AND "
			keys, limit = "$2", "$3"
		}
		return head + q(comment.FieldProcedureID) + " = ANY(" + keys + "::uuid[])" + order + " LIMIT " + limit
	}
	if scoped {
		// A unary plus: no type affinity, so that the UUID texts are
		// compared as they are, not first read as numbers
		// (docs/performance.md, "SQLite: packed columns, comparisons
		// without affinity").
		head += "+" + q(tenancy.Column) + " = ? AND "
	}
	return head + q(comment.FieldProcedureID) + " IN (SELECT " + q("value") + " FROM json_each(?))" + order
}

// readWhole reads every comment of the procedures keys, each known (from
// the read that found it) to hold at least one and no more than w takes,
// as read does but without looking the procedures up again: a page's total
// is what it holds, all read in one statement. The rows it takes are
// bounded by what the counts promise, First + Last a procedure: complete
// is false, and nothing kept, when they held more by the time of this read
// (comments added since), for the caller to read them as read does.
func (r *commentReader) readWhole(ctx context.Context, keys []uuid.UUID, w CommentWindow, skip CommentSkip, budget *textBudget) (pages map[uuid.UUID]*commentPage, complete bool, err error) {
	workspaceID, scoped, err := tenancy.Of(ctx)
	if err != nil {
		return nil, false, err
	}
	w, skip = w.normal(), skip&(commentSkips-1)
	bound := (w.First + w.Last) * len(keys)
	args := make([]any, 0, 3)
	if scoped {
		args = append(args, workspaceID)
	}
	if r.db.Dialect == dialect.Postgres {
		args = append(args, uuidArray(keys), bound+1)
	} else {
		args = append(args, uuidJSON(keys))
	}
	var rows entsql.Rows
	if err := r.db.Driver().Query(ctx, r.whole[index(scoped)][skip], args, &rows); err != nil {
		return nil, false, err
	}
	defer rows.Close()
	pages = make(map[uuid.UUID]*commentPage, len(keys))
	sc := newCommentScanner(r.columns[index(scoped)][skip], workspaceID, false, r.db.Dialect == dialect.SQLite)
	for n := 0; rows.Next(); n++ {
		if n == bound {
			return nil, false, nil
		}
		if err := rows.Scan(sc.dest...); err != nil {
			return nil, false, err
		}
		c, err := sc.comment(budget)
		if err != nil {
			return nil, false, err
		}
		p := pages[c.ProcedureID]
		if p == nil {
			p = &commentPage{window: w, skip: skip}
			pages[c.ProcedureID] = p
		}
		p.rows = append(p.rows, c)
		p.total++
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	return pages, true, nil
}

// commentsFetch reads the windows w takes of the comments of keys through
// r, in one statement, answering every key: a procedure without comments,
// or one the viewer cannot see, has an empty page. counted holds what the
// reads that found the procedures counted of their comments (nil: not
// known). When it counts every procedure, none beyond what w takes, those
// with comments have them all read without being looked up again
// (readWhole: half the statement's time for a page of procedures holding
// few) and the others none; otherwise (a procedure not counted, or one of
// more comments than w takes) every procedure is read as read does, in the
// statement that windows each procedure's comments, so that the request
// costs one statement whatever its procedures hold.
func commentsFetch(r *commentReader) func(ctx context.Context, keys []uuid.UUID, w CommentWindow, skip CommentSkip, budget *textBudget, counted map[uuid.UUID]int) (map[uuid.UUID]*commentPage, error) {
	return func(ctx context.Context, keys []uuid.UUID, w CommentWindow, skip CommentSkip, budget *textBudget, counted map[uuid.UUID]int) (map[uuid.UUID]*commentPage, error) {
		skip &= commentSkips - 1
		w = w.normal()
		var pages map[uuid.UUID]*commentPage
		few, ok := fewComments(keys, w, counted)
		if ok && len(few) > 0 {
			whole, complete, err := r.readWhole(ctx, few, w, skip, budget)
			if err != nil {
				return nil, err
			}
			ok, pages = complete, whole
		}
		if !ok {
			// Counts not known, or one no longer true (readWhole).
			found, err := r.read(ctx, keys, w, skip, budget)
			if err != nil {
				return nil, err
			}
			pages = found
		}
		if pages == nil {
			pages = make(map[uuid.UUID]*commentPage, len(keys))
		}
		for _, k := range keys {
			if pages[k] == nil {
				// Not nil: a GraphQL list field must not resolve to null.
				pages[k] = &commentPage{rows: []*ent.Comment{}, window: w, skip: skip}
			}
		}
		return pages, nil
	}
}

// fewComments returns the keys counted with comments when counted counts
// every key, none of more than w (normal) takes; ok is false otherwise.
func fewComments(keys []uuid.UUID, w CommentWindow, counted map[uuid.UUID]int) (few []uuid.UUID, ok bool) {
	if counted == nil {
		return nil, false
	}
	for _, k := range keys {
		n, known := counted[k]
		if !known || n > w.First+w.Last {
			return nil, false
		}
		if n > 0 {
			few = append(few, k)
		}
	}
	return few, true
}
