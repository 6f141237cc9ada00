package core

// A procedure's comments as a list: oldest first (created_at, then id),
// paged by keyset cursors like every list. Pages without a cursor (the
// oldest or the newest n) are read for many procedures at once by
// internal/loader; CommentPage makes their list. Pages at a cursor are
// one procedure's, read by ProcedureComments.

import (
	"context"

	"entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/comment"
	"github.com/procsvc/procsvc/ent/predicate"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/limits"
	"github.com/procsvc/procsvc/internal/viewer"
)

// Comment page sizes: the most one page shows is limits.CommentPage, which
// bounds what a response shows of a procedure's comments, however many it
// holds.
const (
	DefaultCommentPageSize = 20
	MaxCommentPageSize     = limits.CommentPage
)

// CommentList is one page of a procedure's comments and how many it holds.
type CommentList = List[ent.Comment]

func commentKeyset(procedureID uuid.UUID) keyset[ent.Comment] {
	return keyset[ent.Comment]{
		scope:  scopeOf("comments", procedureID.String()),
		column: comment.FieldCreatedAt,
		key:    func(c *ent.Comment) any { return c.CreatedAt },
		id:     func(c *ent.Comment) uuid.UUID { return c.ID },
	}
}

// commentOrder is a comment list's keyset without its scope: what
// checking a window without cursors needs.
var commentOrder = keyset[ent.Comment]{column: comment.FieldCreatedAt}

// CommentWindow checks w, a window without cursors, and returns how many
// comments it takes from which end: the oldest n, or the newest when
// newest. Errors: validation_failed naming the argument.
func CommentWindow(w Window) (n int, newest bool, err error) {
	sl, err := commentOrder.plan(Window{First: w.First, Last: w.Last}, DefaultCommentPageSize, MaxCommentPageSize)
	if err != nil {
		return 0, false, err
	}
	return sl.size, sl.backward, nil
}

// CommentPage is the list of the comments rows of procedureID, the oldest
// or (newest) the newest of its total, as CommentWindow took them, oldest
// first.
func CommentPage(procedureID uuid.UUID, rows []*ent.Comment, total int, newest bool) *CommentList {
	more := len(rows) < total
	info := PageInfo{HasNextPage: more}
	if newest {
		info = PageInfo{HasPreviousPage: more}
	}
	// The keyset (its scope, a digest) is made only if a cursor is asked
	// for: a page of procedures shows hundreds of comment lists, most
	// without cursors.
	var k *keyset[ent.Comment]
	cursor := func(c *ent.Comment) Cursor {
		if k == nil {
			ks := commentKeyset(procedureID)
			k = &ks
		}
		return k.cursor(c)
	}
	return &CommentList{Items: rows, Total: total, PageInfo: info, cursor: cursor}
}

// ProcedureComments returns the page w selects of the comments of the
// procedure procedureID (one the viewer can see: its parent was read with
// the viewer's tenancy), with their total: the procedure's comment_count,
// which the database keeps (internal/database), so that the total is one
// row however many comments the procedure holds, and the page the rows of
// an index range (see commentsFrom for REST's page numbers). A procedure
// gone meanwhile has none.
// Errors: unauthenticated, validation_failed naming the argument.
func (s *Service) ProcedureComments(ctx context.Context, procedureID uuid.UUID, w Window) (*CommentList, error) {
	if _, err := require(ctx, viewer.RoleViewer); err != nil {
		return nil, err
	}
	k := commentKeyset(procedureID)
	return listPage(ctx, s, "comments", procedureID.String(), k, w, DefaultCommentPageSize, MaxCommentPageSize,
		func(ctx context.Context) (int, error) {
			n, err := s.client.Procedure.Query().Where(procedure.ID(procedureID)).Select(procedure.FieldCommentCount).Ints(ctx)
			if err != nil || len(n) == 0 {
				return 0, err
			}
			return n[0], nil
		},
		func(sl slice) ([]*ent.Comment, error) {
			q := s.client.Comment.Query().Where(comment.ProcedureID(procedureID)).Where(where[predicate.Comment](&sl)...)
			if sl.offset > 0 {
				q.Where(commentsFrom(procedureID, sl.offset))
			}
			rows, err := q.Order(orderBy[comment.OrderOption](&sl)).Limit(sl.limit).All(ctx)
			return rows, apperr.Map(err)
		})
}

// commentsFrom is the predicate of the comments of procedureID from the
// one at offset on (oldest first), for a page by number (REST's page): the
// comments before it are skipped in the index on (procedure_id,
// created_at, id) alone, by a subquery that reads their keys, rather than
// by an OFFSET, which would read each skipped row (its text too) before
// discarding it. An offset past the last comment matches nothing. The
// subquery reads the keys of one procedure the viewer can see (its caller
// read it with the viewer's tenancy), and the query it bounds is confined
// to the viewer's workspace by ent's interceptor.
func commentsFrom(procedureID uuid.UUID, offset int) predicate.Comment {
	return func(s *sql.Selector) {
		s.Where(sql.P(func(b *sql.Builder) {
			b.WriteString("(" + s.C(comment.FieldCreatedAt) + ", " + s.C(comment.FieldID) + ") >= (SELECT ").
				Ident(comment.FieldCreatedAt).Comma().Ident(comment.FieldID).
				WriteString(" FROM ").Ident(comment.Table).WriteString(" WHERE ").Ident(comment.FieldProcedureID).WriteString(" = ").Arg(procedureID).
				WriteString(" ORDER BY ").Ident(comment.FieldCreatedAt).Comma().Ident(comment.FieldID).
				WriteString(" LIMIT 1 OFFSET ").Arg(offset).WriteString(")")
		}))
	}
}
