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
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%q: the refusal repeats the password: %v", raw, err)
		}
	}
	if entries, _ := os.ReadDir("."); len(entries) > 0 {
		t.Errorf("refusals created %d entries, e.g. %s; want none", len(entries), entries[0].Name())
	}
	for _, raw := range []string{"sqlite://a.db", "sqlite3://b.db", "file:c.db", "d.db", "sqlite://:memory:", "postgres://h/db", "postgresql://h:5432?dbname=x"} {
		if err := CheckURL(raw); err != nil {
			t.Errorf("%q refused: %v", raw, err)
		}
	}
}
