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
	"sync"

	"github.com/procsvc/procsvc/internal/database"
)

// afterCopy, when set, runs once the copy is written and before it is
// checked: the tests' way to cancel a backup or restore in its middle.
var afterCopy func()

// openLive opens the SQLite file path as the server does, for reading and
// writing, without creating it, waiting up to 10 s for a lock held by a
// writer.
func openLive(path string) (*sql.DB, error) {
	u := url.URL{Scheme: "file", Opaque: path, RawQuery: "mode=rw&_pragma=busy_timeout(10000)"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// removeTemp removes a temporary file of ours and the journal SQLite may
// have left beside it when its writing was interrupted.
func removeTemp(tmp string) {
	for _, suffix := range []string{"", "-journal", "-wal", "-shm"} {
		os.Remove(tmp + suffix)
	}
}

// existingFile refuses a path that is not an existing regular file.
func existingFile(path, what string) error {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return refusef("%s %s does not exist", what, path)
	case err != nil:
		return err
	case !info.Mode().IsRegular():
		return refusef("%s %s is not a file", what, path)
	}
	return nil
}

// sameFile reports whether a and b name the same existing file.
func sameFile(a, b string) bool {
	ia, err1 := os.Stat(a)
	ib, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(ia, ib)
}

// BackupSQLite copies the SQLite database of sourceURL, which may be in use
// by a running server, to the file to, and returns what the copy holds.
// The copy is one read transaction (VACUUM INTO): while it runs the server
// keeps writing, into the WAL, which cannot be checkpointed past the copy's
// snapshot and so grows until the copy ends (docs/operations.md). It is
// written to a temporary file beside to, synced, checked (integrity_check,
// procsvc's tables, the rows of each table, the workspaces' versions) and
// only then put at to; on any error, or ctx cancelled, the temporary file
// is removed and to is left as it was.
//
// Refused (ErrRefused), with nothing created: to exists (unless
// overwrite), to's directory does not, the source does not exist or is to
// itself.
func BackupSQLite(ctx context.Context, sourceURL, to string, overwrite bool) (*Summary, error) {
	src := database.SQLiteFile(sourceURL)
	if src == "" || src == ":memory:" {
		return nil, refusef("procsvc backup copies a SQLite file: %s names none", sourceURL)
	}
	if err := existingFile(src, "the database"); err != nil {
		return nil, err
	}
	if err := checkDestination(to, overwrite); err != nil {
		return nil, err
	}
	if sameFile(src, to) {
		return nil, refusef("%s is the database itself: name another file", to)
	}
	db, err := openLive(src)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	// Before anything is created: a database URL that names another
	// program's file, or no SQLite file at all, is the operator's mistake.
	if _, err := procsvcTables(ctx, db, src); err != nil {
		return nil, err
	}
	tmp, err := tempBeside(to)
	if err != nil {
		return nil, err
	}
	done := false
	defer func() {
		if !done {
			removeTemp(tmp)
		}
	}()
	// VACUUM INTO writes only into an empty file, which tempBeside left.
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", tmp); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("copy %s: %w", src, err)
	}
	if afterCopy != nil {
		afterCopy()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := syncFile(tmp); err != nil {
		return nil, err
	}
	s, err := verify(ctx, tmp, to)
	if err != nil {
		var r *refused
		if errors.As(err, &r) {
			// The copy SQLite just wrote failed its check: a fault of
			// the disk or of the source, not the operator's mistake.
			return nil, fmt.Errorf("the copy failed its check, nothing was kept: %s", r.msg)
		}
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := install(tmp, to, overwrite); err != nil {
		return nil, err
	}
	done = true
	return s, nil
}

// RestoreSQLite puts the backup file from at the SQLite database of
// targetURL and returns what it holds. The backup is copied to a temporary
// file in the target's directory, synced, checked (a SQLite database that
// passes integrity_check, with procsvc's tables) and then renamed over the
// target: the target is the old database or the restored one, never a mix.
//
// Refused (ErrRefused), with the target untouched: from is missing, is not
// SQLite, is truncated or damaged, or is not a procsvc database; the
// target holds a workspace, or is not a procsvc database, unless replace;
// another process has the target open (a server: stop it first).
func RestoreSQLite(ctx context.Context, from, targetURL string, replace bool) (*Summary, error) {
	target := database.SQLiteFile(targetURL)
	if target == "" || target == ":memory:" {
		return nil, refusef("procsvc restore writes a SQLite file: %s names none", targetURL)
	}
	if err := existingFile(from, "the backup"); err != nil {
		return nil, err
	}
	if hasWAL(from) {
		return nil, refusef("%s-wal exists beside the backup: the file alone is not the database (procsvc backup never leaves one; open it once with sqlite3 to checkpoint)", from)
	}
	if sameFile(from, target) {
		return nil, refusef("%s is the backup itself: name another target", target)
	}
	targetExists, err := checkTarget(ctx, target, replace)
	if err != nil {
		return nil, err
	}
	tmp, err := tempBeside(target)
	if err != nil {
		return nil, err
	}
	done := false
	defer func() {
		if !done {
			removeTemp(tmp)
		}
	}()
	if err := copyFile(ctx, from, tmp); err != nil {
		return nil, err
	}
	if afterCopy != nil {
		afterCopy()
	}
	s, err := verify(ctx, tmp, from)
	if err != nil {
		return nil, err
	}
	s.Path = target
	release := func() {}
	if targetExists {
		if release, err = lockTarget(ctx, target); err != nil {
			return nil, err
		}
	}
	defer release()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := install(tmp, target, targetExists); err != nil {
		return nil, err
	}
	done = true
	// The lock is on the old file, which the rename unlinked; closing
	// its connection removes the old, empty WAL.
	release()
	// The old file's shared-memory index describes the old file; its WAL
	// is empty (quiesce). Neither may be read with the new file.
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := os.Remove(target + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	return s, nil
}

// checkTarget refuses a restore over target when it holds a workspace or
// is not a procsvc database, unless replace; an absent target, an empty
// file, or a migrated database without a workspace are taken. It reports
// whether target exists.
func checkTarget(ctx context.Context, target string, replace bool) (exists bool, err error) {
	dir := filepath.Dir(target)
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return false, refusef("the directory %s does not exist: create it (mkdir -p %s), or name a file in one that does", dir, dir)
	}
	info, err := os.Stat(target)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	case !info.Mode().IsRegular():
		return false, refusef("%s is not a file", target)
	case info.Size() == 0 && !hasWAL(target):
		// An empty file (a new database before its first write).
		return true, nil
	}
	if err := checkHeader(target); info.Size() > 0 && err != nil {
		if !errors.Is(err, ErrRefused) || replace {
			return true, nil
		}
		return true, refusef("the target %s is not a procsvc database: add --replace to overwrite it", target)
	}
	db, err := openLive(target)
	if err != nil {
		return true, err
	}
	defer db.Close()
	var workspaces int64
	err = db.QueryRowContext(ctx, "SELECT count(*) FROM workspaces").Scan(&workspaces)
	switch {
	case err != nil && ctx.Err() != nil:
		return true, ctx.Err()
	case err != nil && !replace:
		return true, refusef("the target %s is not an empty procsvc database (%v): add --replace to overwrite it", target, err)
	case workspaces > 0 && !replace:
		return true, refusef("the target %s holds %d workspace(s): restore into a new file, or add --replace to overwrite it", target, workspaces)
	}
	return true, nil
}

// lockTarget takes the target for the restore: an exclusive lock that no
// other connection may hold the file open beside (SQLite's EXCLUSIVE
// locking mode, taken before the file's WAL is touched, fails while any
// other process has the database open, a server idle or not), then folds
// its WAL into it and empties it, so that the WAL left beside the target
// can never be replayed onto the restored file. The lock is held until
// release, which the restore calls once the new file is in place. A target
// that is no SQLite file (taken with --replace) has no WAL and no lock.
func lockTarget(ctx context.Context, target string) (release func(), err error) {
	if info, err := os.Stat(target); err == nil && info.Size() > 0 && checkHeader(target) != nil {
		return func() {}, nil
	}
	u := url.URL{Scheme: "file", Opaque: target, RawQuery: "mode=rw&_pragma=busy_timeout(2000)&_pragma=locking_mode(EXCLUSIVE)"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	var once sync.Once
	release = func() { once.Do(func() { conn.Close(); db.Close() }) }
	if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		release()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, refusef("the target %s is in use by another process (%v): stop its servers first", target, err)
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		release()
		return nil, err
	}
	var busy, logged, checkpointed int
	if err := conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logged, &checkpointed); err != nil {
		release()
		return nil, fmt.Errorf("checkpoint %s: %w", target, err)
	}
	if busy != 0 || hasWAL(target) {
		release()
		return nil, refusef("the target %s is in use (its WAL could not be emptied): stop its servers first", target)
	}
	return release, nil
}

// hasWAL reports whether a WAL with frames lies beside path: writes
// committed to the database that its file does not hold yet.
func hasWAL(path string) bool {
	info, err := os.Stat(path + "-wal")
	return err == nil && info.Size() > 0
}

// copyChunk is how many bytes copyFile moves between looks at ctx.
const copyChunk = 1 << 20

// copyFile copies from into the existing file to, stopping when ctx is
// cancelled, and syncs it.
func copyFile(ctx context.Context, from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	buf := make([]byte, copyChunk)
	for {
		if err := ctx.Err(); err != nil {
			out.Close()
			return err
		}
		n, rerr := in.Read(buf)
		if n > 0 {
			if _, err := out.Write(buf[:n]); err != nil {
				out.Close()
				return err
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			out.Close()
			return rerr
		}
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
