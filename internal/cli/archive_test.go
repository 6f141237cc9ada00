package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/dbtest"
)

// TestWorkspaceExportAndImportOffline: workspace export writes a workspace
// to a file from the database alone (no server), and workspace import
// reads it into a fresh database of the other dialect, printing a token
// for the workspace's admin once. Mistakes of the command line exit 2 and
// create nothing (no archive, no database file, nothing overwritten);
// archives refused by the import exit 1 in one line and import nothing.
func TestWorkspaceExportAndImportOffline(t *testing.T) {
	dialects := dbtest.Dialects(t)
	url := func(dialect, name string) string {
		if dialect == "postgres" {
			return dbtest.CreatePostgres(t)
		}
		return "sqlite://" + filepath.Join(t.TempDir(), name+".db")
	}
	for i, from := range dialects {
		to := dialects[len(dialects)-1-i]
		t.Run(from+"_to_"+to, func(t *testing.T) {
			src, dst := url(from, "src"), url(to, "dst")
			ok := func(args ...string) string {
				t.Helper()
				code, out, errOut := run(args...)
				if code != 0 {
					t.Fatalf("%s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
				}
				return out
			}
			fails := func(want int, wantErr string, args ...string) {
				t.Helper()
				code, out, errOut := run(args...)
				if code != want || !strings.Contains(errOut, wantErr) || out != "" {
					t.Fatalf("%s: exit %d, stdout %q, stderr %q; want exit %d and %q", strings.Join(args, " "), code, out, errOut, want, wantErr)
				}
				if first, _, _ := strings.Cut(strings.TrimSpace(errOut), "\n"); !strings.Contains(first, wantErr) {
					t.Fatalf("%s: the mistake is not on the first line: %q", strings.Join(args, " "), errOut)
				}
			}
			ok("migrate", "--database-url", src)
			ok("migrate", "--database-url", dst)
			ws := regexp.MustCompile(`(?m)^workspace:\s+(\S+)`).FindStringSubmatch(ok("workspace", "create", "--database-url", src,
				"--name", "Acme", "--key", "ACME", "--admin-email", "ops@acme.test", "--admin-name", "Ada"))[1]
			ok("member", "add", "--database-url", src, "--workspace", ws, "--name", "Bo", "--email", "bo@acme.test")
			dir := t.TempDir()
			file := filepath.Join(dir, "acme.jsonl")

			fails(2, "--workspace is required", "workspace", "export", "--database-url", src, "--file", file)
			fails(2, "--file is required", "workspace", "export", "--database-url", src, "--workspace", ws)
			fails(2, "does not exist", "workspace", "export", "--database-url", src, "--workspace", ws, "--file", filepath.Join(dir, "no", "such", "dir.jsonl"))
			fails(1, "no workspace", "workspace", "export", "--database-url", src, "--workspace", "01a2424e-2323-7e90-8756-6ce582536d01", "--file", file)
			if _, err := os.Stat(file); !os.IsNotExist(err) {
				t.Fatalf("a failed export left %s (%v)", file, err)
			}
			out := ok("workspace", "export", "--database-url", src, "--workspace", ws, "--file", file)
			if !strings.Contains(out, "exported: workspace "+ws) || !regexp.MustCompile(`member\s+2\n`).MatchString(out) {
				t.Fatalf("export printed:\n%s", out)
			}
			archive, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			fails(2, "already exists", "workspace", "export", "--database-url", src, "--workspace", ws, "--file", file)
			if again, _ := os.ReadFile(file); !bytes.Equal(again, archive) {
				t.Fatal("a refused export changed the existing file")
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".*partial")); len(left) != 0 {
				t.Fatalf("temporary files left: %v", left)
			}

			fails(2, "--file is required", "workspace", "import", "--database-url", dst)
			fails(2, "no such file", "workspace", "import", "--database-url", dst, "--file", filepath.Join(dir, "missing.jsonl"))
			never := filepath.Join(t.TempDir(), "never.db")
			fails(2, "no such file", "workspace", "import", "--database-url", "sqlite://"+never, "--file", filepath.Join(dir, "missing.jsonl"))
			if _, err := os.Stat(never); !os.IsNotExist(err) {
				t.Fatalf("a refused import created the database %s", never)
			}
			cut := filepath.Join(dir, "cut.jsonl")
			if err := os.WriteFile(cut, archive[:len(archive)*2/3], 0o600); err != nil {
				t.Fatal(err)
			}
			fails(1, "it was cut short (nothing was imported)", "workspace", "import", "--database-url", dst, "--file", cut)
			fails(1, "it was cut short (nothing was imported)", "workspace", "import", "--database-url", "sqlite://"+never, "--file", cut)
			if _, err := os.Stat(never); !os.IsNotExist(err) {
				t.Fatalf("a refused archive created the database %s", never)
			}
			if strings.Contains(ok("workspace", "list", "--database-url", dst), ws) {
				t.Fatal("a refused import left its workspace")
			}

			out = ok("workspace", "import", "--database-url", dst, "--file", file)
			if !regexp.MustCompile(`(?m)^workspace: ` + ws + ` \(Acme\)\nadmin: +\S+ \(ops@acme.test\)\ntoken: +pms_\S+\n`).MatchString(out) {
				t.Fatalf("import printed:\n%s", out)
			}
			if !strings.Contains(ok("member", "list", "--database-url", dst, "--workspace", ws), "bo@acme.test") {
				t.Fatal("the imported workspace lacks its member")
			}
			fails(1, "workspace already exists", "workspace", "import", "--database-url", dst, "--file", file)
		})
	}
}
