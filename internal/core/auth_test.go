package core_test

// Authentication of a bearer token: accepted, rejected (unauthenticated) and
// disconnected (revoked, expired, removed member) tokens.

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/auth"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/viewer"
)

func TestAuthenticate(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db, "AUTH")
		a := auth.New(db)
		ctx := context.Background()
		bearer := func(secret string) string { return "Bearer " + secret }

		t.Run("fresh token is accepted", func(t *testing.T) {
			tests := []struct {
				name   string
				header string
			}{
				{"canonical", bearer(f.boot.Secret)},
				{"lower-case scheme", "bearer " + f.boot.Secret},
				{"extra spaces", "Bearer   " + f.boot.Secret + "  "},
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					v, err := a.Authenticate(ctx, tc.header)
					if err != nil {
						t.Fatalf("Authenticate: %v", err)
					}
					ws, _ := db.Client.Workspace.Get(sys(), f.boot.Workspace.ID)
					if v.WorkspaceID != f.boot.Workspace.ID || v.MemberID != f.boot.Admin.ID ||
						v.TokenID != f.boot.Token.ID || v.Role != viewer.RoleAdmin {
						t.Fatalf("viewer = %+v; want workspace %s member %s token %s ADMIN",
							*v, f.boot.Workspace.ID, f.boot.Admin.ID, f.boot.Token.ID)
					}
					// The first use writes lastUsedAt, which bumps the version:
					// that request must not trust version-keyed caches. Later
					// uses carry the current version.
					if v.VersionKnown && v.WorkspaceVersion != ws.Version {
						t.Fatalf("viewer version %d is not the workspace's %d", v.WorkspaceVersion, ws.Version)
					}
					if tc.name != "canonical" && !v.VersionKnown {
						t.Fatalf("a token used within the minute must carry a known version: %+v", *v)
					}
				})
			}
		})

		t.Run("lastUsedAt is written on first use", func(t *testing.T) {
			_, m := f.as(t, viewer.RoleViewer)
			tok, secret, err := f.svc.CreateToken(f.admin, core.TokenInput{MemberID: m.ID.String(), Name: "fresh"})
			if err != nil {
				t.Fatal(err)
			}
			stored, _ := db.Client.Token.Get(sys(), tok.ID)
			if stored.LastUsedAt != nil {
				t.Fatalf("lastUsedAt set before any use: %v", stored.LastUsedAt)
			}
			v, err := a.Authenticate(ctx, bearer(secret))
			if err != nil {
				t.Fatal(err)
			}
			if v.Role != viewer.RoleViewer || v.MemberID != m.ID || v.TokenID != tok.ID {
				t.Fatalf("viewer = %+v", v)
			}
			stored, _ = db.Client.Token.Get(sys(), tok.ID)
			if stored.LastUsedAt == nil {
				t.Fatal("lastUsedAt not written on first use")
			}
			if _, err := a.Authenticate(ctx, bearer(secret)); err != nil {
				t.Fatalf("second use: %v", err)
			}
		})

		unknownSecret, _ := auth.NewSecret()
		rejected := []struct {
			name   string
			header string
		}{
			{"missing", ""},
			{"scheme only", "Bearer"},
			{"scheme and space", "Bearer "},
			{"basic scheme", "Basic " + f.boot.Secret},
			{"no scheme", f.boot.Secret},
			{"too short", "Bearer pms_short"},
			{"space inside the secret", "Bearer pms_abcdefgh ijklmnopqrstuvwxyz"},
			{"control character", "Bearer pms_abcdefghijklmnop\x01qrstuvwxyz"},
			{"too long", "Bearer " + strings.Repeat("a", 201)},
			{"unknown", bearer(unknownSecret)},
			{"hash instead of secret", bearer(auth.Hash(f.boot.Secret))},
			{"secret with a trailing character", bearer(f.boot.Secret + "x")},
		}
		for _, tc := range rejected {
			t.Run("rejects "+tc.name, func(t *testing.T) {
				v, err := a.Authenticate(ctx, tc.header)
				wantCode(t, err, apperr.Unauthenticated)
				if v != nil {
					t.Fatalf("viewer %+v returned with the error", v)
				}
			})
		}

		// Disconnected cases each build their own token.
		disconnected := []struct {
			name  string
			setup func(t *testing.T) (secret string)
		}{
			{"revoked token", func(t *testing.T) string {
				_, m := f.as(t, viewer.RoleMember)
				tok, secret, err := f.svc.CreateToken(f.admin, core.TokenInput{MemberID: m.ID.String()})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := a.Authenticate(ctx, bearer(secret)); err != nil {
					t.Fatalf("before revoking: %v", err)
				}
				if _, err := f.svc.RevokeToken(f.admin, tok.ID.String()); err != nil {
					t.Fatal(err)
				}
				return secret
			}},
			{"expired token", func(t *testing.T) string {
				// A service whose clock is in 2001 issues a token that
				// expired long before any real now.
				past := core.New(db.Client, core.WithClock(func() time.Time {
					return time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
				}))
				adm, err := past.ActAsAdmin(ctx, f.boot.Workspace.ID.String())
				if err != nil {
					t.Fatal(err)
				}
				exp := time.Date(2001, 2, 1, 0, 0, 0, 0, time.UTC)
				_, secret, err := past.CreateToken(adm, core.TokenInput{Name: "old", ExpiresAt: &exp})
				if err != nil {
					t.Fatal(err)
				}
				return secret
			}},
			{"removed member", func(t *testing.T) string {
				_, m := f.as(t, viewer.RoleMember)
				_, secret, err := f.svc.CreateToken(f.admin, core.TokenInput{MemberID: m.ID.String()})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := a.Authenticate(ctx, bearer(secret)); err != nil {
					t.Fatalf("before removal: %v", err)
				}
				if _, err := f.svc.RemoveMember(f.admin, m.ID.String()); err != nil {
					t.Fatal(err)
				}
				return secret
			}},
			{"removed member with a token that is not revoked", func(t *testing.T) string {
				_, m := f.as(t, viewer.RoleMember)
				tok, secret, err := f.svc.CreateToken(f.admin, core.TokenInput{MemberID: m.ID.String()})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.svc.RemoveMember(f.admin, m.ID.String()); err != nil {
					t.Fatal(err)
				}
				// Undo the revocation so that only the removal can refuse it.
				if err := db.Client.Token.UpdateOneID(tok.ID).ClearRevokedAt().Exec(sys()); err != nil {
					t.Fatal(err)
				}
				return secret
			}},
		}
		for _, tc := range disconnected {
			t.Run("disconnects "+tc.name, func(t *testing.T) {
				secret := tc.setup(t)
				v, err := a.Authenticate(ctx, bearer(secret))
				wantCode(t, err, apperr.Disconnected)
				if v != nil {
					t.Fatalf("viewer %+v returned with the error", v)
				}
				var ae *apperr.Error
				if errors.As(err, &ae) && ae.Message != apperr.DisconnectedMessage {
					t.Fatalf("message = %q", ae.Message)
				}
			})
		}

		t.Run("token expiring in the future is accepted", func(t *testing.T) {
			exp := time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC)
			_, secret, err := f.svc.CreateToken(f.admin, core.TokenInput{Name: "long", ExpiresAt: &exp})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.Authenticate(ctx, bearer(secret)); err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
		})
	})
}
