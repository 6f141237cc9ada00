package cli

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// TestCopyCommand: procsvc copy copies a database into an empty one of
// either dialect and says it verified it; --verify-only then agrees; a
// row changed in the target fails --verify-only (exit 1, naming the
// table, the workspace, the key and the column), and a copy into that
// target is refused.
func TestCopyCommand(t *testing.T) {
	for _, to := range dbtest.Dialects(t) {
		t.Run("sqlite_to_"+to, func(t *testing.T) {
			from := "sqlite://" + filepath.Join(t.TempDir(), "source.db")
			target := "sqlite://" + filepath.Join(t.TempDir(), "target.db")
			if to == "postgres" {
				target = dbtest.CreatePostgres(t)
			}
			mustRun := func(args ...string) string {
				t.Helper()
				code, out, errOut := run(args...)
				if code != 0 {
					t.Fatalf("%s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
				}
				return out
			}
			mustRun("migrate", "--database-url", from)
			out := mustRun("workspace", "create", "--database-url", from, "--name", "Acme", "--key", "ACME", "--admin-email", "ops@acme.test")
			ws := regexp.MustCompile(`(?m)^workspace:\s+(\S+)`).FindStringSubmatch(out)[1]

			code, out, errOut := run("copy", "--from", from, "--to", target, "--batch-rows", "1")
			if code != 0 || !strings.Contains(out, "the target holds exactly the source's rows") || !strings.Contains(errOut, "copy: workspaces: 1/1 rows (done") {
				t.Fatalf("copy: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			if out := mustRun("copy", "--from", from, "--to", target, "--verify-only"); !strings.Contains(out, "verify: workspaces") {
				t.Errorf("--verify-only:\n%s", out)
			}

			db, err := database.Open(context.Background(), target, database.Options{ProbeInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			arg := "?"
			if db.Dialect == "postgres" {
				arg = "$1"
			}
			if _, err := db.SQL.Exec(`UPDATE "workspaces" SET "key" = 'ACMX' WHERE "id" = `+arg, ws); err != nil {
				t.Fatal(err)
			}
			code, _, errOut = run("copy", "--from", from, "--to", target, "--verify-only")
			want := "table workspaces, workspace " + ws + ": 1 rows in the source, 1 in the target; first differing key " + ws + ": column key differs"
			if code != 1 || !strings.Contains(errOut, want) {
				t.Errorf("--verify-only of a changed target: exit %d, stderr:\n%s\nwant exit 1 and %q", code, errOut, want)
			}
			code, _, errOut = run("copy", "--from", from, "--to", target)
			if code != 1 || !strings.Contains(errOut, "the target holds data that is not the source's") || !strings.Contains(errOut, "column key differs") {
				t.Errorf("copy into a changed target: exit %d, stderr:\n%s", code, errOut)
			}
		})
	}
}

// TestCopyUsageMistakes: every mistake of the command line exits 2 with a
// line saying what is wrong, and creates nothing.
func TestCopyUsageMistakes(t *testing.T) {
	dir := t.TempDir()
	source := filepath.Join(dir, "source.db")
	if code, out, errOut := run("migrate", "--database-url", "sqlite://"+source); code != 0 {
		t.Fatalf("migrate: %d %s %s", code, out, errOut)
	}
	target := filepath.Join(dir, "target.db")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no --to", []string{"--from", "sqlite://" + source}, "--from and --to are both required"},
		{"no --from", []string{"--to", "sqlite://" + target}, "--from and --to are both required"},
		{"unknown scheme", []string{"--from", "mysql://u@h/db", "--to", "sqlite://" + target}, `unknown scheme "mysql"`},
		{"unknown target scheme", []string{"--from", "sqlite://" + source, "--to", "mongodb://h/db"}, `unknown scheme "mongodb"`},
		{"PostgreSQL without a database", []string{"--from", "sqlite://" + source, "--to", "postgres://u@h:5432"}, "names no database"},
		{"the same file", []string{"--from", "sqlite://" + source, "--to", "file:" + filepath.Join(dir, ".", "source.db")}, "name the same database"},
		{"the same PostgreSQL database", []string{"--from", "postgres://a@localhost/db", "--to", "postgresql://b@127.0.0.1:5432/db?sslmode=disable"}, "name the same database"},
		{"a source that does not exist", []string{"--from", "sqlite://" + filepath.Join(dir, "missing.db"), "--to", "sqlite://" + target}, "does not exist"},
		{"a target directory that does not exist", []string{"--from", "sqlite://" + source, "--to", "sqlite://" + filepath.Join(dir, "nodir", "t.db")}, "does not exist"},
		{"in memory", []string{"--from", "sqlite://" + source, "--to", "sqlite://:memory:"}, "in-memory"},
		{"no rows a batch", []string{"--from", "sqlite://" + source, "--to", "sqlite://" + target, "--batch-rows", "0"}, "invalid --batch-rows 0"},
		{"too many rows a batch", []string{"--from", "sqlite://" + source, "--to", "sqlite://" + target, "--batch-rows", "50001"}, "invalid --batch-rows 50001"},
		{"no memory", []string{"--from", "sqlite://" + source, "--to", "sqlite://" + target, "--batch-mb", "0"}, "invalid --batch-mb 0"},
		{"too much memory", []string{"--from", "sqlite://" + source, "--to", "sqlite://" + target, "--batch-mb", "1025"}, "invalid --batch-mb 1025"},
		{"unknown flag", []string{"--from", "sqlite://" + source, "--to", "sqlite://" + target, "--fast"}, "flag provided but not defined: -fast"},
		{"an argument", []string{"--from", "sqlite://" + source, "--to", "sqlite://" + target, "now"}, `unexpected argument "now"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(append([]string{"copy"}, c.args...)...)
			if code != 2 || out != "" || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", code, out, errOut, c.want)
			}
			if n := strings.Count(strings.TrimSpace(errOut), "\n"); n > 1 {
				t.Errorf("%d lines of stderr, want at most 2:\n%s", n+1, errOut)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if !strings.HasPrefix(e.Name(), "source.db") {
					t.Errorf("%s was created", e.Name())
				}
			}
		})
	}
}
