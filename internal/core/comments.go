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

// AddComment adds the viewer's comment to a procedure.
// Errors: unauthenticated, forbidden, not_found (procedure), validation_failed.
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
	return stored(ctx, s, v, viewer.RoleMember, func(tx *ent.Tx, _ *viewer.Viewer) (*ent.Comment, error) {
		// Read as of the lock: a procedure deleted while the comment waited
		// is not_found, never a foreign-key conflict.
		p, err := findProcedure(ctx, tx.Client(), where)
		if err != nil {
			return nil, err
		}
		created, err := tx.Comment.Create().SetProcedureID(p.ID).SetAuthorID(v.MemberID).SetText(body).Save(ctx)
		if err != nil {
			return nil, err
		}
		return created, s.announce(ctx, tx, Change{WorkspaceID: v.WorkspaceID, Kind: ProcedureCommented, ProcedureID: p.ID, After: facetsOf(p)})
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
	return stored(ctx, s, v, viewer.RoleMember, func(tx *ent.Tx, me *viewer.Viewer) (*ent.Comment, error) {
		// An admin demoted while waiting may no longer edit others' comments.
		if err := mayEditComment(me, c); err != nil {
			return nil, err
		}
		updated, err := tx.Comment.UpdateOneID(c.ID).SetText(body).Save(ctx)
		if ent.IsNotFound(err) {
			return nil, apperr.NotFoundf("comment")
		}
		if err != nil {
			return nil, err
		}
		return updated, s.announce(ctx, tx, Change{WorkspaceID: v.WorkspaceID, Kind: ProcedureCommented, ProcedureID: c.ProcedureID})
	})
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
		return s.announce(ctx, tx, Change{WorkspaceID: v.WorkspaceID, Kind: ProcedureCommented, ProcedureID: c.ProcedureID})
	})
}
