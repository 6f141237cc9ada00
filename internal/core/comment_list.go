package core

// A procedure's comments as a list: oldest first (created_at, then id),
// paged by keyset cursors like every list. Pages without a cursor (the
// oldest or the newest n) are read for many procedures at once by
// internal/loader; CommentPage makes their list. Pages at a cursor are
// one procedure's, read by ProcedureComments.

import (
	"context"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/comment"
	"github.com/procsvc/procsvc/ent/predicate"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/viewer"
)

// Comment page sizes.
const (
	DefaultCommentPageSize = 20
	MaxCommentPageSize     = 100
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
// the viewer's tenancy), with their total.
// Errors: unauthenticated, validation_failed naming the argument.
func (s *Service) ProcedureComments(ctx context.Context, procedureID uuid.UUID, w Window) (*CommentList, error) {
	if _, err := require(ctx, viewer.RoleViewer); err != nil {
		return nil, err
	}
	k := commentKeyset(procedureID)
	return listPage(ctx, s, "comments", procedureID.String(), k, w, DefaultCommentPageSize, MaxCommentPageSize,
		func() (int, error) {
			return s.client.Comment.Query().Where(comment.ProcedureID(procedureID)).Count(ctx)
		},
		func(sl slice) ([]*ent.Comment, error) {
			rows, err := s.client.Comment.Query().Where(comment.ProcedureID(procedureID)).
				Where(where[predicate.Comment](&sl)...).Order(orderBy[comment.OrderOption](&sl)).
				Offset(sl.offset).Limit(sl.limit).All(ctx)
			return rows, apperr.Map(err)
		})
}
