package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/transfer"
)

const copySummary = `Copies every table of one procsvc database into another (SQLite to PostgreSQL
and back), keeping ids, timestamps, versions, token hashes and webhook
secrets, then verifies that the target holds exactly the source's rows
(docs/operations.md, "Moving between databases (copy)").

The source must not change meanwhile: stop the server, or copy from a file
made by procsvc backup. The target is migrated by the copy; it must be
empty, or what an interrupted copy of the same source left (run the same
command again: it resumes). A target holding other data is refused.

Progress goes to stderr, the summary and the verification to stdout.
Exit status: 0 copied and verified; 1 failed or different; 2 usage.`

func copyCommand(ctx context.Context, args []string, env Env) error {
	var (
		from, to   string
		rows, mb   int
		verifyOnly bool
	)
	fs := FlagSet("procsvc copy", copySummary, env)
	fs.StringVar(&from, "from", "", "source database URL (required): postgres://… or sqlite://PATH")
	fs.StringVar(&to, "to", "", "target database URL (required): postgres://… (the database must exist) or sqlite://PATH")
	fs.IntVar(&rows, "batch-rows", transfer.DefaultBatchRows, fmt.Sprintf("rows read and written per batch, one target transaction each (1 to %d)", transfer.MaxBatchRows))
	fs.IntVar(&mb, "batch-mb", transfer.DefaultBatchBytes>>20, fmt.Sprintf("memory a batch's rows may hold, in MiB; a batch ends at whichever bound comes first (1 to %d)", transfer.MaxBatchBytes>>20))
	fs.BoolVar(&verifyOnly, "verify-only", false, "copy nothing: compare the two databases (rows and SHA-256 per table and workspace) and exit 1 if they differ")
	if err := Parse(fs, args); err != nil {
		return err
	}
	usage := func(format string, a ...any) error {
		fmt.Fprintf(env.Stderr, "procsvc copy: "+format+"\nRun 'procsvc copy --help' for its flags.\n", a...)
		return errUsage
	}
	switch {
	case from == "" || to == "":
		return usage("--from and --to are both required")
	case rows < 1 || rows > transfer.MaxBatchRows:
		return usage("invalid --batch-rows %d: use 1 to %d", rows, transfer.MaxBatchRows)
	case mb < 1 || mb > transfer.MaxBatchBytes>>20:
		return usage("invalid --batch-mb %d: use 1 to %d", mb, transfer.MaxBatchBytes>>20)
	}
	for _, u := range []string{from, to} {
		if err := database.CheckURL(u); err != nil {
			return err
		}
	}
	if err := transfer.CheckEndpoints(from, to); err != nil {
		return usage("%s", err)
	}
	opts := transfer.Options{BatchRows: rows, BatchBytes: int64(mb) << 20, Progress: env.Stderr}
	// No probe of the pool: the copy's own statements find a lost server.
	dbOpts := database.Options{ProbeInterval: -1}
	src, err := database.Open(ctx, from, dbOpts)
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	defer src.Close()
	dst, err := database.Open(ctx, to, dbOpts)
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	defer dst.Close()

	if verifyOnly {
		start := time.Now()
		rep, err := transfer.Verify(ctx, src, dst, opts)
		rep.Write(env.Stdout)
		if err == nil {
			fmt.Fprintf(env.Stdout, "procsvc copy: the target holds exactly the source's rows (verified in %s)\n", time.Since(start).Round(time.Millisecond))
		}
		return verificationError(err, env)
	}
	res, err := transfer.Copy(ctx, src, dst, opts)
	for _, t := range res.Tables {
		fmt.Fprintf(env.Stdout, "copy: %-20s %9d rows (%d copied now in %d batches, %d by an earlier run)\n", t.Table, t.Rows, t.Copied, t.Batches, t.Resumed)
	}
	if len(res.Verify.Tables) > 0 {
		res.Verify.Write(env.Stdout)
	}
	if err == nil {
		fmt.Fprintf(env.Stdout, "procsvc copy: copied in %s, verified in %s: the target holds exactly the source's rows\n",
			res.Copying.Round(time.Millisecond), res.Verified.Round(time.Millisecond))
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted (%w): what was copied is kept; run the same command again to resume", ctx.Err())
	}
	return verificationError(err, env)
}

// verificationError prints every difference on stderr, the error itself
// naming the first.
func verificationError(err error, env Env) error {
	var diff *transfer.ErrDifferent
	if errors.As(err, &diff) {
		for _, d := range diff.Diffs {
			fmt.Fprintf(env.Stderr, "procsvc copy: different: %s\n", d)
		}
	}
	return err
}
