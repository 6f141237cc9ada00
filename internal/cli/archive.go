package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"entgo.io/ent/dialect"

	"github.com/procsvc/procsvc/internal/archive"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
)

// usageError reports a command-line mistake in one line and a pointer to
// --help, and makes the command exit 2, as Parse does for a bad flag.
func usageError(fs *flag.FlagSet, format string, args ...any) error {
	fmt.Fprintf(fs.Output(), "%s\nRun '%s --help' for its flags.\n", fmt.Sprintf(format, args...), fs.Name())
	return errUsage
}

func workspaceExport(ctx context.Context, args []string, env Env) error {
	var d DBFlags
	var workspace, file string
	fs := FlagSet("procsvc workspace export",
		"Writes one workspace to a file as a JSON Lines archive (docs/archive-format.md),\n"+
			"read from the database directly (the server need not run), as of one snapshot.\n"+
			"Tokens and webhook secrets are never written. The file is written under a\n"+
			"temporary name and moved into place when complete; an existing file is never\n"+
			"overwritten.", env)
	fs.StringVar(&workspace, "workspace", "", "workspace id (required; see procsvc workspace list)")
	fs.StringVar(&file, "file", "", "the archive to write (required; must not exist)")
	d.Bind(fs)
	if err := Parse(fs, args); err != nil {
		return err
	}
	switch {
	case workspace == "":
		return usageError(fs, "--workspace is required (see procsvc workspace list)")
	case file == "":
		return usageError(fs, "--file is required")
	}
	if _, err := os.Lstat(file); err == nil {
		return usageError(fs, "--file %s already exists: choose another name or remove it", file)
	} else if !errors.Is(err, os.ErrNotExist) {
		return usageError(fs, "--file %s: %v", file, err)
	}
	dir := filepath.Dir(file)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return usageError(fs, "--file %s: directory %s does not exist", file, dir)
	}
	db, err := d.Open(ctx, env)
	if err != nil {
		return err
	}
	defer db.Close()
	actx, err := core.New(db.Client).ActAsAdmin(ctx, workspace)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(file)+".*.partial")
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	// Buffered: a write per record was a system call per record.
	buf := bufio.NewWriterSize(tmp, 256<<10)
	out, err := archive.Export(actx, db.Client, buf, archive.ExportOptions{Dialect: db.Dialect})
	if err != nil {
		return err
	}
	if err := buf.Flush(); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// Link, not rename: it fails if the file appeared meanwhile, so that
	// nothing is ever overwritten. A file system without hard links gets
	// the rename, after one more look.
	if err := os.Link(tmp.Name(), file); errors.Is(err, os.ErrExist) {
		return fmt.Errorf("--file %s appeared during the export: nothing was overwritten", file)
	} else if err != nil {
		if _, serr := os.Lstat(file); serr == nil {
			return fmt.Errorf("--file %s appeared during the export: nothing was overwritten", file)
		}
		if err := os.Rename(tmp.Name(), file); err != nil {
			return fmt.Errorf("--file %s: %w", file, err)
		}
	}
	os.Remove(tmp.Name())
	done = true
	fmt.Fprintf(env.Stdout, "exported: workspace %s at version %d to %s\n%s", out.Header.WorkspaceID, out.Header.WorkspaceVersion, file, countLines(out.Counts))
	return nil
}

// countLines lists counts a line a type, in the archive's order.
func countLines(counts map[string]int64) string {
	var b strings.Builder
	for _, t := range archive.Types {
		fmt.Fprintf(&b, "  %-10s %d\n", t, counts[t])
	}
	return b.String()
}

func workspaceImport(ctx context.Context, args []string, env Env) error {
	var d DBFlags
	var file string
	fs := FlagSet("procsvc workspace import",
		"Imports a workspace archive (procsvc workspace export, or GET /workspace/export) as a\n"+
			"new workspace with the archive's ids, and prints a token for its first active admin\n"+
			"once (tokens are never exported). The whole archive is validated before anything\n"+
			"is written, then written in one transaction: a refused or failed import leaves\n"+
			"nothing. Webhook endpoints arrive disabled with a fresh secret. An archive whose\n"+
			"workspace is already in the database is refused. A line may hold at most 4 MiB.", env)
	var allowPrivate bool
	fs.StringVar(&file, "file", "", "the archive to import (required)")
	fs.BoolVar(&allowPrivate, "webhook-allow-private-addresses", false, "accept webhook endpoints on loopback, private and other non-public hosts, as serve's flag of that name does (the servers of this database must run with it for them to be sent to)")
	d.Bind(fs)
	if err := Parse(fs, args); err != nil {
		return err
	}
	if file == "" {
		return usageError(fs, "--file is required")
	}
	f, err := os.Open(file)
	if err != nil {
		return usageError(fs, "--file: %v", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || st.IsDir() {
		return usageError(fs, "--file %s is not a file", file)
	}
	// The whole archive is checked before the database is opened: a
	// refused archive creates no database file and touches no database.
	checked, err := archive.Validate(f, archive.ImportOptions{WebhookAllowPrivateAddresses: allowPrivate})
	if err != nil {
		return fmt.Errorf("import %s: %w (nothing was imported)", file, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	db, err := d.Open(ctx, env)
	if err != nil {
		return err
	}
	defer db.Close()
	in, err := checked.Write(ctx, db.Client, f)
	if err != nil {
		return fmt.Errorf("import %s: %w (nothing was imported)", file, err)
	}
	fmt.Fprintf(env.Stdout, "workspace: %s (%s)\nadmin:     %s (%s)\ntoken:     %s\n%s", in.WorkspaceID, in.Name, in.Admin, in.Email, in.Secret, countLines(in.Counts))
	// The planner's statistics, for the rows just loaded: PostgreSQL
	// planned the export of a freshly imported 100 000 procedures without
	// them in 48 s, with them in 5 s (docs/operations.md). The import has
	// committed; a failure here only slows reads until autovacuum's.
	if err := refreshStatistics(ctx, db); err != nil {
		fmt.Fprintf(env.Stderr, "procsvc: the import committed, but refreshing the planner's statistics failed: %s\n", describe(err))
	}
	return nil
}

// refreshStatistics analyzes the tables an import writes.
func refreshStatistics(ctx context.Context, db *database.DB) error {
	if db.Dialect != dialect.Postgres {
		return db.RefreshStatistics(ctx)
	}
	_, err := db.SQL.ExecContext(ctx, "ANALYZE workspaces, members, projects, categories, procedures, comments, events, webhook_endpoints, procedure_tallies, tokens")
	return err
}
