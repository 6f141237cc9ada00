package database

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

// TestOpenRefusesURLsItCannotServe: a URL of an unknown scheme, or a
// PostgreSQL URL without a database, is refused with ErrBadURL before
// anything is opened or created (mysql://… used to become a new, empty
// SQLite file named after it); the message names the flag and the accepted
// forms and never repeats the URL's password. Every form Open serves still
// passes.
func TestOpenRefusesURLsItCannotServe(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, raw := range []string{
		"mysql://root:s3cret@localhost/procsvc",
		"MariaDB://localhost:3306/procsvc",
		"redis://127.0.0.1:6379/0",
		"postgres://postgres:s3cret@127.0.0.1:5432",
		"postgres://postgres:s3cret@127.0.0.1:5432/",
		"postgresql://127.0.0.1?sslmode=disable",
		"postgres://127.0.0.1:99999999/db\x7f",
		"sqlite://dta/procsvc.db",
		"missing/procsvc.db",
		"file:missing/deeper/procsvc.db?_pragma=busy_timeout(1)",
		"sqlite://times.db?_loc=Europe/Berlin",
		"sqlite://times.db?_time_format=datetime",
		"file:times.db?_pragma=foreign_keys(1)&_inttotime=1",
		"times.db?_timezone=UTC",
	} {
		db, err := Open(context.Background(), raw, Options{})
		if err == nil {
			db.Close()
			t.Errorf("%q opened; want a refusal", raw)
			continue
		}
		if !errors.Is(err, ErrBadURL) || !strings.Contains(err.Error(), "--database-url") || !strings.Contains(err.Error(), "sqlite://PATH") {
			t.Errorf("%q: %v; want ErrBadURL naming the flag and the forms", raw, err)
		}
		if strings.Contains(raw, "procsvc.db") && !strings.Contains(err.Error(), "does not exist: create it") {
			t.Errorf("%q: %v; want the missing directory named", raw, err)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%q: the refusal repeats the password: %v", raw, err)
		}
	}
	if entries, _ := os.ReadDir("."); len(entries) > 0 {
		t.Errorf("refusals created %d entries, e.g. %s; want none", len(entries), entries[0].Name())
	}
	// The default's directory is the one created (a first run's data/).
	db, err := Open(context.Background(), "", Options{})
	if err != nil {
		t.Fatalf("the default URL: %v", err)
	}
	db.Close()
	if _, err := os.Stat("data/procsvc.db"); err != nil {
		t.Errorf("the default's file: %v", err)
	}
	for _, raw := range []string{"sqlite://a.db", "sqlite://data/other.db", "sqlite3://b.db", "file:c.db", "d.db", "sqlite://:memory:", "postgres://h/db", "postgresql://h:5432?dbname=x"} {
		if err := CheckURL(raw); err != nil {
			t.Errorf("%q refused: %v", raw, err)
		}
	}
}

// TestWhereNamesTheDatabaseWithoutItsPassword: the line a server logs first
// names the SQLite file by its absolute path, or PostgreSQL's database,
// user and host, and never a password.
func TestWhereNamesTheDatabaseWithoutItsPassword(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for raw, want := range map[string]string{
		"":                                      "sqlite file " + dir + "/data/procsvc.db",
		"sqlite://x.db?_pragma=busy_timeout(1)": "sqlite file " + dir + "/x.db",
		"file:/tmp/y.db":                        "sqlite file /tmp/y.db",
		"sqlite://:memory:":                     "sqlite in memory",
		"postgres://app:s3cret@db.internal:5432/procsvc?sslmode=require": "postgres database procsvc as app on db.internal:5432",
	} {
		if got := Where(raw); got != want {
			t.Errorf("Where(%q) = %q; want %q", raw, got, want)
		}
	}
}

// TestURLReading: IsPostgres and SQLiteFile read a URL as Open does, for
// the commands that look at a URL before opening it (backup, restore,
// copy): a scheme in any case (CheckURL accepts POSTGRES://, and so must
// Open, or it would take it for a SQLite path), and a SQLite URL's file
// without its query.
func TestURLReading(t *testing.T) {
	for _, tc := range []struct {
		raw      string
		postgres bool
		file     string
	}{
		{"postgres://u@h/db", true, ""},
		{"postgresql://u@h/db", true, ""},
		{"POSTGRES://u@h/db", true, ""},
		{"PostgreSQL://u@h/db", true, ""},
		{"sqlite://data/procsvc.db?_pragma=busy_timeout(1)", false, "data/procsvc.db"},
		{"sqlite3:///var/x.db", false, "/var/x.db"},
		{"file:x.db?mode=ro", false, "x.db"},
		{"./x.db", false, "./x.db"},
		{"postgres.db", false, "postgres.db"},
	} {
		if got := IsPostgres(tc.raw); got != tc.postgres {
			t.Errorf("IsPostgres(%q) = %t", tc.raw, got)
		}
		if got := SQLiteFile(tc.raw); got != tc.file {
			t.Errorf("SQLiteFile(%q) = %q, want %q", tc.raw, got, tc.file)
		}
	}
}
