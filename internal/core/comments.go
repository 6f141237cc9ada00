package core

import (
	"context"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/comment"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/viewer"
)

// Comment returns one comment. Errors: unauthenticated, not_found.
func (s *Service) Comment(ctx context.Context, id string) (*ent.Comment, error) {
	return getOne(ctx, ids.KindComment, "comment", id, s.client.Comment.Get)
}

// AddComment adds the viewer's comment to a procedure. A procedure holds
// any number of comments: what a response shows of them is bounded where
// they are read (a page of them, docs/api.md).
// Errors: unauthenticated, forbidden, not_found (procedure),
// validation_failed.
func (s *Service) AddComment(ctx context.Context, procedureID, body string) (*ent.Comment, error) {
	v, err := require(ctx, viewer.RoleMember)
	if err != nil {
		return nil, err
	}
	val := &apperr.Validation{}
	body = text(val, "text", body, MaxCommentLen)
	if err := val.Err(); err != nil {
		return nil, err
	}
	where, err := procedureKey(procedureID)
	if err != nil {
		return nil, err
	}
	// The procedure is read as of the lock (with the acting member): one
	// deleted while the comment waited is not_found, never a foreign-key
	// conflict.
	return storedOn(ctx, s, v, lockExclusive, where, func(tx *ent.Tx, me *viewer.Viewer, p *ent.Procedure) (*ent.Comment, error) {
		created, err := tx.Comment.Create().SetProcedureID(p.ID).SetAuthorID(v.MemberID).SetText(body).Save(ctx)
		if err != nil {
			return nil, err
		}
		c := Change{WorkspaceID: v.WorkspaceID, Kind: ProcedureCommented, ProcedureID: p.ID, After: facetsOf(p)}
		return created, s.finishWith(tx, commentFinish(EventCommentCreated, c, &p.ProjectID, nil, created))
	})
}

// mayEditComment lets authors edit their own comments and admins any.
func mayEditComment(v *viewer.Viewer, c *ent.Comment) error {
	if c.AuthorID != v.MemberID && v.Role != viewer.RoleAdmin {
		return apperr.New(apperr.Forbidden, "only the author or an admin may change this comment")
	}
	return nil
}

// UpdateComment replaces a comment's text.
// Errors: unauthenticated, forbidden, not_found, validation_failed.
func (s *Service) UpdateComment(ctx context.Context, id, body string) (*ent.Comment, error) {
	v, err := require(ctx, viewer.RoleMember)
	if err != nil {
		return nil, err
	}
	c, err := s.Comment(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := mayEditComment(v, c); err != nil {
		return nil, err
	}
	val := &apperr.Validation{}
	body = text(val, "text", body, MaxCommentLen)
	if err := val.Err(); err != nil {
		return nil, err
	}
	var updated *ent.Comment
	err = s.inTx(ctx, v, viewer.RoleMember, func(tx *ent.Tx, me *viewer.Viewer) error {
		// An admin demoted while waiting may no longer edit others' comments.
		if err := mayEditComment(me, c); err != nil {
			return err
		}
		u := tx.Comment.Update().Where(comment.ID(c.ID)).SetText(body)
		n, err := u.Save(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			return apperr.NotFoundf("comment")
		}
		if updated = updatedComment(c, u.Mutation()); updated == nil {
			if updated, err = tx.Comment.Get(ctx, c.ID); err != nil {
				return err
			}
			updated = updated.Unwrap()
		}
		change := Change{WorkspaceID: v.WorkspaceID, Kind: ProcedureCommented, ProcedureID: c.ProcedureID}
		return s.finishWith(tx, commentFinish(EventCommentUpdated, change, nil, c, updated))
	})
	if err != nil {
		return nil, err
	}
	return updated, nil
}

// updatedComment is c, read before the write, as the UPDATE that sent m
// left it, without reading it back: m sets the text and updatedAt (its
// update default), the only fields of a comment that ever change, so the
// others of c, though read before the lock, are still the row's (the
// UPDATE matched it, ids are never reused). nil when m leaves either
// unset, or sends what Applied cannot know the stored form of
// (sentExactly): the row is then read back.
func updatedComment(c *ent.Comment, m *ent.CommentMutation) *ent.Comment {
	_, okText := m.Text()
	_, okAt := m.UpdatedAt()
	if !okText || !okAt || !sentExactly(m) {
		return nil
	}
	after, ok := c.Applied(m)
	if !ok {
		return nil
	}
	return after
}

// DeleteComment removes a comment.
// Errors: unauthenticated, forbidden, not_found.
func (s *Service) DeleteComment(ctx context.Context, id string) error {
	v, err := require(ctx, viewer.RoleMember)
	if err != nil {
		return err
	}
	c, err := s.Comment(ctx, id)
	if err != nil {
		return err
	}
	if err := mayEditComment(v, c); err != nil {
		return err
	}
	return s.inTx(ctx, v, viewer.RoleMember, func(tx *ent.Tx, me *viewer.Viewer) error {
		if err := mayEditComment(me, c); err != nil {
			return err
		}
		n, err := tx.Comment.Delete().Where(comment.ID(c.ID)).Exec(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			return apperr.NotFoundf("comment")
		}
		change := Change{WorkspaceID: v.WorkspaceID, Kind: ProcedureCommented, ProcedureID: c.ProcedureID}
		return s.finishWith(tx, commentFinish(EventCommentDeleted, change, nil, c, nil))
	})
}
