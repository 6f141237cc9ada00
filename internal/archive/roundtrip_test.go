package archive_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/archive"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// TestExportImportsIntoAFreshProcsvc is issue #36's done-when: a seeded
// workspace exported through the API imports into a fresh procsvc on the
// other database (SQLite into PostgreSQL and back), and the new procsvc's
// API answers what the old one did: every list's total and first page, a
// procedure with its comments, a procedure's history and a deleted one's,
// the events list. The import's own export then holds the same records.
func TestExportImportsIntoAFreshProcsvc(t *testing.T) {
	pairs := [][2]string{{"sqlite", "sqlite"}}
	if len(dbtest.Dialects(t)) == 2 {
		pairs = [][2]string{{"sqlite", "postgres"}, {"postgres", "sqlite"}}
	}
	for _, pair := range pairs {
		t.Run(pair[0]+"_to_"+pair[1], func(t *testing.T) {
			src := apitest.Start(t, dbtest.Open(t, pair[0]))
			w := src.NewWorkspace(t, "Acme", "ACME")
			other := seed(t, src, src.NewWorkspace(t, "Other", "OTH"), 3)
			sd := seed(t, src, w, 9)
			arch := export(t, src, w.AdminToken)

			// Nothing secret, nothing of another workspace.
			for what, s := range map[string]string{"the admin's token": w.AdminToken, "the member's token": w.MemberToken,
				"the viewer's token": w.ViewToken, "the webhook's secret": sd.WebhookSecret, "the other workspace": other.ID,
				"the other workspace's project": other.ProjectID, "the other workspace's procedure": other.Busy} {
				if bytes.Contains(arch, []byte(s)) {
					t.Errorf("the archive holds %s", what)
				}
			}
			rows, err := src.DB.SQL.Query("SELECT secret_hash FROM tokens")
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var h string
				if err := rows.Scan(&h); err != nil {
					t.Fatal(err)
				}
				if bytes.Contains(arch, []byte(h)) {
					t.Errorf("the archive holds a token's hash")
				}
			}
			rows.Close()
			var header archive.Header
			if err := json.Unmarshal(lines(arch)[0], &header); err != nil || header.Format != archive.Format || header.Version != archive.Version || header.WorkspaceID.String() != w.ID {
				t.Fatalf("header %s: %+v %v", lines(arch)[0], header, err)
			}

			dst := dbtest.Open(t, pair[1])
			file := filepath.Join(t.TempDir(), "acme.jsonl")
			if err := os.WriteFile(file, arch, 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			// Small batches: several INSERTs of each type.
			in, err := archive.Import(context.Background(), dst.Client, f, archive.ImportOptions{BatchSize: 4})
			if err != nil {
				t.Fatalf("import: %v", err)
			}
			if in.WorkspaceID.String() != w.ID || in.Admin.String() != w.AdminID {
				t.Fatalf("imported workspace %s for admin %s, want %s for %s", in.WorkspaceID, in.Admin, w.ID, w.AdminID)
			}
			imported := apitest.Start(t, dst)

			for _, path := range []string{"/procedures", "/procedures?limit=3&sortBy=name&sortOrder=asc", "/procedures?page=2&limit=3", "/procedures?state=TODO",
				"/projects", "/categories", "/members", "/events?limit=100", "/events?limit=5",
				"/procedures/" + sd.Busy, "/procedures/" + sd.Busy + "/comments",
				"/procedures/" + sd.Busy + "/history", "/procedures/" + sd.Busy + "/history?limit=2",
				"/procedures/" + sd.Deleted + "/history"} {
				wantStatus, want := call(t, src, w.AdminToken, "GET", path, "")
				gotStatus, got := call(t, imported, in.Secret, "GET", path, "")
				if wantStatus != http.StatusOK || gotStatus != wantStatus {
					t.Fatalf("GET %s: %d on the source, %d imported\n%s\n%s", path, wantStatus, gotStatus, want, got)
				}
				if normalized(t, got) != normalized(t, want) {
					t.Errorf("GET %s differs:\nsource:   %s\nimported: %s", path, want, got)
				}
			}
			// The endpoint arrives disabled, with a secret of its own.
			_, hooks := call(t, imported, in.Secret, "GET", "/webhooks", "")
			var list struct {
				Data []struct {
					URL, DisabledReason string
					Enabled             bool
					Kinds               []string
				}
			}
			if err := json.Unmarshal(hooks, &list); err != nil || len(list.Data) != 1 || list.Data[0].Enabled ||
				list.Data[0].DisabledReason != archive.ImportedWebhookReason || list.Data[0].URL != "https://hooks.example.com/procsvc" {
				t.Fatalf("imported webhooks: %s (%v)", hooks, err)
			}

			// The imported workspace exports the same records (the
			// webhook's enabled aside, and the workspace's version, which
			// the new token's first use bumped), as JSON values:
			// PostgreSQL's jsonb orders an event's keys its own way.
			again := export(t, imported, in.Secret)
			body := func(a []byte) []string {
				var keep []string
				for _, l := range lines(a)[1:] {
					switch {
					case bytes.Contains(l, []byte(`"type":"webhook"`)):
					case bytes.Contains(l, []byte(`"type":"workspace"`)):
						var ws map[string]any
						if err := json.Unmarshal(l, &ws); err != nil {
							t.Fatal(err)
						}
						delete(ws, "version")
						b, _ := json.Marshal(ws)
						keep = append(keep, string(b))
					default:
						keep = append(keep, normalized(t, l))
					}
				}
				return keep
			}
			want, got := body(arch), body(again)
			if len(got) != len(want) {
				t.Fatalf("the imported workspace's archive has %d records, want %d", len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("the imported workspace's record %d differs:\n%s\nwant\n%s", i, got[i], want[i])
				}
			}
		})
	}
}
