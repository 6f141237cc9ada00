package graph_test

// viewer (the member a token acts as) and workspace over GraphQL.

import (
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

func TestViewerAndWorkspace(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		for _, tc := range []struct{ name, token, id, role, email string }{
			{"Admin", w.AdminToken, w.AdminID, "ADMIN", "admin@ACME.example"},
			{"Member", w.MemberToken, w.MemberID, "MEMBER", "member@ACME.example"},
			{"Viewer", w.ViewToken, w.ViewerID, "VIEWER", "viewer@ACME.example"},
		} {
			t.Run("Viewer"+tc.name, func(t *testing.T) {
				var out struct{ Viewer memberT }
				ok(t, s.GraphQL(t, tc.token, `{ viewer { `+memberFields+` } }`, nil), &out)
				v := out.Viewer
				if v.ID != tc.id || v.Role != tc.role || v.WorkspaceID != w.ID || v.Email != strings.ToLower(tc.email) || v.RemovedAt != nil {
					t.Fatalf("got %s", dump(v))
				}
			})
		}
		t.Run("Workspace", func(t *testing.T) {
			var out struct {
				Workspace struct{ ID, Name, Key, CreatedAt string }
			}
			ok(t, s.GraphQL(t, w.ViewToken, `{ workspace { id name key createdAt } }`, nil), &out)
			if out.Workspace.ID != w.ID || out.Workspace.Name != "Acme" || out.Workspace.Key != "ACME" || out.Workspace.CreatedAt == "" {
				t.Fatalf("got %+v", out.Workspace)
			}
		})
	})
}
