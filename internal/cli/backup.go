package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/procsvc/procsvc/internal/backup"
	"github.com/procsvc/procsvc/internal/database"
)

// refusal reports a refusal of package backup (a destination that exists,
// a backup that is not sound, a target that holds workspaces) in one line,
// and makes it exit 2: like a bad flag, it is the invocation's mistake and
// nothing was written. An interruption says that nothing was written; other
// errors pass on (exit 1).
func refusal(err error, env Env) error {
	switch {
	case errors.Is(err, backup.ErrRefused):
		fmt.Fprintf(env.Stderr, "procsvc: %s\n", err)
		return errUsage
	case errors.Is(err, context.Canceled):
		// Ctrl-C or SIGTERM: the temporary file is gone.
		return errors.New("interrupted: nothing was written")
	}
	return err
}

// usageLine reports a mistake of the invocation in one line: exit 2.
func usageLine(env Env, format string, args ...any) error {
	fmt.Fprintf(env.Stderr, "procsvc: "+format+"\n", args...)
	return errUsage
}

func backupCmd(ctx context.Context, args []string, env Env) error {
	var d DBFlags
	var to string
	var overwrite bool
	fs := FlagSet("procsvc backup", `Copies a SQLite database, while its server keeps serving and writing, to a
file: one consistent point in time (SQLite's VACUUM INTO), written beside the
file, checked (integrity_check, row counts) and only then renamed into place.
Prints each workspace's version (the point in time) and newest change-log
event, and each table's rows.
On PostgreSQL it prints the pg_dump command to use instead (exit 2).
See docs/operations.md, "Backup and restore".`, env)
	d.Bind(fs)
	fs.StringVar(&to, "to", "", "the backup file to write (required); its directory must exist")
	fs.BoolVar(&overwrite, "overwrite", false, "replace the file --to when it exists")
	if err := Parse(fs, args); err != nil {
		return err
	}
	url, err := d.CheckedURL(env)
	if err != nil {
		return err
	}
	if to == "" {
		return usageLine(env, "--to is required: the file to write the backup to")
	}
	if database.IsPostgres(url) {
		return usageLine(env, "procsvc backup copies SQLite; for PostgreSQL use pg_dump: %s (docs/operations.md)", backup.PostgresDumpCommand(url, to))
	}
	s, err := backup.BackupSQLite(ctx, url, to, overwrite)
	if err != nil {
		return refusal(err, env)
	}
	fmt.Fprintf(env.Stdout, "procsvc: backup %s written and checked (integrity ok, %d bytes)\n", s.Path, s.Bytes)
	printSummary(env, s)
	return nil
}

func restoreCmd(ctx context.Context, args []string, env Env) error {
	var d DBFlags
	var from string
	var replace bool
	fs := FlagSet("procsvc restore", `Puts a backup of procsvc backup in place as the SQLite database of
--database-url: the file is checked (a SQLite database that passes
integrity_check, with procsvc's tables), copied beside the target, synced and
renamed over it. A target that holds a workspace is refused unless --replace;
stop the target's servers first. Into PostgreSQL: procsvc copy --from
sqlite://BACKUP --to postgres://... See docs/operations.md, "Backup and restore".`, env)
	d.Bind(fs)
	fs.StringVar(&from, "from", "", "the backup file to restore (required)")
	fs.BoolVar(&replace, "replace", false, "overwrite a target that holds workspaces")
	if err := Parse(fs, args); err != nil {
		return err
	}
	url, err := d.CheckedURL(env)
	if err != nil {
		return err
	}
	if from == "" {
		return usageLine(env, "--from is required: the backup file to restore")
	}
	if database.IsPostgres(url) {
		return usageLine(env, "procsvc restore writes SQLite; to load a SQLite backup into PostgreSQL use procsvc copy --from sqlite://%s --to DATABASE_URL, and a pg_dump file pg_restore (docs/operations.md)", from)
	}
	s, err := backup.RestoreSQLite(ctx, from, url, replace)
	if err != nil {
		return refusal(err, env)
	}
	fmt.Fprintf(env.Stdout, "procsvc: restored %s into %s (integrity ok, %d bytes)\n", from, s.Path, s.Bytes)
	printSummary(env, s)
	return nil
}

// printSummary lists a copy's workspaces with their versions (its point in
// time) and newest events, and its tables with their rows.
func printSummary(env Env, s *backup.Summary) {
	tw := table(env, "WORKSPACE\tKEY\tVERSION\tLAST EVENT\tNAME")
	for _, w := range s.Workspaces {
		last := "-"
		if w.LastEvent > 0 {
			last = fmt.Sprint(w.LastEvent)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", w.ID, w.Key, w.Version, last, w.Name)
	}
	tw.Flush()
	fmt.Fprintln(env.Stdout)
	tw = table(env, "TABLE\tROWS")
	for _, t := range s.Tables {
		fmt.Fprintf(tw, "%s\t%d\n", t.Table, t.Rows)
	}
	tw.Flush()
}
