package loader

import (
	"context"
	"strings"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/comment"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/viewer"
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
// Tenancy is the tenant interceptor's, by hand: the statement is scoped to
// the viewer's workspace, a context without a viewer reads nothing, and
// the system context (no tenancy) is left to ent.

// commentColumns are what readComments selects, in its scan order.
var commentColumns = []string{
	comment.FieldID, comment.FieldWorkspaceID, comment.FieldProcedureID, comment.FieldAuthorID,
	comment.FieldText, comment.FieldCreatedAt, comment.FieldUpdatedAt,
}

type commentReader struct {
	db *database.DB
	// selectFrom is the statement up to its WHERE clause.
	selectFrom string
	// pgQuery is the whole PostgreSQL statement: the procedures are one
	// uuid[] parameter.
	pgQuery string
}

func newCommentReader(db *database.DB) *commentReader {
	cols := make([]string, len(commentColumns))
	for i, c := range commentColumns {
		cols[i] = `"` + c + `"`
	}
	r := &commentReader{db: db, selectFrom: "SELECT " + strings.Join(cols, ", ") + ` FROM "` + comment.Table + `"`}
	r.pgQuery = r.selectFrom + ` WHERE "` + comment.FieldWorkspaceID + `" = $1 AND "` + comment.FieldProcedureID +
		`" = ANY($2::uuid[]) ORDER BY "` + comment.FieldCreatedAt + `", "` + comment.FieldID + `"`
	return r
}

// read returns the comments of the procedures keys that ctx's viewer can
// see, oldest first (then by id), as ent's query ordered by created_at and
// id returns them. ok is false for the system context, which this reader
// does not serve.
func (r *commentReader) read(ctx context.Context, keys []uuid.UUID) (cs []*ent.Comment, ok bool, err error) {
	if viewer.IsSystem(ctx) {
		return nil, false, nil
	}
	v := viewer.FromContext(ctx)
	if v == nil {
		return nil, true, viewer.ErrNoViewer
	}
	var (
		query string
		args  []any
	)
	if r.db.Dialect == dialect.Postgres {
		query, args = r.pgQuery, []any{v.WorkspaceID, uuidArray(keys)}
	} else {
		var q strings.Builder
		q.Grow(len(r.selectFrom) + 120 + 2*len(keys))
		q.WriteString(r.selectFrom)
		q.WriteString(` WHERE "` + comment.FieldWorkspaceID + `" = ? AND "` + comment.FieldProcedureID + `" IN (`)
		args = make([]any, 0, 1+len(keys))
		args = append(args, v.WorkspaceID)
		for i, k := range keys {
			if i > 0 {
				q.WriteByte(',')
			}
			q.WriteByte('?')
			args = append(args, k)
		}
		q.WriteString(`) ORDER BY "` + comment.FieldCreatedAt + `", "` + comment.FieldID + `"`)
		query = q.String()
	}
	var rows entsql.Rows
	if err := r.db.Driver().Query(ctx, query, args, &rows); err != nil {
		return nil, true, err
	}
	defer rows.Close()
	// One row's fields are scanned into scratch, through holders made once.
	var scratch ent.Comment
	dest := []any{database.UUID{ID: &scratch.ID}, database.UUID{ID: &scratch.WorkspaceID}, database.UUID{ID: &scratch.ProcedureID},
		database.UUID{ID: &scratch.AuthorID}, &scratch.Text, &scratch.CreatedAt, &scratch.UpdatedAt}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, true, err
		}
		c := new(ent.Comment)
		c.ID, c.WorkspaceID, c.ProcedureID, c.AuthorID = scratch.ID, scratch.WorkspaceID, scratch.ProcedureID, scratch.AuthorID
		c.Text, c.CreatedAt, c.UpdatedAt = scratch.Text, scratch.CreatedAt, scratch.UpdatedAt
		cs = append(cs, c)
	}
	return cs, true, rows.Err()
}
