package transfer

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/procsvc/procsvc/internal/database"
)

// CheckEndpoints refuses a source and a target that cannot be copied
// between, before either is opened (so that nothing is created): the same
// database twice, an in-memory SQLite database (nothing to copy, or
// nowhere to keep it), a SQLite source file that does not exist (Open
// would create it, empty). Both URLs have passed database.CheckURL.
func CheckEndpoints(from, to string) error {
	for _, u := range []struct{ raw, side string }{{from, "--from"}, {to, "--to"}} {
		if database.IsPostgres(u.raw) {
			continue
		}
		path := database.SQLiteFile(u.raw)
		if path == ":memory:" {
			return fmt.Errorf("%s: an in-memory SQLite database cannot be copied from or to", u.side)
		}
		if u.side == "--from" {
			if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("--from: the SQLite file %s does not exist", path)
			}
		}
	}
	if same(from, to) {
		return errors.New("--from and --to name the same database")
	}
	return nil
}

// same reports whether two URLs name one database: one SQLite file
// (however its path is spelled, links included), or one PostgreSQL
// database of one server.
func same(a, b string) bool {
	if database.IsPostgres(a) != database.IsPostgres(b) {
		return false
	}
	if !database.IsPostgres(a) {
		pa, pb := database.SQLiteFile(a), database.SQLiteFile(b)
		if ia, err := os.Stat(pa); err == nil {
			if ib, err := os.Stat(pb); err == nil {
				return os.SameFile(ia, ib)
			}
		}
		aa, _ := filepath.Abs(pa)
		ab, _ := filepath.Abs(pb)
		return aa == ab
	}
	return postgresIdentity(a) == postgresIdentity(b)
}

// postgresIdentity is a PostgreSQL URL's hosts, ports and database, with
// libpq's defaults filled in.
func postgresIdentity(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	q := u.Query()
	db := strings.Trim(u.Path, "/")
	if db == "" {
		db = q.Get("dbname")
	}
	host := u.Host
	if host == "" {
		host = q.Get("host")
	}
	var hosts []string
	for _, h := range strings.Split(host, ",") {
		name, port := h, "5432"
		if i := strings.LastIndex(h, ":"); i >= 0 && !strings.HasSuffix(h, "]") {
			name, port = h[:i], h[i+1:]
		}
		switch strings.ToLower(name) {
		case "", "localhost", "127.0.0.1", "[::1]":
			name = "localhost"
		}
		hosts = append(hosts, strings.ToLower(name)+":"+port)
	}
	if db == "" {
		db = u.User.Username()
	}
	return strings.Join(hosts, ",") + "/" + db
}
