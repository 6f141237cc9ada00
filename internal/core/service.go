// Package core is procsvc's business layer: every rule about procedures,
// projects, categories, comments, members and tokens lives here once, and
// both faces (GraphQL resolvers and, through them, REST) call it.
//
// Tenancy is not checked here: the ent schema scopes every query and
// mutation to the viewer's workspace. Roles, validation, shortIds, positions
// and delete rules are.
package core

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/viewer"
)

// Generator produces a procedure's content at creation (see internal/generate).
type Generator interface {
	Generate(ctx context.Context, req GenerateRequest) (string, error)
}

// GenerateRequest is what a Generator is given.
type GenerateRequest struct {
	Name        string
	Content     string
	ContentType string
	DocStyle    string
	Language    string
}

// Service is the business layer over one ent client.
type Service struct {
	client    *ent.Client
	generator Generator
	now       func() time.Time
	totals    *totals
}

// Option configures a Service.
type Option func(*Service)

// WithGenerator sets the content generator used when generateProcedure is true.
func WithGenerator(g Generator) Option { return func(s *Service) { s.generator = g } }

// WithClock replaces the clock, for tests.
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// New returns a Service over client.
func New(client *ent.Client, opts ...Option) *Service {
	s := &Service{client: client, totals: newTotals(), now: func() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Client returns the ent client, for the dataloaders.
func (s *Service) Client() *ent.Client { return s.client }

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

// inTx runs fn in a transaction that first bumps the workspace's version.
// The bump takes the workspace row's write lock, so writes inside one
// workspace are serialised (shortIds and positions cannot race) and any cache
// keyed by the version is invalidated atomically with the write.
func (s *Service) inTx(ctx context.Context, v *viewer.Viewer, fn func(tx *ent.Tx, ws *ent.Workspace) error) error {
	tx, err := s.client.Tx(ctx)
	if err != nil {
		return apperr.Map(err)
	}
	ws, err := tx.Workspace.UpdateOneID(v.WorkspaceID).AddVersion(1).Save(ctx)
	if err == nil {
		err = fn(tx, ws)
	}
	if err != nil {
		_ = tx.Rollback()
		return apperr.Map(err)
	}
	if err := tx.Commit(); err != nil {
		return apperr.Map(err)
	}
	return nil
}

// parseID parses a client-supplied id for field. An id that is not a UUID is
// a validation error naming the field.
func parseID(field, s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		return uuid.Nil, apperr.Invalid(field, "must be an id")
	}
	return id, nil
}

// lookupID parses an id in a path or argument position: one that cannot name
// a record of kind is simply not found.
func lookupID(kind ids.Kind, what, s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil || len(s) != 36 || ids.KindOf(id) != kind {
		return uuid.Nil, apperr.NotFoundf(what)
	}
	return id, nil
}

// text validates a required single-line text field: trimmed, non-empty, at
// most max characters.
func text(val *apperr.Validation, field, s string, max int) string {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		val.Add(field, "is required")
	case !utf8.ValidString(s):
		val.Add(field, "must be valid UTF-8")
	case utf8.RuneCountInString(s) > max:
		val.Add(field, "must be at most %d characters", max)
	case strings.ContainsRune(s, 0):
		val.Add(field, "must not contain NUL characters")
	}
	return s
}

// Bounds of free-text fields, in characters.
const (
	MaxNameLen    = 500
	MaxTitleLen   = 200
	MaxContentLen = 200_000
	MaxCommentLen = 20_000
)

// storable reports a free-text value that PostgreSQL cannot store or compare
// (invalid UTF-8, or a NUL character, which text columns refuse), recording
// the error under field. SQLite would store it, so both databases refuse it
// here alike.
func storable(val *apperr.Validation, field, s string) bool {
	switch {
	case !utf8.ValidString(s):
		val.Add(field, "must be valid UTF-8")
	case strings.ContainsRune(s, 0):
		val.Add(field, "must not contain NUL characters")
	default:
		return true
	}
	return false
}
