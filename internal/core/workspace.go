package core

import (
	"context"
	"strings"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/member"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/auth"
	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/limits"
	"github.com/procsvc/procsvc/internal/viewer"
)

// NewWorkspace describes a workspace created by an operator, with its first
// admin.
type NewWorkspace struct {
	Name       string
	Key        string
	AdminName  string
	AdminEmail string
	// Secret, when set, becomes the admin token's secret instead of a random
	// one (PROCSVC_BOOTSTRAP_TOKEN).
	Secret string
}

// Bootstrapped is the outcome of CreateWorkspace.
type Bootstrapped struct {
	Workspace *ent.Workspace
	Admin     *ent.Member
	Token     *ent.Token
	Secret    string
}

// CreateWorkspace creates a workspace, its first ADMIN member and a token for
// that member. It is an operator action (CLI, first start) and runs outside
// any viewer.
// Errors: validation_failed, conflict (secret already in use).
func (s *Service) CreateWorkspace(ctx context.Context, in NewWorkspace) (*Bootstrapped, error) {
	val := &apperr.Validation{}
	name := text(val, "name", in.Name, MaxTitleLen)
	key := strings.ToUpper(strings.TrimSpace(in.Key))
	if key == "" {
		key = "PRC"
	}
	if !limits.WorkspaceKey.MatchString(key) {
		val.Add("key", "must be 2 to 10 letters A–Z")
	}
	adminName := text(val, "adminName", in.AdminName, MaxTitleLen)
	email := validEmail(val, in.AdminEmail)
	secret, hash := in.Secret, ""
	if secret == "" {
		secret, hash = auth.NewSecret()
	} else if !auth.ValidSecret(secret) {
		val.Add("token", "must be 16 to 200 visible ASCII characters")
	} else if auth.BadChecksum(secret) {
		// It would be refused without a lookup (docs/api.md, "Authentication").
		val.Add("token", "has the length and prefix of procsvc's checksummed secrets (%d characters starting %s) but not their checksum: choose another length, or let procsvc make one", auth.SecretLen, auth.SecretPrefix)
	} else {
		hash = auth.Hash(secret)
	}
	if err := val.Err(); err != nil {
		return nil, err
	}
	ctx = viewer.System(ctx)
	tx, err := s.client.Tx(ctx)
	if err != nil {
		return nil, apperr.Map(err)
	}
	out := &Bootstrapped{Secret: secret}
	err = func() error {
		var err error
		if out.Workspace, err = tx.Workspace.Create().SetName(name).SetKey(key).Save(ctx); err != nil {
			return err
		}
		if out.Admin, err = tx.Member.Create().SetWorkspaceID(out.Workspace.ID).SetName(adminName).
			SetEmail(email).SetRole(member.RoleADMIN).Save(ctx); err != nil {
			return err
		}
		out.Token, err = tx.Token.Create().SetWorkspaceID(out.Workspace.ID).SetMemberID(out.Admin.ID).
			SetName("bootstrap").SetSecretHash(hash).Save(ctx)
		return err
	}()
	if err != nil {
		_ = tx.Rollback()
		return nil, apperr.Map(err)
	}
	if err := tx.Commit(); err != nil {
		return nil, apperr.Map(err)
	}
	out.Workspace, out.Admin, out.Token = out.Workspace.Unwrap(), out.Admin.Unwrap(), out.Token.Unwrap()
	return out, nil
}

// HasWorkspace reports whether any workspace exists, so that a first start
// knows to bootstrap.
func (s *Service) HasWorkspace(ctx context.Context) (bool, error) {
	ok, err := s.client.Workspace.Query().Exist(viewer.System(ctx))
	return ok, apperr.Map(err)
}

// Workspaces lists every workspace, for operators.
func (s *Service) Workspaces(ctx context.Context) ([]*ent.Workspace, error) {
	ws, err := s.client.Workspace.Query().All(viewer.System(ctx))
	return ws, apperr.Map(err)
}

// ActAsAdmin returns a context acting as an active admin of workspace id, so
// that operator commands go through the same rules as API calls.
// Errors: not_found (no such workspace or no active admin).
func (s *Service) ActAsAdmin(ctx context.Context, workspaceID string) (context.Context, error) {
	id, err := ids.Parse(workspaceID)
	if err != nil {
		return nil, apperr.Invalid("workspace", "must be a workspace id")
	}
	admin, err := s.client.Member.Query().
		Where(member.WorkspaceID(id), member.RoleEQ(member.RoleADMIN), member.RemovedAtIsNil()).
		Order(member.ByCreatedAt()).First(viewer.System(ctx))
	if ent.IsNotFound(err) {
		return nil, apperr.New(apperr.NotFound, "no workspace %s with an active admin", workspaceID)
	}
	if err != nil {
		return nil, apperr.Map(err)
	}
	return viewer.NewContext(ctx, &viewer.Viewer{WorkspaceID: id, MemberID: admin.ID, Role: viewer.RoleAdmin}), nil
}
