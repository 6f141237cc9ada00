package core_test

// An admin unlinks a member from the identity provider's person signed in
// as it (docs/api.md, "Unlinking"): the link moves to the unlinked person,
// member.unlinked is logged as an access change; everyone else is refused,
// and a member not linked is answered with nothing written.

import (
	"context"
	"testing"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/event"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/viewer"
)

// linkTo links m to the person (issuer, subject), as internal/auth does
// at the person's first sign-in (no version, no event).
func linkTo(t *testing.T, db *database.DB, m *ent.Member, issuer, subject string) {
	t.Helper()
	if err := db.Client.Member.UpdateOneID(m.ID).SetOidcIssuer(issuer).SetOidcSubject(subject).Exec(sys()); err != nil {
		t.Fatal(err)
	}
}

func TestUnlinkMember(t *testing.T) {
	const issuer = "https://idp.example"
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f, other := setup(t, db, "UNL"), setup(t, db, "UNO")
		memberCtx, _ := f.as(t, viewer.RoleMember)
		viewerCtx, _ := f.as(t, viewer.RoleViewer)
		unlinkedEvents := func() int {
			t.Helper()
			n, err := db.Client.Event.Query().Where(event.Kind(string(core.EventMemberUnlinked))).Count(sys())
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		accessVersion := func() int64 {
			t.Helper()
			v, err := f.svc.AccessVersion(viewerCtx)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		// linked is a new member of w linked to its own person.
		linked := func(t *testing.T, w *fixture) *ent.Member {
			_, m := w.as(t, viewer.RoleMember)
			linkTo(t, db, m, issuer, "u-"+m.ID.String())
			return m
		}
		for _, tc := range []struct {
			name    string
			arrange func(t *testing.T) (actor context.Context, id string, m *ent.Member)
			code    apperr.Code // "" for success
			// unlinks: the link moves to the unlinked person, with an
			// event and a new version; else nothing changes.
			unlinks bool
		}{
			{"an admin unlinks a linked member", func(t *testing.T) (context.Context, string, *ent.Member) {
				m := linked(t, f)
				return f.admin, m.ID.String(), m
			}, "", true},
			{"a member not linked: answered, nothing written", func(t *testing.T) (context.Context, string, *ent.Member) {
				_, m := f.as(t, viewer.RoleMember)
				return f.admin, m.ID.String(), m
			}, "", false},
			{"unlinked already (a retried request): answered, nothing written", func(t *testing.T) (context.Context, string, *ent.Member) {
				m := linked(t, f)
				if _, err := f.svc.UnlinkMember(f.admin, m.ID.String()); err != nil {
					t.Fatal(err)
				}
				return f.admin, m.ID.String(), m
			}, "", false},
			{"a member is not an admin", func(t *testing.T) (context.Context, string, *ent.Member) {
				m := linked(t, f)
				return memberCtx, m.ID.String(), m
			}, apperr.Forbidden, false},
			{"an admin unlinking themselves", func(t *testing.T) (context.Context, string, *ent.Member) {
				ctx, m := f.as(t, viewer.RoleAdmin)
				linkTo(t, db, m, issuer, "u-"+m.ID.String())
				return ctx, m.ID.String(), m
			}, apperr.Conflict, false},
			{"another workspace's member", func(t *testing.T) (context.Context, string, *ent.Member) {
				m := linked(t, other)
				return f.admin, m.ID.String(), m
			}, apperr.NotFound, false},
			{"a removed member", func(t *testing.T) (context.Context, string, *ent.Member) {
				m := linked(t, f)
				if _, err := f.svc.RemoveMember(f.admin, m.ID.String()); err != nil {
					t.Fatal(err)
				}
				return f.admin, m.ID.String(), m
			}, apperr.NotFound, false},
			{"not a member's id", func(t *testing.T) (context.Context, string, *ent.Member) {
				m := linked(t, f)
				return f.admin, f.project.ID.String(), m
			}, apperr.NotFound, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				actor, id, m := tc.arrange(t)
				m, err := db.Client.Member.Get(sys(), m.ID)
				if err != nil {
					t.Fatal(err)
				}
				version, events, access := f.version(t), unlinkedEvents(), accessVersion()
				got, err := f.svc.UnlinkMember(actor, id)
				if tc.code != "" {
					wantCode(t, err, tc.code)
				} else if err != nil || got == nil || got.ID != m.ID {
					t.Fatalf("UnlinkMember = %v, %v; want member %s", got, err, m.ID)
				}
				after, err := db.Client.Member.Get(sys(), m.ID)
				if err != nil {
					t.Fatal(err)
				}
				if !tc.unlinks {
					if fmtLink(after) != fmtLink(m) || f.version(t) != version || unlinkedEvents() != events || accessVersion() != access {
						t.Fatalf("wrote: link %s → %s, version %d → %d, member.unlinked events %d → %d",
							fmtLink(m), fmtLink(after), version, f.version(t), events, unlinkedEvents())
					}
					return
				}
				if after.OidcIssuer != nil || after.OidcSubject != nil || deref(after.OidcUnlinkedIssuer) != issuer ||
					deref(after.OidcUnlinkedSubject) != "u-"+m.ID.String() {
					t.Fatalf("stored after the unlink: %s, want linked to nobody and unlinked from %s u-%s", fmtLink(after), issuer, m.ID)
				}
				if got.OidcIssuer != nil || deref(got.OidcUnlinkedSubject) != "u-"+m.ID.String() {
					t.Fatalf("returned: %s", fmtLink(got))
				}
				// One event, at the write's version, and an access change:
				// subscriptions check their credential again.
				v := f.version(t)
				logged := f.loggedEvents(t, version)
				if v != version+1 || len(logged) != 1 || logged[0].Kind != string(core.EventMemberUnlinked) || logged[0].EntityID != m.ID ||
					logged[0].Version != v || accessVersion() != v {
					t.Fatalf("version %d → %d, logged %v, access version %d", version, v, logged, accessVersion())
				}
				if shown, err := core.EventOf(logged[0]); err != nil || len(shown.Changes) != 0 {
					t.Fatalf("the event shows %+v (%v), want no changes", shown.Changes, err)
				}
			})
		}

		// Letting the same person back by removing the member and adding
		// its email again is refused (docs/api.md, "Unlinking"): a
		// removed member keeps its email.
		m := linked(t, f)
		if _, err := f.svc.RemoveMember(f.admin, m.ID.String()); err != nil {
			t.Fatal(err)
		}
		_, err := f.svc.AddMember(f.admin, core.MemberInput{Name: core.Some("Again"), Email: core.Some(m.Email)})
		wantCode(t, err, apperr.Conflict)
	})
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// fmtLink renders m's link and unlinked person.
func fmtLink(m *ent.Member) string {
	return "linked " + deref(m.OidcIssuer) + " " + deref(m.OidcSubject) + ", unlinked " + deref(m.OidcUnlinkedIssuer) + " " + deref(m.OidcUnlinkedSubject)
}

// TestAllowMemberLink: an admin lets the person last unlinked from a
// member link to it again; it is logged (member.link_allowed), but is no
// access change; a member no one was unlinked from is answered with
// nothing written; everyone else is refused.
func TestAllowMemberLink(t *testing.T) {
	const issuer = "https://idp.example"
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f, other := setup(t, db, "ALL"), setup(t, db, "ALO")
		memberCtx, _ := f.as(t, viewer.RoleMember)
		viewerCtx, _ := f.as(t, viewer.RoleViewer)
		// unlinked is a new member of w, linked to its own person, then
		// unlinked from it.
		unlinked := func(t *testing.T, w *fixture) *ent.Member {
			_, m := w.as(t, viewer.RoleMember)
			linkTo(t, db, m, issuer, "u-"+m.ID.String())
			if _, err := w.svc.UnlinkMember(w.admin, m.ID.String()); err != nil {
				t.Fatal(err)
			}
			return m
		}
		for _, tc := range []struct {
			name    string
			arrange func(t *testing.T) (actor context.Context, id string, m *ent.Member)
			code    apperr.Code // "" for success
			allows  bool        // the unlinked person is forgotten, with an event
		}{
			{"an admin lets the person unlinked link again", func(t *testing.T) (context.Context, string, *ent.Member) {
				m := unlinked(t, f)
				return f.admin, m.ID.String(), m
			}, "", true},
			{"no one was unlinked: answered, nothing written", func(t *testing.T) (context.Context, string, *ent.Member) {
				_, m := f.as(t, viewer.RoleMember)
				return f.admin, m.ID.String(), m
			}, "", false},
			{"a member is not an admin", func(t *testing.T) (context.Context, string, *ent.Member) {
				m := unlinked(t, f)
				return memberCtx, m.ID.String(), m
			}, apperr.Forbidden, false},
			{"another workspace's member", func(t *testing.T) (context.Context, string, *ent.Member) {
				m := unlinked(t, other)
				return f.admin, m.ID.String(), m
			}, apperr.NotFound, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				actor, id, m := tc.arrange(t)
				m, err := db.Client.Member.Get(sys(), m.ID)
				if err != nil {
					t.Fatal(err)
				}
				version := f.version(t)
				access, err := f.svc.AccessVersion(viewerCtx)
				if err != nil {
					t.Fatal(err)
				}
				got, err := f.svc.AllowMemberLink(actor, id)
				if tc.code != "" {
					wantCode(t, err, tc.code)
				} else if err != nil || got == nil || got.ID != m.ID {
					t.Fatalf("AllowMemberLink = %v, %v; want member %s", got, err, m.ID)
				}
				after, err := db.Client.Member.Get(sys(), m.ID)
				if err != nil {
					t.Fatal(err)
				}
				logged := f.loggedEvents(t, version)
				if !tc.allows {
					if fmtLink(after) != fmtLink(m) || f.version(t) != version || len(logged) != 0 {
						t.Fatalf("wrote: %s → %s, version %d → %d, %d events", fmtLink(m), fmtLink(after), version, f.version(t), len(logged))
					}
					return
				}
				if after.OidcUnlinkedIssuer != nil || after.OidcUnlinkedSubject != nil || after.OidcIssuer != nil {
					t.Fatalf("stored: %s; want linked to nobody and no one unlinked", fmtLink(after))
				}
				now, err := f.svc.AccessVersion(viewerCtx)
				if err != nil {
					t.Fatal(err)
				}
				if f.version(t) != version+1 || len(logged) != 1 || logged[0].Kind != string(core.EventMemberLinkAllowed) || now != access {
					t.Fatalf("version %d → %d, logged %v, access version %d → %d (it gives no access by itself)", version, f.version(t), logged, access, now)
				}
			})
		}
	})
}
