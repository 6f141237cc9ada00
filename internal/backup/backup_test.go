package backup

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sourceDB makes a SQLite file holding procsvc's required tables and one
// workspace: enough for a backup and its check.
func sourceDB(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, table := range requiredTables {
		cols := "id TEXT PRIMARY KEY"
		switch table {
		case "workspaces":
			cols += ", key TEXT, name TEXT, version INTEGER"
		case "events":
			cols += ", workspace_id TEXT, version INTEGER"
		}
		if _, err := db.Exec("CREATE TABLE " + table + " (" + cols + ")"); err != nil {
			t.Fatal(err)
		}
	}
	for _, insert := range []string{"INSERT INTO workspaces VALUES ('w1', 'PRC', 'Acme', 42)", "INSERT INTO events VALUES ('e1', 'w1', 41)"} {
		if _, err := db.Exec(insert); err != nil {
			t.Fatal(err)
		}
	}
}

func files(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// TestCancelledBackupAndRestoreLeaveNothing: a backup or a restore whose
// context is cancelled, before it starts or once its copy is written (an
// operator's Ctrl-C), returns the context's error and leaves no file
// behind: no temporary file, no backup, the target as it was.
func TestCancelledBackupAndRestoreLeaveNothing(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "source.db")
	sourceDB(t, src)
	bak := filepath.Join(t.TempDir(), "good.bak")
	if s, err := BackupSQLite(context.Background(), "sqlite://"+src, bak, false); err != nil || len(s.Workspaces) != 1 || s.Workspaces[0].Version != 42 || s.Workspaces[0].LastEvent != 41 {
		t.Fatalf("backup: %+v, %v; want workspace PRC at version 42, its newest event 41", s, err)
	}
	target := filepath.Join(dir, "target.db")
	sourceDB(t, target)
	targetBytes, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	before := files(t, dir)
	for _, when := range []string{"before", "after the copy"} {
		for _, op := range []string{"backup", "restore"} {
			t.Run(op+" cancelled "+when, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if when == "before" {
					cancel()
				} else {
					afterCopy = cancel
					defer func() { afterCopy = nil }()
				}
				var err error
				if op == "backup" {
					_, err = BackupSQLite(ctx, "sqlite://"+src, filepath.Join(dir, "new.bak"), false)
				} else {
					_, err = RestoreSQLite(ctx, bak, "sqlite://"+target, true)
				}
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("%s: %v, want context.Canceled", op, err)
				}
				if got := files(t, dir); !slices.Equal(got, before) {
					t.Fatalf("files after a cancelled %s: %v, want %v", op, got, before)
				}
				if got, _ := os.ReadFile(target); string(got) != string(targetBytes) {
					t.Fatalf("a cancelled restore changed the target")
				}
			})
		}
	}
}

// TestPostgresCommandsNeverCarryThePassword: the pg_dump and pg_restore
// commands given for a URL with a password (in its user info or as a
// parameter) hold neither, and keep the rest of the URL.
func TestPostgresCommandsNeverCarryThePassword(t *testing.T) {
	url := "postgres://ops:s3cr%21t@db1:5432,db2:5432/procsvc?sslmode=verify-full&password=s3cr!t"
	for _, line := range []string{PostgresDumpCommand(url, "my backup.pgdump"), PostgresRestoreCommand("my backup.pgdump", url)} {
		if strings.Contains(line, "s3cr") {
			t.Fatalf("%s carries the password", line)
		}
		if !strings.Contains(line, "'postgres://ops@db1:5432,db2:5432/procsvc?sslmode=verify-full'") || !strings.Contains(line, "'my backup.pgdump'") {
			t.Fatalf("%s lost the URL or the file", line)
		}
	}
}

// TestOperationsDocGivesTheCommands: docs/operations.md gives the very
// pg_dump and pg_restore commands the tests run (PostgresDumpArgs,
// PostgresRestoreArgs), so that the page and the tested path cannot part.
func TestOperationsDocGivesTheCommands(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	url := "postgres://procsvc@db.internal:5432/procsvc"
	for _, cmd := range []string{
		PostgresDumpCommand(url, "procsvc.pgdump"),
		PostgresRestoreCommand("procsvc.pgdump", "postgres://procsvc@db.internal:5432/procsvc_restored"),
		"procsvc copy --from sqlite://",
	} {
		if !strings.Contains(string(doc), cmd) {
			t.Errorf("docs/operations.md lacks %q", cmd)
		}
	}
}
