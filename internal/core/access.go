package core

// Who a request acts as and what its ids name: the role check every call
// makes first, before any statement.

import (
	"context"
	"database/sql"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/event"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/viewer"
)

// require returns the viewer of ctx if its role is at least min.
// Errors: unauthenticated, forbidden.
func require(ctx context.Context, min viewer.Role) (*viewer.Viewer, error) {
	v := viewer.FromContext(ctx)
	if v == nil {
		return nil, apperr.New(apperr.Unauthenticated, "authentication required")
	}
	if !v.Role.AtLeast(min) {
		return nil, apperr.New(apperr.Forbidden, "this action needs the %s role", min)
	}
	return v, nil
}

// lookupID parses an id in a path or argument position: one that cannot name
// a record of kind is simply not found.
func lookupID(kind ids.Kind, what, s string) (uuid.UUID, error) {
	id, err := ids.Parse(s)
	if err != nil || ids.KindOf(id) != kind {
		return uuid.Nil, apperr.NotFoundf(what)
	}
	return id, nil
}

// target returns the acting viewer, of role min at least, and the id of the
// record of kind that id names, for a read or a write of that record.
// Errors: unauthenticated, forbidden, not_found.
func target(ctx context.Context, min viewer.Role, kind ids.Kind, what, id string) (*viewer.Viewer, uuid.UUID, error) {
	v, err := require(ctx, min)
	if err != nil {
		return nil, uuid.Nil, err
	}
	uid, err := lookupID(kind, what, id)
	if err != nil {
		return nil, uuid.Nil, err
	}
	return v, uid, nil
}

// getOne reads the record of kind that id names, for any viewer.
// Errors: unauthenticated, not_found.
func getOne[T any](ctx context.Context, kind ids.Kind, what, id string, get func(context.Context, uuid.UUID) (T, error)) (T, error) {
	var none T
	_, uid, err := target(ctx, viewer.RoleViewer, kind, what, id)
	if err != nil {
		return none, err
	}
	rec, err := get(ctx, uid)
	if ent.IsNotFound(err) {
		return none, apperr.NotFoundf(what)
	}
	return rec, apperr.Map(err)
}

// accessKinds are the logged writes that may take someone's access away:
// a member's role changed, the member removed or unlinked from its
// person, a token revoked.
var accessKinds = []string{string(EventMemberUpdated), string(EventMemberRemoved), string(EventMemberUnlinked), string(EventTokenRevoked)}

// AccessVersion returns the workspace version of the viewer's workspace's
// last logged write that may have taken someone's access away (0 when the
// log holds none). A subscription reads it after the records an event shows
// (graph/live): a subscriber whose credential was last checked at an older
// version must check it again before it is sent them, since they may be
// newer than its loss of access. Errors: unauthenticated; unavailable.
func (s *Service) AccessVersion(ctx context.Context) (int64, error) {
	if _, err := require(ctx, viewer.RoleViewer); err != nil {
		return 0, err
	}
	var rows []struct {
		Max sql.NullInt64 `json:"max"`
	}
	if err := s.client.Event.Query().Where(event.KindIn(accessKinds...)).Aggregate(ent.Max(event.FieldVersion)).Scan(ctx, &rows); err != nil {
		return 0, apperr.Map(err)
	}
	if len(rows) == 0 {
		return 0, nil
	}
	return rows[0].Max.Int64, nil
}
