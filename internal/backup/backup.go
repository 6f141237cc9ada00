// Package backup copies a running SQLite database to a file and puts such
// a copy back (docs/operations.md, "Backup and restore"). A backup is
// SQLite's own VACUUM INTO: one read transaction, so the copy is the
// database at one commit, every workspace at one version, while the server
// keeps serving and writing (WAL mode lets readers and the writer proceed
// together). Nothing is ever half-written where the operator looks: a copy
// is made in a temporary file beside its destination, checked (integrity,
// procsvc's tables), synced, and only then renamed into place; on any error
// or a cancelled context the temporary file is removed.
//
// PostgreSQL is pg_dump's and pg_restore's job; PostgresDumpCommand says
// how, without repeating a password.
package backup

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	_ "modernc.org/sqlite" // SQLite driver, pure Go
)

// ErrRefused marks an operation refused before anything was written: a
// destination that exists, a directory that does not, a backup file that
// is not a sound procsvc database, a target that holds workspaces. The
// command line answers it with exit status 2, as it does a bad flag.
var ErrRefused = errors.New("refused")

// refused is a refusal that errors.Is ErrRefused.
type refused struct{ msg string }

func (e *refused) Error() string        { return e.msg }
func (e *refused) Is(target error) bool { return target == ErrRefused }

func refusef(format string, args ...any) error { return &refused{fmt.Sprintf(format, args...)} }

// requiredTables are the tables whose presence makes a SQLite file a
// procsvc database. Not every table of the current schema: a backup of an
// older procsvc lacks the newer ones, and the server's start migrates a
// SQLite file in place.
var requiredTables = []string{"workspaces", "members", "projects", "procedures", "comments", "events"}

// TableCount is how many rows one table of a copy holds.
type TableCount struct {
	Table string
	Rows  int64
}

// WorkspaceVersion is one workspace's version in a copy: the version of its
// last committed write (docs/api.md, "Events"). It names the copy's point
// in time. LastEvent is the version of the newest change-log event the
// copy holds for it (0: none): the version itself, unless writes that log
// no event came last (procsvc-bench seed's bulk load).
type WorkspaceVersion struct {
	ID, Key, Name string
	Version       int64
	LastEvent     int64
}

// Summary is what a verified copy holds.
type Summary struct {
	// Path is the file the copy was put in.
	Path       string
	Bytes      int64
	Tables     []TableCount
	Workspaces []WorkspaceVersion
}

// PostgresDumpArgs are pg_dump's arguments that back up the PostgreSQL
// database of rawURL into file: the custom format (compressed, and what
// pg_restore reads, table by table), without the tables' owner, so that it
// restores into a database of any owner. The URL's password, and any
// password parameter, are removed: pg_dump reads it from PGPASSWORD or
// ~/.pgpass, and a command line is visible to every user of the machine.
func PostgresDumpArgs(rawURL, file string) []string {
	return []string{"-Fc", "--no-owner", "-d", withoutPassword(rawURL), "-f", file}
}

// PostgresRestoreArgs are pg_restore's arguments that load a PostgresDumpArgs
// file into the new, empty PostgreSQL database of rawURL, stopping at the
// first error (a partial restore is not a backup's state).
func PostgresRestoreArgs(file, rawURL string) []string {
	return []string{"--no-owner", "--exit-on-error", "-d", withoutPassword(rawURL), file}
}

// PostgresDumpCommand is PostgresDumpArgs as a shell command line.
func PostgresDumpCommand(rawURL, file string) string {
	return commandLine("pg_dump", PostgresDumpArgs(rawURL, file))
}

// PostgresRestoreCommand is PostgresRestoreArgs as a shell command line.
func PostgresRestoreCommand(file, rawURL string) string {
	return commandLine("pg_restore", PostgresRestoreArgs(file, rawURL))
}

func commandLine(name string, args []string) string {
	line := name
	for _, a := range args {
		line += " " + shellQuote(a)
	}
	return line
}

// withoutPassword drops the password from a URL's user info and query.
func withoutPassword(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "postgres://USER@HOST:PORT/DATABASE"
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	q := u.Query()
	if q.Has("password") {
		q.Del("password")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// checkDestination refuses to write path when it exists (unless overwrite)
// or its directory does not: nothing is created then.
func checkDestination(path string, overwrite bool) error {
	dir := filepath.Dir(path)
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return refusef("the directory %s does not exist: create it (mkdir -p %s), or name a file in one that does", dir, dir)
	}
	info, err := os.Lstat(path)
	switch {
	case err == nil && info.IsDir():
		return refusef("%s is a directory: name a file", path)
	case err == nil && !overwrite:
		return refusef("%s exists: name a new file, or add --overwrite to replace it", path)
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return err
	}
	return nil
}

// tempBeside creates an empty temporary file in path's directory, where
// a rename onto path is atomic, and returns its name. The name starts with
// a dot and the destination's, so that an operator who finds one after a
// crash knows what it was.
func tempBeside(path string) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", err
	}
	name := f.Name()
	if err := f.Close(); err != nil {
		os.Remove(name)
		return "", err
	}
	return name, nil
}

// syncFile flushes path's contents to stable storage.
func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// syncDir flushes a directory's entries, so that a rename into it survives
// a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}

// install puts the verified temporary file tmp at path: with replace, a
// rename (atomic: path is the old file or the new one, never a mix);
// without, a hard link that fails if path appeared meanwhile, so that a
// file created since the destination was checked is never overwritten.
func install(tmp, path string, replace bool) error {
	if replace {
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
	} else {
		if err := os.Link(tmp, path); err != nil {
			if errors.Is(err, os.ErrExist) {
				return refusef("%s appeared while the copy was made: nothing was overwritten", path)
			}
			return err
		}
		if err := os.Remove(tmp); err != nil {
			return err
		}
	}
	return syncDir(filepath.Dir(path))
}

// openFileDB opens the SQLite file path for reading only. immutable: the
// file is a copy nobody else writes (a backup, or a temporary file of
// ours), so SQLite takes no lock and needs no -shm beside it, whatever the
// journal mode its header records.
func openFileDB(path string) (*sql.DB, error) {
	u := url.URL{Scheme: "file", Opaque: path, RawQuery: "mode=ro&immutable=1"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// sqliteMagic opens every SQLite database file.
const sqliteMagic = "SQLite format 3\x00"

// checkHeader refuses a file that is not a SQLite database, or is shorter
// than the pages its header counts (a truncated copy: SQLite would read
// the missing pages as absent, not as an error, until a query reached them).
func checkHeader(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var h [100]byte
	n, err := io.ReadFull(f, h[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return err
	}
	if n < len(h) || string(h[:16]) != sqliteMagic {
		return refusef("%s is not a SQLite database", path)
	}
	pageSize := int64(h[16])<<8 | int64(h[17])
	if pageSize == 1 {
		pageSize = 65536
	}
	pages := int64(h[28])<<24 | int64(h[29])<<16 | int64(h[30])<<8 | int64(h[31])
	info, err := f.Stat()
	if err != nil {
		return err
	}
	// The header's page count is valid when its "version-valid-for"
	// number matches the change counter (SQLite 3.7.0 and later).
	if string(h[24:28]) == string(h[92:96]) && pages > 0 && info.Size() < pages*pageSize {
		return refusef("%s is truncated: %d bytes where its header counts %d pages of %d bytes", path, info.Size(), pages, pageSize)
	}
	return nil
}

// verify checks the SQLite file path (a copy nobody else writes) and
// returns what it holds: it must be a SQLite database that passes
// integrity_check and has procsvc's tables. Every failure is a refusal
// naming label, the file as the operator knows it.
func verify(ctx context.Context, path, label string) (*Summary, error) {
	if err := checkHeader(path); err != nil {
		var r *refused
		if errors.As(err, &r) {
			return nil, refusef("%s", strings.Replace(r.msg, path, label, 1))
		}
		return nil, err
	}
	db, err := openFileDB(path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	// integrity_check reads every page; quick_check would skip the
	// indexes' agreement with their tables.
	rows, err := db.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, refusef("%s is not a sound SQLite database: %v", label, err)
	}
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			rows.Close()
			return nil, err
		}
		problems = append(problems, line)
	}
	if err := rows.Err(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, refusef("%s is not a sound SQLite database: %v", label, err)
	}
	rows.Close()
	if len(problems) != 1 || problems[0] != "ok" {
		if len(problems) > 3 {
			problems = append(problems[:3], fmt.Sprintf("and %d more", len(problems)-3))
		}
		return nil, refusef("%s fails SQLite's integrity check: %s", label, strings.Join(problems, "; "))
	}
	s := &Summary{Path: label}
	tables, err := procsvcTables(ctx, db, label)
	if err != nil {
		return nil, err
	}
	for _, t := range tables {
		var n int64
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM "`+strings.ReplaceAll(t, `"`, `""`)+`"`).Scan(&n); err != nil {
			return nil, fmt.Errorf("count the rows of %s: %w", t, err)
		}
		s.Tables = append(s.Tables, TableCount{Table: t, Rows: n})
	}
	// One index probe a workspace, on events (workspace_id, version).
	wrows, err := db.QueryContext(ctx, `SELECT w.id, w.key, w.name, w.version,
		(SELECT max(e.version) FROM events e WHERE e.workspace_id = w.id)
		FROM workspaces w ORDER BY w.key, w.id`)
	if err != nil {
		return nil, fmt.Errorf("read the workspaces' versions: %w", err)
	}
	defer wrows.Close()
	for wrows.Next() {
		var w WorkspaceVersion
		var id any
		var last sql.NullInt64
		if err := wrows.Scan(&id, &w.Key, &w.Name, &w.Version, &last); err != nil {
			return nil, err
		}
		w.ID, w.LastEvent = idText(id), last.Int64
		s.Workspaces = append(s.Workspaces, w)
	}
	if err := wrows.Err(); err != nil {
		return nil, err
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	s.Bytes = info.Size()
	return s, nil
}

// idText renders a uuid column as SQLite returns it (text, or 16 bytes).
func idText(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case []byte:
		if len(t) == 16 {
			return fmt.Sprintf("%x-%x-%x-%x-%x", t[0:4], t[4:6], t[6:8], t[8:10], t[10:16])
		}
		return string(t)
	}
	return fmt.Sprint(v)
}

// procsvcTables lists the tables of db, refusing a database that lacks one
// of procsvc's (label names it).
func procsvcTables(ctx context.Context, db *sql.DB, label string) ([]string, error) {
	tables, err := tableNames(ctx, db)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, refusef("%s is not a SQLite database: %v", label, err)
	}
	var missing []string
	for _, t := range requiredTables {
		if !slices.Contains(tables, t) {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return nil, refusef("%s is not a procsvc database: it has no table %s", label, strings.Join(missing, ", "))
	}
	return tables, nil
}

// tableNames lists a SQLite database's own tables, by name.
func tableNames(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, rows.Err()
}
