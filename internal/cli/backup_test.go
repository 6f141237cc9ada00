package cli

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// procsvcDB makes a migrated SQLite database at path holding one workspace
// named name, through the commands an operator runs.
func procsvcDB(t *testing.T, path, name string) {
	t.Helper()
	for _, args := range [][]string{
		{"migrate", "--database-url", "sqlite://" + path},
		{"workspace", "create", "--database-url", "sqlite://" + path, "--name", name, "--admin-email", "ops@" + strings.ToLower(name) + ".test"},
	} {
		if code, out, errOut := run(args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
}

// listing is every file under dir with its contents, to tell that a
// command created, removed or changed nothing.
func listing(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		out[path] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameListing(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func names(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, filepath.Base(k))
	}
	slices.Sort(out)
	return out
}

// TestBackupAndRestoreMistakesAreRefusedInOneLine: every mistake of a
// backup or restore invocation (a flag missing, a destination that exists,
// a directory that does not, an unknown URL, a PostgreSQL URL, a backup
// that is garbage, truncated, damaged or not procsvc's, a target that
// holds a workspace or is not a database) exits 2 with one line on stderr
// and nothing on stdout, and creates, removes or changes no file. The
// PostgreSQL answers give the command to use and never the password.
func TestBackupAndRestoreMistakesAreRefusedInOneLine(t *testing.T) {
	dir := t.TempDir()
	source := filepath.Join(dir, "source.db")
	procsvcDB(t, source, "Source")
	good := filepath.Join(dir, "good.bak")
	if code, out, errOut := run("backup", "--database-url", "sqlite://"+source, "--to", good); code != 0 {
		t.Fatalf("backup: exit %d\n%s%s", code, out, errOut)
	}
	busy := filepath.Join(dir, "busy.db")
	procsvcDB(t, busy, "Busy")
	raw, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	garbage := write("garbage.bak", []byte("this is no database\n"))
	truncated := write("truncated.bak", raw[:len(raw)/2])
	// A whole file whose pages past the header are overwritten: the
	// header is sound, the b-trees are not.
	damaged := append([]byte(nil), raw...)
	for i := 4096; i < len(damaged); i += 7 {
		damaged[i] = 0x5a
	}
	damagedPath := write("damaged.bak", damaged)
	foreign := filepath.Join(dir, "foreign.bak")
	fdb, err := sql.Open("sqlite", foreign)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fdb.Exec("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"); err != nil {
		t.Fatal(err)
	}
	fdb.Close()
	notADatabase := write("notes.txt", []byte("my notes\n"))

	for _, tc := range []struct {
		args []string
		want string // in the one line
	}{
		{[]string{"backup", "--database-url", "sqlite://" + source}, "--to is required"},
		{[]string{"backup", "--database-url", "sqlite://" + source, "--to", good}, "exists: name a new file, or add --overwrite"},
		{[]string{"backup", "--database-url", "sqlite://" + source, "--to", filepath.Join(dir, "nodir", "b.bak")}, "does not exist: create it"},
		{[]string{"backup", "--database-url", "sqlite://" + source, "--to", dir}, "is a directory"},
		{[]string{"backup", "--database-url", "sqlite://" + source, "--to", source, "--overwrite"}, "is the database itself"},
		{[]string{"backup", "--database-url", "sqlite://" + filepath.Join(dir, "absent.db"), "--to", filepath.Join(dir, "new.bak")}, "absent.db does not exist"},
		{[]string{"backup", "--database-url", "sqlite://" + garbage, "--to", filepath.Join(dir, "new.bak")}, "garbage.bak is not a SQLite database"},
		{[]string{"backup", "--database-url", "sqlite://" + foreign, "--to", filepath.Join(dir, "new.bak")}, "foreign.bak is not a procsvc database"},
		{[]string{"backup", "--database-url", "mysql://root:hunter2@db/procsvc", "--to", filepath.Join(dir, "new.bak")}, `unknown scheme "mysql"`},
		{[]string{"backup", "--database-url", "sqlite://" + filepath.Join(dir, "nodir", "x.db"), "--to", filepath.Join(dir, "new.bak")}, "does not exist"},
		{[]string{"backup", "--database-url", "postgres://ops:hunter2@db.internal:5432/procsvc?sslmode=require&password=hunter2", "--to", "procsvc.pgdump"},
			"pg_dump -Fc --no-owner -d 'postgres://ops@db.internal:5432/procsvc?sslmode=require' -f procsvc.pgdump"},
		{[]string{"backup", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"backup", "stray"}, `unexpected argument "stray"`},
		{[]string{"restore", "--database-url", "sqlite://" + filepath.Join(dir, "new.db")}, "--from is required"},
		{[]string{"restore", "--from", filepath.Join(dir, "absent.bak"), "--database-url", "sqlite://" + filepath.Join(dir, "new.db")}, "absent.bak does not exist"},
		{[]string{"restore", "--from", garbage, "--database-url", "sqlite://" + filepath.Join(dir, "new.db")}, "garbage.bak is not a SQLite database"},
		{[]string{"restore", "--from", truncated, "--database-url", "sqlite://" + filepath.Join(dir, "new.db")}, "truncated.bak is truncated"},
		{[]string{"restore", "--from", damagedPath, "--database-url", "sqlite://" + filepath.Join(dir, "new.db")}, "damaged.bak"},
		{[]string{"restore", "--from", foreign, "--database-url", "sqlite://" + filepath.Join(dir, "new.db")}, "foreign.bak is not a procsvc database: it has no table workspaces"},
		{[]string{"restore", "--from", good, "--database-url", "sqlite://" + busy}, "holds 1 workspace(s): restore into a new file, or add --replace"},
		{[]string{"restore", "--from", good, "--database-url", "sqlite://" + notADatabase}, "is not a procsvc database: add --replace"},
		{[]string{"restore", "--from", good, "--database-url", "sqlite://" + good}, "is the backup itself"},
		{[]string{"restore", "--from", good, "--database-url", "sqlite://" + filepath.Join(dir, "nodir", "x.db")}, "does not exist"},
		{[]string{"restore", "--from", good, "--database-url", "postgres://ops:hunter2@db.internal:5432/procsvc"}, "procsvc copy --from sqlite://" + good + " --to DATABASE_URL"},
		{[]string{"restore", "--from", good, "--database-url", "oracle://x/y"}, `unknown scheme "oracle"`},
		{[]string{"restore", "--frm", good}, "flag provided but not defined: -frm"},
	} {
		t.Run(strings.Join(tc.args[:2], " "), func(t *testing.T) {
			before := listing(t, dir)
			code, out, errOut := run(tc.args...)
			line, _, _ := strings.Cut(errOut, "\n")
			helpHint := strings.HasPrefix(strings.TrimPrefix(errOut, line+"\n"), "Run 'procsvc ")
			if code != 2 || out != "" || !(strings.Count(errOut, "\n") == 1 || helpHint && strings.Count(errOut, "\n") == 2) || !strings.Contains(line, tc.want) {
				t.Fatalf("%v:\nexit %d, stdout %q, stderr %q;\nwant 2, nothing, and one line with %q", tc.args, code, out, errOut, tc.want)
			}
			if strings.Contains(errOut, "hunter2") {
				t.Fatalf("the refusal repeats the password: %s", errOut)
			}
			if after := listing(t, dir); !sameListing(before, after) {
				t.Fatalf("%v changed the files: before %v, after %v", tc.args, names(before), names(after))
			}
		})
	}
}

// TestBackupOverwriteAndRestoreReplace: --overwrite replaces an existing
// backup and --replace a target holding workspaces, whose WAL and shared
// memory files go with it; a target that exists but holds no workspace (a
// fresh migrate) is restored into without --replace. The restored database
// serves the backup's workspaces, and the backup prints them.
func TestBackupOverwriteAndRestoreReplace(t *testing.T) {
	dir := t.TempDir()
	source, target, fresh := filepath.Join(dir, "source.db"), filepath.Join(dir, "target.db"), filepath.Join(dir, "fresh.db")
	bak := filepath.Join(dir, "source.bak")
	procsvcDB(t, source, "Source")
	procsvcDB(t, target, "Target")
	if err := os.WriteFile(bak, []byte("an old backup"), 0o600); err != nil {
		t.Fatal(err)
	}
	ops := func(args ...string) string {
		t.Helper()
		code, out, errOut := run(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
		return out
	}
	out := ops("backup", "--database-url", "sqlite://"+source, "--to", bak, "--overwrite")
	for _, want := range []string{`backup ` + regexp.QuoteMeta(bak) + ` written and checked \(integrity ok`, `(?m)^\S+\s+PRC\s+0\s+-\s+Source$`, `(?m)^workspaces\s+1$`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Fatalf("backup's output lacks %q:\n%s", want, out)
		}
	}
	// A target a server holds open, idle or not, is refused, untouched.
	server, err := sql.Open("sqlite", "file:"+target+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := server.QueryRow("SELECT count(*) FROM workspaces").Scan(&n); err != nil || n != 1 {
		t.Fatalf("the target holds %d workspaces (%v), want 1", n, err)
	}
	held := listing(t, dir)
	if code, out, errOut := run("restore", "--from", bak, "--database-url", "sqlite://"+target, "--replace"); code != 2 || out != "" || !strings.Contains(errOut, "is in use by another process") || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("restore over a target held open: exit %d, stdout %q, stderr %q; want 2 and one line saying it is in use", code, out, errOut)
	}
	if after := listing(t, dir); !sameListing(held, after) {
		t.Fatalf("the refused restore changed the files: before %v, after %v", names(held), names(after))
	}
	server.Close()
	// The target as a server that stopped may leave it: an empty WAL
	// beside it, which must not outlive the file it belonged to.
	if err := os.WriteFile(target+"-wal", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ops("restore", "--from", bak, "--database-url", "sqlite://"+target, "--replace")
	if _, err := os.Stat(target + "-wal"); !os.IsNotExist(err) {
		t.Fatalf("the replaced target's old WAL is still there (%v)", err)
	}
	if list := ops("workspace", "list", "--database-url", "sqlite://"+target); !strings.Contains(list, "Source") || strings.Contains(list, "Target") {
		t.Fatalf("the replaced target lists:\n%s", list)
	}
	ops("migrate", "--database-url", "sqlite://"+fresh)
	ops("restore", "--from", bak, "--database-url", "sqlite://"+fresh)
	if list := ops("workspace", "list", "--database-url", "sqlite://"+fresh); !strings.Contains(list, "Source") {
		t.Fatalf("the restored empty target lists:\n%s", list)
	}
	var leftovers []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			leftovers = append(leftovers, e.Name())
		}
	}
	if len(leftovers) > 0 {
		t.Fatalf("temporary files left: %v", leftovers)
	}
	if got := listing(t, dir)[bak]; !bytes.HasPrefix([]byte(got), []byte("SQLite format 3\x00")) {
		t.Fatalf("--overwrite left %q at %s", got[:min(len(got), 20)], bak)
	}
}

// TestInterruptedBackupAndRestoreSaySoAndLeaveNothing: a backup or restore
// whose context is cancelled (Ctrl-C, SIGTERM: main's signal context)
// exits 1 saying nothing was written, and leaves the files as they were.
func TestInterruptedBackupAndRestoreSaySoAndLeaveNothing(t *testing.T) {
	dir := t.TempDir()
	source := filepath.Join(dir, "source.db")
	procsvcDB(t, source, "Source")
	bak := filepath.Join(dir, "source.bak")
	if code, out, errOut := run("backup", "--database-url", "sqlite://"+source, "--to", bak); code != 0 {
		t.Fatalf("backup: exit %d\n%s%s", code, out, errOut)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, args := range [][]string{
		{"backup", "--database-url", "sqlite://" + source, "--to", filepath.Join(dir, "new.bak")},
		{"restore", "--from", bak, "--database-url", "sqlite://" + filepath.Join(dir, "new.db")},
		{"restore", "--from", bak, "--database-url", "sqlite://" + source, "--replace"},
	} {
		before := listing(t, dir)
		var out, errOut bytes.Buffer
		code := Run(ctx, args, Env{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }})
		if code != 1 || out.Len() > 0 || errOut.String() != "procsvc: interrupted: nothing was written\n" {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q; want 1 and that nothing was written", args, code, out.String(), errOut.String())
		}
		if after := listing(t, dir); !sameListing(before, after) {
			t.Fatalf("%v changed the files: before %v, after %v", args, names(before), names(after))
		}
	}
}
