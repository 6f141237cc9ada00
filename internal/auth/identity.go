package auth

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	entsql "entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent/member"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/identity"
	"github.com/procsvc/procsvc/internal/viewer"
)

// WorkspaceHeader picks the workspace a person who is a member of several
// acts in, by its id, on a request that carries an identity provider's
// token (docs/api.md, "Authentication"). Without it, the person's one
// workspace is chosen, and a person of several is refused.
const WorkspaceHeader = "X-Procsvc-Workspace"

// NoMemberMessage is the refusal of a person whose verified email no
// member was invited with.
const NoMemberMessage = "no member with this email in any workspace"

// WithOIDC makes the Authenticator accept the tokens of the identity
// providers v trusts besides pms_ tokens (none without it: a bearer that
// is not a pms_ token is refused as malformed, as before).
func WithOIDC(v identity.Verifier) Option { return func(a *Authenticator) { a.oidc = v } }

type workspaceChoiceKey struct{}

// WithWorkspaceChoice returns ctx carrying the value of a request's
// WorkspaceHeader ("" for none).
func WithWorkspaceChoice(ctx context.Context, workspace string) context.Context {
	if workspace == "" {
		return ctx
	}
	return context.WithValue(ctx, workspaceChoiceKey{}, workspace)
}

func workspaceChoice(ctx context.Context) string {
	s, _ := ctx.Value(workspaceChoiceKey{}).(string)
	return s
}

// providerToken returns the bearer of header when it is not a pms_ token:
// what an identity provider issued, or nothing procsvc knows.
func providerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || strings.HasPrefix(token, SecretPrefix) {
		return "", false
	}
	return token, true
}

// linkedMember is a member linked to a person.
type linkedMember struct {
	id, workspace uuid.UUID
	role          string
	removed       sql.NullTime
	version       int64
}

// authenticateIdentity returns the viewer of an identity provider's token:
// the token is verified first (no database lookup for a token refused),
// then the person's members are read in one statement. A person no member
// is linked to yet is linked, in one statement, to every member invited
// with their verified email (across workspaces), and refused if there is
// none; a person linked already is linked anew only when they pick a
// workspace none of their members is in (an invitation since).
func (a *Authenticator) authenticateIdentity(ctx context.Context, token string) (*viewer.Viewer, error) {
	id, err := a.oidc.Verify(ctx, token)
	if err != nil {
		return nil, err
	}
	choice := workspaceChoice(ctx)
	var chosen uuid.UUID
	if choice != "" {
		if chosen, err = uuid.Parse(choice); err != nil {
			return nil, apperr.New(apperr.Unauthenticated, "%s: %q is not a workspace id", WorkspaceHeader, choice)
		}
	}
	members, err := a.linkedMembers(ctx, id)
	if err != nil {
		return nil, err
	}
	if len(members) == 0 || (choice != "" && !inWorkspace(members, chosen)) {
		if id.Email == "" {
			if len(members) == 0 {
				return nil, apperr.New(apperr.Unauthenticated, "this token carries no verified email, and no member is linked to "+
					"its person yet: sign in once with a token that does (the access token, or an ID token of the email scope)")
			}
		} else if n, err := a.link(ctx, id); err != nil {
			return nil, err
		} else if n > 0 {
			if members, err = a.linkedMembers(ctx, id); err != nil {
				return nil, err
			}
		}
		if len(members) == 0 {
			if unlinked, err := a.wasUnlinked(ctx, id); err != nil {
				return nil, err
			} else if unlinked {
				return nil, apperr.New(apperr.Unauthenticated, UnlinkedMessage)
			}
			return nil, apperr.New(apperr.Unauthenticated, NoMemberMessage)
		}
	}
	m, err := pickMember(members, choice, chosen)
	if err != nil {
		return nil, err
	}
	return &viewer.Viewer{WorkspaceID: m.workspace, MemberID: m.id, Role: viewer.Role(m.role),
		WorkspaceVersion: m.version, VersionKnown: true, ExpiresAt: id.Expires}, nil
}

func inWorkspace(members []linkedMember, ws uuid.UUID) bool {
	for _, m := range members {
		if m.workspace == ws {
			return true
		}
	}
	return false
}

// pickMember is the member a request acts as: the one of the chosen
// workspace, or the person's only one.
func pickMember(members []linkedMember, choice string, chosen uuid.UUID) (linkedMember, error) {
	var active []linkedMember
	for _, m := range members {
		if choice != "" && m.workspace != chosen {
			continue
		}
		if m.removed.Valid {
			continue
		}
		active = append(active, m)
	}
	switch {
	case len(active) == 1:
		return active[0], nil
	case len(active) == 0 && choice != "" && !inWorkspace(members, chosen):
		return linkedMember{}, apperr.New(apperr.Unauthenticated, "no member of this person in workspace %s", choice)
	case len(active) == 0:
		// Removed from the chosen workspace, or from every one.
		return linkedMember{}, apperr.Disconnect(apperr.MemberRemoved)
	}
	ids := make([]string, len(active))
	for i, m := range active {
		ids[i] = m.workspace.String()
	}
	return linkedMember{}, apperr.New(apperr.Unauthenticated, "a member of %d workspaces: say which with the header %s: <workspace id> (%s)",
		len(active), WorkspaceHeader, strings.Join(ids, ", "))
}

// linkedMembers reads the members linked to id's person, removed ones too
// (their refusal says so), with their workspaces' versions.
func (a *Authenticator) linkedMembers(ctx context.Context, id *identity.Identity) ([]linkedMember, error) {
	b := entsql.Dialect(a.db.Dialect)
	m, w := b.Table(member.Table).As("m"), b.Table("workspaces").As("w")
	query, args := b.Select(m.C(member.FieldID), m.C(member.FieldWorkspaceID), m.C(member.FieldRole), m.C(member.FieldRemovedAt), w.C("version")).
		From(m).Join(w).On(m.C(member.FieldWorkspaceID), w.C("id")).
		Where(entsql.And(entsql.EQ(m.C(member.FieldOidcIssuer), id.Issuer), entsql.EQ(m.C(member.FieldOidcSubject), id.Subject))).
		// A bound, however many workspaces a person joins: past it, the
		// header still picks any (the link is per workspace) but the
		// default and the list in the refusal see the first ones.
		OrderBy(m.C(member.FieldWorkspaceID)).Limit(maxLinkedMembers).
		Query()
	var rows entsql.Rows
	if err := a.db.Driver().Query(ctx, query, args, &rows); err != nil {
		return nil, apperr.Map(err)
	}
	defer rows.Close()
	var out []linkedMember
	for rows.Next() {
		var lm linkedMember
		if err := rows.Scan(&lm.id, &lm.workspace, &lm.role, &lm.removed, &lm.version); err != nil {
			return nil, apperr.Map(err)
		}
		out = append(out, lm)
	}
	if err := rows.Err(); err != nil {
		return nil, apperr.Map(err)
	}
	return out, nil
}

// maxLinkedMembers bounds the members of one person read per request.
const maxLinkedMembers = 100

// link links id's person to every member not removed and not linked yet
// whose email is id's verified email, unless an admin unlinked this person
// from it, and returns how many it linked. The link is not shown by the
// API, so it bumps no workspace version.
func (a *Authenticator) link(ctx context.Context, id *identity.Identity) (int64, error) {
	b := entsql.Dialect(a.db.Dialect)
	query, args := b.Update(member.Table).
		Set(member.FieldOidcIssuer, id.Issuer).Set(member.FieldOidcSubject, id.Subject).
		Where(entsql.And(
			entsql.EQ(member.FieldEmail, strings.ToLower(id.Email)),
			entsql.IsNull(member.FieldRemovedAt),
			entsql.IsNull(member.FieldOidcIssuer),
			notUnlinkedFrom(id),
		)).Query()
	var res sql.Result
	if err := a.db.Driver().Exec(ctx, query, args, &res); err != nil {
		return 0, apperr.Map(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, apperr.Map(fmt.Errorf("link members: %w", err))
	}
	return n, nil
}

// notUnlinkedFrom holds for the members id's person was not unlinked from
// (core.UnlinkMember): relinking them by their verified email would undo
// the unlink at their next request. NULL-safe: a member never unlinked has
// no unlinked person, and another person with the same email may link.
func notUnlinkedFrom(id *identity.Identity) *entsql.Predicate {
	return entsql.Or(
		entsql.IsNull(member.FieldOidcUnlinkedIssuer),
		entsql.NEQ(member.FieldOidcUnlinkedIssuer, id.Issuer),
		entsql.NEQ(member.FieldOidcUnlinkedSubject, id.Subject),
	)
}

// UnlinkedMessage is the refusal of a person no member is linked to, none
// could be linked to, and whom an admin unlinked from a member with their
// verified email (core.UnlinkMember).
const UnlinkedMessage = "an admin unlinked this person from the member with this email, " +
	"and signing in does not link them again: ask an admin of its workspace to let you back in"

// wasUnlinked reports whether an admin unlinked id's person from a member
// with id's verified email: the one statement the refusal of a person with
// no member may add, to say why.
func (a *Authenticator) wasUnlinked(ctx context.Context, id *identity.Identity) (bool, error) {
	b := entsql.Dialect(a.db.Dialect)
	query, args := b.Select(member.FieldID).From(b.Table(member.Table)).
		Where(entsql.And(
			entsql.EQ(member.FieldEmail, strings.ToLower(id.Email)),
			entsql.EQ(member.FieldOidcUnlinkedIssuer, id.Issuer),
			entsql.EQ(member.FieldOidcUnlinkedSubject, id.Subject),
		)).Limit(1).Query()
	var rows entsql.Rows
	if err := a.db.Driver().Query(ctx, query, args, &rows); err != nil {
		return false, apperr.Map(err)
	}
	defer rows.Close()
	found := rows.Next()
	if err := rows.Err(); err != nil {
		return false, apperr.Map(err)
	}
	return found, nil
}
