package auth_test

// A person an admin unlinked from a member (core.UnlinkMember) is not
// linked to it again by signing in: their next request is refused with
// the reason, however often they come; another person with the same
// verified email links; a person unlinked in one workspace still signs in
// to another. Both databases, the real provider.

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/auth"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/oidc"
	"github.com/procsvc/procsvc/internal/oidctest"
	"github.com/procsvc/procsvc/internal/viewer"
)

func TestUnlinkedPeopleAreNotLinkedAgain(t *testing.T) {
	dan := oidctest.User{Subject: "u-dan", Username: "dan", Password: "dan-pw", Email: "dan@example.com", EmailVerified: true}
	// The same address, given to someone new at the provider.
	newDan := oidctest.User{Subject: "u-dan-2", Username: "dan2", Password: "dan2-pw", Email: "dan@example.com", EmailVerified: true}
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		ctx := context.Background()
		p := oidctest.Start(t, ada, dan, newDan)
		verifier, err := oidc.New(oidc.Config{Issuers: []string{p.Issuer}, Audiences: []string{oidctest.ClientID},
			HTTPClient: &http.Client{Timeout: 10 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		c := newCredentials(t, db, auth.WithOIDC(verifier))
		add := func(name, email string) *ent.Member {
			t.Helper()
			m, err := c.svc.AddMember(c.admin, core.MemberInput{Name: core.Some(name), Email: core.Some(email)})
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		danMember, adaHere := add("Dan", dan.Email), add("Ada", "ada@example.com")
		other, err := c.svc.CreateWorkspace(ctx, core.NewWorkspace{Name: "Other", Key: "OTH", AdminName: "Ada", AdminEmail: "ada@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		here := c.boot.Workspace.ID.String()
		danTok, adaTok, newDanTok := signIn(t, p, oidctest.ClientID, dan), signIn(t, p, oidctest.ClientID, ada), signIn(t, p, oidctest.ClientID, newDan)
		as := func(token, workspace string) (*viewer.Viewer, *apperr.Error, int64) {
			t.Helper()
			n := c.db.Statements()
			v, err := c.a.Authenticate(auth.WithWorkspaceChoice(ctx, workspace), "Bearer "+token)
			return v, apperr.From(err), c.db.Statements() - n
		}
		stored := func(m *ent.Member) *ent.Member {
			t.Helper()
			got, err := db.Client.Member.Get(viewer.System(ctx), m.ID)
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		// Both sign in, and are linked.
		if v, refusal, _ := as(danTok.AccessToken, ""); refusal != nil || v.MemberID != danMember.ID {
			t.Fatalf("Dan's first sign-in: %v %v", v, refusal)
		}
		if v, refusal, _ := as(adaTok.AccessToken, here); refusal != nil || v.MemberID != adaHere.ID {
			t.Fatalf("Ada's first sign-in: %v %v", v, refusal)
		}
		for _, m := range []*ent.Member{danMember, adaHere} {
			if _, err := c.svc.UnlinkMember(c.admin, m.ID.String()); err != nil {
				t.Fatal(err)
			}
		}

		for _, tc := range []struct {
			name, token, workspace string
			member                 string // the member acted as; "" for a refusal
			message                string // a part of the refusal's message
			statements             int64
		}{
			// The refusal: the members (none), the link (none: not
			// this person again), and one read of why.
			{"Dan, unlinked, the next request", danTok.AccessToken, "", "", auth.UnlinkedMessage, 3},
			{"Dan again: still not linked", danTok.IDToken, "", "", auth.UnlinkedMessage, 3},
			{"Ada, unlinked here, still signs in to her other workspace", adaTok.AccessToken, "", other.Admin.ID.String(), "", 1},
			{"Ada naming the workspace she was unlinked from", adaTok.AccessToken, here, "", "no member of this person in workspace", 2},
			{"someone new with Dan's verified email links", newDanTok.AccessToken, "", danMember.ID.String(), "", 3},
			{"someone new, linked now: one statement", newDanTok.IDToken, "", danMember.ID.String(), "", 1},
			{"Dan, the member linked to someone else", danTok.AccessToken, "", "", auth.UnlinkedMessage, 3},
		} {
			v, refusal, statements := as(tc.token, tc.workspace)
			switch {
			case tc.member != "" && (refusal != nil || v.MemberID.String() != tc.member):
				t.Errorf("%s: %v %v, want member %s", tc.name, v, refusal, tc.member)
			case tc.member == "" && (refusal == nil || refusal.Code != apperr.Unauthenticated || !strings.Contains(refusal.Message, tc.message)):
				t.Errorf("%s: %v %v, want unauthenticated %q", tc.name, v, refusal, tc.message)
			case statements != tc.statements:
				t.Errorf("%s: %d statements, want %d", tc.name, statements, tc.statements)
			}
		}
		if m := stored(adaHere); m.OidcIssuer != nil {
			t.Errorf("Ada's unlinked member was linked again: %s %s", *m.OidcIssuer, *m.OidcSubject)
		}
		// An admin lets Ada link again (core.AllowMemberLink): her next
		// request naming the workspace links her, as a first sign-in does.
		if _, err := c.svc.AllowMemberLink(c.admin, adaHere.ID.String()); err != nil {
			t.Fatal(err)
		}
		if v, refusal, _ := as(adaTok.AccessToken, here); refusal != nil || v.MemberID != adaHere.ID {
			t.Errorf("Ada, allowed to link again: %v %v, want member %s", v, refusal, adaHere.ID)
		}
		if m := stored(adaHere); m.OidcSubject == nil || *m.OidcSubject != ada.Subject || m.OidcUnlinkedIssuer != nil {
			t.Errorf("Ada's member after she signed in again: %s", fmtMember(m))
		}
		if m := stored(danMember); m.OidcSubject == nil || *m.OidcSubject != newDan.Subject {
			t.Errorf("Dan's member is linked to %v, want %s", m.OidcSubject, newDan.Subject)
		}
	})
}

// fmtMember renders m's link and unlinked person.
func fmtMember(m *ent.Member) string {
	s := func(p *string) string {
		if p == nil {
			return "<nil>"
		}
		return *p
	}
	return "linked " + s(m.OidcIssuer) + " " + s(m.OidcSubject) + ", unlinked " + s(m.OidcUnlinkedIssuer) + " " + s(m.OidcUnlinkedSubject)
}
