package core

import (
	"context"
	"net/mail"
	"strings"
	"time"

	"entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/member"
	"github.com/procsvc/procsvc/ent/predicate"
	"github.com/procsvc/procsvc/ent/token"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/auth"
	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/limits"
	"github.com/procsvc/procsvc/internal/viewer"
)

// MemberList is a page of members and the count of all that match.
type MemberList = List[ent.Member]

// MemberInput adds a member (Name, Email required; Role defaults to MEMBER)
// or, with fields set, updates one (Email cannot change).
type MemberInput struct {
	Name  Optional[string]
	Email Optional[string]
	Role  Optional[string]
}

// Viewer returns the member the request acts as.
// Errors: unauthenticated.
func (s *Service) Viewer(ctx context.Context) (*ent.Member, error) {
	v, err := require(ctx, viewer.RoleViewer)
	if err != nil {
		return nil, err
	}
	m, err := s.client.Member.Get(ctx, v.MemberID)
	return m, apperr.Map(err)
}

// Workspace returns the viewer's workspace. Errors: unauthenticated.
func (s *Service) Workspace(ctx context.Context) (*ent.Workspace, error) {
	v, err := require(ctx, viewer.RoleViewer)
	if err != nil {
		return nil, err
	}
	w, err := s.client.Workspace.Get(ctx, v.WorkspaceID)
	return w, apperr.Map(err)
}

// FindMembers lists the workspace's current members by name; the search
// matches names and email addresses.
// Errors: unauthenticated, validation_failed.
func (s *Service) FindMembers(ctx context.Context, f ListFilter, w Window) (*MemberList, error) {
	return findNamed(ctx, s, "members", f, w, func(m *ent.Member) uuid.UUID { return m.ID }, func(m *ent.Member) string { return m.Name },
		func(term string, sl *slice) *ent.MemberQuery {
			q := s.client.Member.Query().Where(member.RemovedAtIsNil())
			if term != "" {
				q.Where(member.Or(member.NameContainsFold(term), member.EmailContainsFold(term)))
			}
			if sl != nil {
				q.Where(where[predicate.Member](sl)...).Order(orderBy[member.OrderOption](sl))
			}
			return q
		})
}

// Member returns one member, current or removed.
// Errors: unauthenticated, not_found.
func (s *Service) Member(ctx context.Context, id string) (*ent.Member, error) {
	return getOne(ctx, ids.KindMember, "member", id, s.client.Member.Get)
}

func validEmail(val *apperr.Validation, s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		val.Add("email", "is required")
		return s
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || len(s) > limits.Email {
		val.Add("email", "must be an email address")
	}
	return s
}

func validRole(val *apperr.Validation, s string) viewer.Role {
	oneOf(val, "role", s, member.RoleValues()...)
	return viewer.Role(s)
}

// AddMember adds a member to the viewer's workspace.
// Errors: unauthenticated, forbidden, validation_failed, conflict (email taken).
func (s *Service) AddMember(ctx context.Context, in MemberInput) (*ent.Member, error) {
	v, err := require(ctx, viewer.RoleAdmin)
	if err != nil {
		return nil, err
	}
	val := &apperr.Validation{}
	var name, email string
	if in.Name.Value != nil {
		name = *in.Name.Value
	}
	if in.Email.Value != nil {
		email = *in.Email.Value
	}
	name = text(val, "name", name, MaxTitleLen)
	email = validEmail(val, email)
	role := viewer.RoleMember
	if in.Role.Value != nil {
		role = validRole(val, *in.Role.Value)
	}
	if err := val.Err(); err != nil {
		return nil, err
	}
	return stored(ctx, s, v, viewer.RoleAdmin, func(tx *ent.Tx, me *viewer.Viewer) (*ent.Member, error) {
		taken, err := tx.Member.Query().Where(member.Email(email)).Exist(ctx)
		if err != nil {
			return nil, err
		}
		if taken {
			return nil, apperr.New(apperr.Conflict, "a member with this email already exists in the workspace")
		}
		added, err := tx.Member.Create().SetName(name).SetEmail(email).SetRole(member.Role(role)).Save(ctx)
		if err != nil {
			return nil, err
		}
		return added, s.finishWith(tx, recordFinish(EventMemberAdded, added.ID, nil, memberFields(added)))
	})
}

// guardLastAdmin refuses a change that would leave the workspace without an
// active admin.
func guardLastAdmin(ctx context.Context, tx *ent.Tx, m *ent.Member) error {
	if m.Role != member.RoleADMIN {
		return nil
	}
	admins, err := tx.Member.Query().Where(member.RoleEQ(member.RoleADMIN), member.RemovedAtIsNil()).Count(ctx)
	if err != nil {
		return err
	}
	if admins <= 1 {
		return apperr.New(apperr.Conflict, "the workspace must keep at least one admin")
	}
	return nil
}

// currentMember reads a current (not removed) member through c: the
// client, or a write's tx.Client() to read it as of the workspace lock.
// Errors: not_found.
func currentMember(ctx context.Context, c *ent.Client, id uuid.UUID) (*ent.Member, error) {
	m, err := c.Member.Query().Where(member.ID(id), member.RemovedAtIsNil()).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, apperr.NotFoundf("member")
	}
	return m, apperr.Map(err)
}

// UpdateMember renames a member or changes its role.
// Errors: unauthenticated, forbidden, not_found, validation_failed, conflict.
//
// The member is read inside the write's transaction: its role as of the
// lock decides whether the last-admin guard applies.
func (s *Service) UpdateMember(ctx context.Context, id string, in MemberInput) (*ent.Member, error) {
	v, mid, err := target(ctx, viewer.RoleAdmin, ids.KindMember, "member", id)
	if err != nil {
		return nil, err
	}
	val := &apperr.Validation{}
	name, hasName := required(val, "name", in.Name)
	if hasName {
		name = text(val, "name", name, MaxTitleLen)
	}
	if in.Email.Set {
		val.Add("email", "cannot be changed; add a new member instead")
	}
	var role viewer.Role
	r, hasRole := required(val, "role", in.Role)
	if hasRole {
		role = validRole(val, r)
	}
	if err := val.Err(); err != nil {
		if _, nf := currentMember(ctx, s.client, mid); nf != nil {
			return nil, nf
		}
		return nil, err
	}
	return stored(ctx, s, v, viewer.RoleAdmin, func(tx *ent.Tx, me *viewer.Viewer) (*ent.Member, error) {
		m, err := currentMember(ctx, tx.Client(), mid)
		if err != nil {
			return nil, err
		}
		u := tx.Member.UpdateOneID(m.ID)
		if hasName {
			u.SetName(name)
		}
		if hasRole && string(role) != string(m.Role) {
			if err := guardLastAdmin(ctx, tx, m); err != nil {
				return nil, err
			}
			u.SetRole(member.Role(role))
		}
		updated, err := u.Save(ctx)
		if err != nil {
			return nil, err
		}
		if updated.Role != m.Role {
			return updated, s.finishWith(tx, accessFinish(v.WorkspaceID, EventMemberUpdated, m.ID, memberFields(m), memberFields(updated)))
		}
		return updated, s.finishWith(tx, recordFinish(EventMemberUpdated, m.ID, memberFields(m), memberFields(updated)))
	})
}

// RemoveMember removes a member: their tokens stop working at once (answering
// disconnected), while procedures and comments keep naming them. Their
// writes still waiting on the workspace lock answer disconnected too (inTx
// re-reads the acting member), and from then on no procedure can be assigned
// to them (checkRefs in the transaction).
// Errors: unauthenticated, forbidden, not_found, conflict (last admin).
func (s *Service) RemoveMember(ctx context.Context, id string) (*ent.Member, error) {
	v, mid, err := target(ctx, viewer.RoleAdmin, ids.KindMember, "member", id)
	if err != nil {
		return nil, err
	}
	return stored(ctx, s, v, viewer.RoleAdmin, func(tx *ent.Tx, me *viewer.Viewer) (*ent.Member, error) {
		m, err := currentMember(ctx, tx.Client(), mid)
		if err != nil {
			return nil, err
		}
		if err := guardLastAdmin(ctx, tx, m); err != nil {
			return nil, err
		}
		now := s.now()
		if err := tx.Token.Update().Where(token.MemberID(m.ID), token.RevokedAtIsNil()).SetRevokedAt(now).Exec(ctx); err != nil {
			return nil, err
		}
		removed, err := tx.Member.UpdateOneID(m.ID).SetRemovedAt(now).Save(ctx)
		if err != nil {
			return nil, err
		}
		return removed, s.finishWith(tx, accessFinish(v.WorkspaceID, EventMemberRemoved, m.ID, memberFields(m), nil))
	})
}

// UnlinkMember unlinks a member from the identity provider's person it is
// linked to (docs/api.md, "Unlinking"): that person's next request is
// refused though their provider's token is still valid, their
// subscriptions are checked again (member.unlinked is an access change),
// and signing in never links them to this member again (internal/auth
// skips the person recorded as unlinked); another person with the same
// verified email may link. The member's pms_ tokens are untouched. A
// member not linked is returned as it is, with nothing written: a retried
// request succeeds alike. An admin cannot unlink themselves: signed in
// through the link, they would lock themselves out, the workspace's last
// admin with it; another admin can.
// Errors: unauthenticated, forbidden, not_found (removed members too),
// conflict (oneself).
func (s *Service) UnlinkMember(ctx context.Context, id string) (*ent.Member, error) {
	v, mid, err := target(ctx, viewer.RoleAdmin, ids.KindMember, "member", id)
	if err != nil {
		return nil, err
	}
	if mid == v.MemberID {
		return nil, apperr.New(apperr.Conflict, "an admin cannot unlink themselves (another admin can)")
	}
	// A member not linked, as of the workspace lock: the transaction is
	// rolled back (its version bump with it) and the member returned.
	var notLinked *ent.Member
	unlinked, err := stored(ctx, s, v, viewer.RoleAdmin, func(tx *ent.Tx, me *viewer.Viewer) (*ent.Member, error) {
		notLinked = nil
		m, err := currentMember(ctx, tx.Client(), mid)
		if err != nil {
			return nil, err
		}
		if m.OidcIssuer == nil {
			notLinked = m.Unwrap()
			return nil, errNothingToWrite
		}
		unlinked, err := tx.Member.UpdateOneID(m.ID).
			SetOidcUnlinkedIssuer(*m.OidcIssuer).SetNillableOidcUnlinkedSubject(m.OidcSubject).
			ClearOidcIssuer().ClearOidcSubject().Save(ctx)
		if err != nil {
			return nil, err
		}
		// No field the API shows changed: the event lists no changes (the
		// person is not shown to every reader of the log).
		fs := memberFields(m)
		return unlinked, s.finishWith(tx, accessFinish(v.WorkspaceID, EventMemberUnlinked, m.ID, fs, fs))
	})
	if notLinked != nil {
		return notLinked, nil
	}
	return unlinked, err
}

// AllowMemberLink lets the person last unlinked from a member
// (UnlinkMember) link to it again: internal/auth links them at their next
// sign-in with the member's verified email, as any person not unlinked.
// It gives no access by itself (the person still signs in to be linked),
// so it is logged (member.link_allowed) but is no access change. A member
// no one was unlinked from is returned as it is, with nothing written.
// Errors: unauthenticated, forbidden, not_found (removed members too).
func (s *Service) AllowMemberLink(ctx context.Context, id string) (*ent.Member, error) {
	v, mid, err := target(ctx, viewer.RoleAdmin, ids.KindMember, "member", id)
	if err != nil {
		return nil, err
	}
	var unchanged *ent.Member
	allowed, err := stored(ctx, s, v, viewer.RoleAdmin, func(tx *ent.Tx, me *viewer.Viewer) (*ent.Member, error) {
		unchanged = nil
		m, err := currentMember(ctx, tx.Client(), mid)
		if err != nil {
			return nil, err
		}
		if m.OidcUnlinkedIssuer == nil {
			unchanged = m.Unwrap()
			return nil, errNothingToWrite
		}
		allowed, err := tx.Member.UpdateOneID(m.ID).ClearOidcUnlinkedIssuer().ClearOidcUnlinkedSubject().Save(ctx)
		if err != nil {
			return nil, err
		}
		fs := memberFields(m)
		return allowed, s.finishWith(tx, recordFinish(EventMemberLinkAllowed, m.ID, fs, fs))
	})
	if unchanged != nil {
		return unchanged, nil
	}
	return allowed, err
}

// errNothingToWrite rolls back a write that finds, as of the workspace
// lock, that it has nothing to write; its caller answers without it.
var errNothingToWrite = apperr.New(apperr.Conflict, "nothing to write")

// TokenInput creates a token for a member (the viewer when MemberID is empty).
type TokenInput struct {
	MemberID  string
	Name      string
	ExpiresAt *time.Time
}

// CreateToken issues a token and returns it with its secret, which is shown
// only this once.
// Errors: unauthenticated, forbidden, validation_failed.
func (s *Service) CreateToken(ctx context.Context, in TokenInput) (*ent.Token, string, error) {
	v, err := require(ctx, viewer.RoleAdmin)
	if err != nil {
		return nil, "", err
	}
	val := &apperr.Validation{}
	memberID := v.MemberID
	if in.MemberID != "" {
		if id := optionalID(val, "memberId", in.MemberID); id != nil {
			memberID = *id
		}
	}
	name := strings.TrimSpace(in.Name)
	bounded(val, "name", name, MaxTitleLen)
	if in.ExpiresAt != nil && !in.ExpiresAt.After(s.now()) {
		val.Add("expiresAt", "must be in the future")
	}
	if err := val.Err(); err != nil {
		return nil, "", err
	}
	secret, hash := auth.NewSecret()
	created, err := stored(ctx, s, v, viewer.RoleAdmin, func(tx *ent.Tx, me *viewer.Viewer) (*ent.Token, error) {
		// As of the lock: never a token for a member removed meanwhile.
		ok, err := tx.Member.Query().Where(member.ID(memberID), member.RemovedAtIsNil()).Exist(ctx)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, apperr.Invalid("memberId", "no such member in this workspace")
		}
		issued, err := tx.Token.Create().SetMemberID(memberID).SetName(name).SetSecretHash(hash).
			SetNillableExpiresAt(utc(in.ExpiresAt)).Save(ctx)
		if err != nil {
			return nil, err
		}
		return issued, s.finishWith(tx, recordFinish(EventTokenCreated, issued.ID, nil, tokenFields(issued)))
	})
	if err != nil {
		return nil, "", err
	}
	return created, secret, nil
}

// tokenReaders is the least role that reads tokens: their list, and their
// events in the change log, which show as much (visibleEvents).
const tokenReaders = viewer.RoleAdmin

// Tokens lists the workspace's tokens, newest first (secrets are never
// shown). Errors: unauthenticated, forbidden.
func (s *Service) Tokens(ctx context.Context) ([]*ent.Token, error) {
	if _, err := require(ctx, tokenReaders); err != nil {
		return nil, err
	}
	ts, err := s.client.Token.Query().Order(token.ByCreatedAt(sql.OrderDesc()), token.ByID(sql.OrderDesc())).All(ctx)
	return ts, apperr.Map(err)
}

// RevokeToken revokes a token; requests with it then answer disconnected.
// Revoking a revoked token is a no-op.
// Errors: unauthenticated, forbidden, not_found.
func (s *Service) RevokeToken(ctx context.Context, id string) (*ent.Token, error) {
	v, tid, err := target(ctx, viewer.RoleAdmin, ids.KindToken, "token", id)
	if err != nil {
		return nil, err
	}
	t, err := s.client.Token.Get(ctx, tid)
	if ent.IsNotFound(err) {
		return nil, apperr.NotFoundf("token")
	}
	if err != nil {
		return nil, apperr.Map(err)
	}
	if t.RevokedAt != nil {
		return t, nil
	}
	return stored(ctx, s, v, viewer.RoleAdmin, func(tx *ent.Tx, me *viewer.Viewer) (*ent.Token, error) {
		// Only a token still unrevoked as of the lock: a concurrent
		// revocation keeps its revokedAt.
		n, err := tx.Token.Update().Where(token.ID(t.ID), token.RevokedAtIsNil()).SetRevokedAt(s.now()).Save(ctx)
		if err != nil {
			return nil, err
		}
		revoked, err := tx.Token.Get(ctx, t.ID)
		if ent.IsNotFound(err) {
			return nil, apperr.NotFoundf("token")
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			// Revoked meanwhile, by a write that logged and announced it.
			return revoked, nil
		}
		return revoked, s.finishWith(tx, accessFinish(v.WorkspaceID, EventTokenRevoked, t.ID, tokenFields(t), tokenFields(revoked)))
	})
}
