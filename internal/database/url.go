package database

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// ErrBadURL marks a database URL that names no database procsvc can open:
// an unknown scheme, or a PostgreSQL URL without a database. It is the
// operator's mistake, refused before anything is opened or created (the
// command line exits 2 with the message).
var ErrBadURL = errors.New("database: bad URL")

// urlForms is what --database-url accepts, for the refusals.
const urlForms = "use postgres://USER@HOST:PORT/DATABASE (or postgresql://) for PostgreSQL, or sqlite://PATH, file:PATH or a bare path for a SQLite file (--database-url, DATABASE_URL)"

// badURL is a refusal that errors.Is ErrBadURL.
type badURL struct{ reason string }

func (e *badURL) Error() string        { return "database URL " + e.reason + ": " + urlForms }
func (e *badURL) Is(target error) bool { return target == ErrBadURL }

// CheckURL refuses a URL that Open would otherwise have taken for a SQLite
// path (any "scheme://…" but its own: mysql://… once quietly became a new,
// empty SQLite file named after it, served as if healthy) or a PostgreSQL
// URL that names no database. Only the scheme is quoted back, never the
// rest, which may hold a password.
func CheckURL(raw string) error {
	scheme, _, ok := strings.Cut(raw, "://")
	if !ok || strings.ContainsAny(scheme, "/\\ ") || scheme == "" {
		return checkSQLitePath(raw) // a path (file:PATH, C:\…, ./x.db), never a scheme
	}
	switch strings.ToLower(scheme) {
	case "sqlite", "sqlite3", "file":
		return checkSQLitePath(raw)
	case "postgres", "postgresql":
		u, err := url.Parse(raw)
		if err != nil {
			// url.Error quotes the URL, password and all: not repeated.
			return &badURL{scheme + "://…: not a URL"}
		}
		if strings.Trim(u.Path, "/") == "" && u.Query().Get("dbname") == "" {
			return &badURL{scheme + "://…: names no database (a PostgreSQL URL ends in /DATABASE)"}
		}
		return nil
	}
	return &badURL{fmt.Sprintf("%s://…: unknown scheme %q", scheme, scheme)}
}

// IsPostgres reports whether rawURL is a PostgreSQL URL: postgres:// or
// postgresql://, in any case (as url.Parse, and so lib/pq, reads it).
func IsPostgres(rawURL string) bool {
	scheme, _, ok := strings.Cut(rawURL, "://")
	return ok && (strings.EqualFold(scheme, "postgres") || strings.EqualFold(scheme, "postgresql"))
}

// SQLiteFile is the file a SQLite URL names, as Open reads it (its query
// dropped); "" for a PostgreSQL URL.
func SQLiteFile(rawURL string) string {
	if IsPostgres(rawURL) {
		return ""
	}
	path, _ := sqlitePath(rawURL)
	return path
}

// checkSQLitePath refuses a SQLite URL whose file would be created in a
// directory that does not exist: a mistyped path (--database-url
// sqlite://dta/procsvc.db) would otherwise become a new, empty store. Only
// the default's directory (data/, on a first run) is created.
func checkSQLitePath(raw string) error {
	if raw == "" || raw == DefaultURL {
		return nil
	}
	path, query := sqlitePath(raw)
	if name := timeSetting(query); name != "" {
		return &badURL{fmt.Sprintf("%s: %s is procsvc's to set: times are stored and read in one form (docs/operations.md, \"SQLite URLs\")", redactQuery(raw), name)}
	}
	if path == "" || path == ":memory:" {
		return nil
	}
	dir := filepath.Dir(path)
	if info, err := os.Stat(dir); err == nil && info.IsDir() {
		return nil
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return &badURL{fmt.Sprintf("%s: the directory %s does not exist: create it (mkdir -p %s), or name a file in one that does", raw, dir, dir)}
}

// Where says which database rawURL (CheckURL's forms; "" is DefaultURL)
// opens, for the first line a server logs: the SQLite file's absolute
// path, or PostgreSQL's database, user and hosts; never a password.
func Where(rawURL string) string {
	if rawURL == "" {
		rawURL = DefaultURL
	}
	if IsPostgres(rawURL) {
		u, err := url.Parse(rawURL)
		if err != nil {
			return "postgres (an unreadable URL)"
		}
		where := "postgres database " + strings.Trim(u.Path, "/")
		if u.User != nil {
			where += " as " + u.User.Username()
		}
		return where + " on " + u.Host
	}
	path, _ := sqlitePath(rawURL)
	if path == ":memory:" {
		return "sqlite in memory"
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return "sqlite file " + path
}

// timeSettings are the driver's settings of how times are written and
// read: procsvc sets _time_format itself, and reads times in the form it
// writes (Time, the comment reader), so a URL may not change them.
var timeSettings = []string{"_time_format", "_time_integer_format", "_inttotime", "_texttotime", "_loc", "_timezone"}

// timeSetting returns the first of timeSettings a SQLite URL's query sets.
func timeSetting(query string) string {
	q, err := url.ParseQuery(query)
	if err != nil {
		return ""
	}
	for _, name := range timeSettings {
		if q.Has(name) {
			return name
		}
	}
	return ""
}

// redactQuery is a SQLite URL without its query (which may hold a
// pragma's key).
func redactQuery(raw string) string {
	_, query := sqlitePath(raw)
	if query == "" {
		return raw
	}
	return strings.TrimSuffix(raw, "?"+query) + "?…"
}
