package core_test

import (
	"testing"

	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/viewer"
)

// TestAccessVersion: the version of a workspace's last write that may have
// taken someone's access away (a member's role changed or the member
// removed, a token revoked), 0 before any; other writes leave it, another
// workspace's never move it, and any role may read it.
func TestAccessVersion(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f, other := setup(t, db, "ACV"), setup(t, db, "OTH")
		viewerCtx, _ := f.as(t, viewer.RoleViewer)
		version := func() int64 {
			t.Helper()
			v, err := f.svc.AccessVersion(viewerCtx)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		workspaceVersion := func() int64 {
			t.Helper()
			w, err := db.Client.Workspace.Get(sys(), f.boot.Workspace.ID)
			if err != nil {
				t.Fatal(err)
			}
			return w.Version
		}
		if got := version(); got != 0 {
			t.Fatalf("before any access change: %d, want 0", got)
		}
		_, m := f.as(t, viewer.RoleMember)
		f.newProcedure(t, "Unrelated", "TODO", f.project)
		if got := version(); got != 0 {
			t.Fatalf("after a member added and a procedure created: %d, want 0", got)
		}
		if _, _, err := f.svc.CreateToken(f.admin, core.TokenInput{MemberID: m.ID.String(), Name: "t"}); err != nil {
			t.Fatal(err)
		}
		if got := version(); got != 0 {
			t.Fatalf("after a token created: %d, want 0", got)
		}
		if _, err := f.svc.UpdateMember(f.admin, m.ID.String(), core.MemberInput{Role: core.Some("VIEWER")}); err != nil {
			t.Fatal(err)
		}
		if got, want := version(), workspaceVersion(); got != want {
			t.Fatalf("after a role change: %d, want the workspace's version %d", got, want)
		}
		changed := version()
		_, om := other.as(t, viewer.RoleMember)
		if _, err := other.svc.RemoveMember(other.admin, om.ID.String()); err != nil {
			t.Fatal(err)
		}
		if got := version(); got != changed {
			t.Fatalf("after another workspace's removal: %d, want %d", got, changed)
		}
		want := workspaceVersion()
		if _, err := f.svc.RemoveMember(f.admin, m.ID.String()); err != nil {
			t.Fatal(err)
		}
		if got := version(); got <= want || got != workspaceVersion() {
			t.Fatalf("after the removal: %d, want the workspace's version %d", got, workspaceVersion())
		}
	})
}
