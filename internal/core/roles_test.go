package core_test

// Roles: what a VIEWER and a MEMBER may not do, that a refused call writes
// nothing, and what they may do.

import (
	"context"
	"sort"
	"testing"

	"github.com/procsvc/procsvc/ent/member"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/viewer"
)

func TestRoles(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db, "ROLE")
		svc := f.svc
		proc := f.newProcedure(t, "target", "TODO", f.project)
		neighbour := f.newProcedure(t, "neighbour", "TODO", f.project)
		emptyProject := f.newProject(t, "empty")
		spareCategory := f.newCategory(t, "spare")
		adminComment, err := svc.AddComment(f.admin, proc.ID.String(), "by admin")
		if err != nil {
			t.Fatal(err)
		}
		viewerCtx, viewerMember := f.as(t, viewer.RoleViewer)
		memberCtx, _ := f.as(t, viewer.RoleMember)
		_, spare := f.as(t, viewer.RoleMember)
		tok, _, err := svc.CreateToken(f.admin, core.TokenInput{MemberID: spare.ID.String(), Name: "spare"})
		if err != nil {
			t.Fatal(err)
		}
		// The viewer's own comment, planted directly: a viewer cannot write one.
		ownComment, err := db.Client.Comment.Create().SetWorkspaceID(f.boot.Workspace.ID).SetProcedureID(proc.ID).
			SetAuthorID(viewerMember.ID).SetText("by viewer").Save(sys())
		if err != nil {
			t.Fatal(err)
		}

		type call func(ctx context.Context) error
		writes := map[string]call{
			"CreateProcedure": func(ctx context.Context) error {
				_, err := svc.CreateProcedure(ctx, f.input("new", "TODO", f.project))
				return err
			},
			"UpdateProcedure": func(ctx context.Context) error {
				_, err := svc.UpdateProcedure(ctx, proc.ID.String(), core.UpdateProcedureInput{Name: core.Some("renamed")})
				return err
			},
			"MoveProcedure": func(ctx context.Context) error {
				_, err := svc.MoveProcedure(ctx, proc.ID.String(), nil, idp(neighbour), nil)
				return err
			},
			"DeleteProcedure": func(ctx context.Context) error { return svc.DeleteProcedure(ctx, proc.ID.String()) },
			"CreateProject": func(ctx context.Context) error {
				_, err := svc.CreateProject(ctx, core.ProjectInput{Name: core.Some("p")})
				return err
			},
			"UpdateProject": func(ctx context.Context) error {
				_, err := svc.UpdateProject(ctx, emptyProject.ID.String(), core.ProjectInput{Name: core.Some("renamed")})
				return err
			},
			"DeleteProject": func(ctx context.Context) error { return svc.DeleteProject(ctx, emptyProject.ID.String()) },
			"CreateCategory": func(ctx context.Context) error {
				_, err := svc.CreateCategory(ctx, "c")
				return err
			},
			"UpdateCategory": func(ctx context.Context) error {
				_, err := svc.UpdateCategory(ctx, spareCategory.ID.String(), core.Some("renamed"))
				return err
			},
			"DeleteCategory": func(ctx context.Context) error { return svc.DeleteCategory(ctx, spareCategory.ID.String()) },
			"AddComment": func(ctx context.Context) error {
				_, err := svc.AddComment(ctx, proc.ID.String(), "hello")
				return err
			},
			"UpdateComment (own)": func(ctx context.Context) error {
				_, err := svc.UpdateComment(ctx, ownComment.ID.String(), "edited")
				return err
			},
			"DeleteComment (own)": func(ctx context.Context) error { return svc.DeleteComment(ctx, ownComment.ID.String()) },
			"AddMember": func(ctx context.Context) error {
				_, err := svc.AddMember(ctx, core.MemberInput{Name: core.Some("n"), Email: core.Some("new@example.com")})
				return err
			},
			"UpdateMember": func(ctx context.Context) error {
				_, err := svc.UpdateMember(ctx, spare.ID.String(), core.MemberInput{Role: core.Some("ADMIN")})
				return err
			},
			"RemoveMember": func(ctx context.Context) error {
				_, err := svc.RemoveMember(ctx, spare.ID.String())
				return err
			},
			"CreateToken": func(ctx context.Context) error {
				_, _, err := svc.CreateToken(ctx, core.TokenInput{Name: "mine"})
				return err
			},
			"RevokeToken": func(ctx context.Context) error {
				_, err := svc.RevokeToken(ctx, tok.ID.String())
				return err
			},
			"Tokens": func(ctx context.Context) error {
				_, err := svc.Tokens(ctx)
				return err
			},
		}
		sortedKeys := func(m map[string]call) []string {
			ks := make([]string, 0, len(m))
			for k := range m {
				ks = append(ks, k)
			}
			sort.Strings(ks)
			return ks
		}
		adminOnly := []string{"AddMember", "UpdateMember", "RemoveMember", "CreateToken", "RevokeToken", "Tokens"}

		tests := []struct {
			name      string
			ctx       context.Context
			forbidden []string
		}{
			{"VIEWER", viewerCtx, sortedKeys(writes)},
			{"MEMBER", memberCtx, adminOnly},
		}
		version := func(t *testing.T) int64 {
			t.Helper()
			ws, err := db.Client.Workspace.Get(sys(), f.boot.Workspace.ID)
			if err != nil {
				t.Fatal(err)
			}
			return ws.Version
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				v0 := version(t)
				for _, name := range tc.forbidden {
					t.Run(name, func(t *testing.T) {
						wantCode(t, writes[name](tc.ctx), apperr.Forbidden)
					})
				}
				if v := version(t); v != v0 {
					t.Fatalf("workspace version moved from %d to %d: a forbidden call wrote", v0, v)
				}
			})
		}

		t.Run("forbidden calls left everything in place", func(t *testing.T) {
			if p, err := svc.Procedure(f.admin, proc.ID.String()); err != nil || p.Name != "target" {
				t.Fatalf("procedure = %+v, %v", p, err)
			}
			if _, err := svc.Project(f.admin, emptyProject.ID.String()); err != nil {
				t.Fatal(err)
			}
			if c, err := svc.Category(f.admin, spareCategory.ID.String()); err != nil || c.Name != "spare" {
				t.Fatalf("category = %+v, %v", c, err)
			}
			if m, err := svc.Member(f.admin, spare.ID.String()); err != nil || m.RemovedAt != nil || m.Role != member.RoleMEMBER {
				t.Fatalf("member = %+v, %v", m, err)
			}
			if c, err := svc.Comment(f.admin, ownComment.ID.String()); err != nil || c.Text != "by viewer" {
				t.Fatalf("comment = %+v, %v", c, err)
			}
		})

		t.Run("reads and member writes are allowed", func(t *testing.T) {
			if _, err := svc.FindProcedures(viewerCtx, core.ProcedureFilter{}, core.DefaultProcedureOrder, core.Window{}); err != nil {
				t.Fatalf("VIEWER FindProcedures: %v", err)
			}
			if _, err := svc.Procedure(viewerCtx, proc.ShortID); err != nil {
				t.Fatalf("VIEWER Procedure: %v", err)
			}
			if _, err := svc.CreateProcedure(memberCtx, f.input("by member", "TODO", f.project)); err != nil {
				t.Fatalf("MEMBER CreateProcedure: %v", err)
			}
			// A member may not edit an admin's comment (author rule).
			_, err := svc.UpdateComment(memberCtx, adminComment.ID.String(), "x")
			wantCode(t, err, apperr.Forbidden)
		})
	})
}
