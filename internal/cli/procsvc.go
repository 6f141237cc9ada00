package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/procsvc/procsvc/internal/config"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/server"
)

// procsvc is the procsvc binary: the server and its operator commands. The
// load tools are a binary of their own (cmd/procsvc-bench).
var procsvc = Program{
	Name:        "procsvc",
	Intro:       "procsvc — self-hostable backend for workspace procedure tracking.",
	Default:     "serve",
	DefaultArgs: "[serve] [flags]",
	Commands: []Command{
		{"serve", "[flags]", "run the API (GraphQL at /graphql); the default", serve},
		{"migrate", "[flags]", "create or upgrade the database schema", migrate},
		{"copy", "--from URL --to URL", "copy a database into another (SQLite, PostgreSQL) and verify it", copyCommand},
		{"workspace create", "[flags]", "create a workspace with an admin and print its token", workspaceCreate},
		{"workspace list", "[flags]", "list workspaces", workspaceList},
		{"workspace export", "[flags]", "write a workspace to a JSON Lines archive", workspaceExport},
		{"workspace import", "[flags]", "import a workspace archive and print its admin's token", workspaceImport},
		{"member add", "[flags]", "add a member to a workspace", memberAdd},
		{"member list", "[flags]", "list a workspace's members", memberList},
		{"token create", "[flags]", "issue a token and print its secret once", tokenCreate},
		{"token list", "[flags]", "list a workspace's tokens", tokenList},
		{"token revoke", "[flags]", "revoke a token", tokenRevoke},
		{"backup", "[flags]", "copy a running SQLite database to a checked file", backupCmd},
		{"restore", "[flags]", "put a backup in place as a SQLite database", restoreCmd},
	},
	Outro: `Run "procsvc COMMAND --help" for a command's flags. Each of serve's flags can
also be set through the environment variable its help names; the other
commands read DATABASE_URL when --database-url is not given.
`,
}

// Run executes procsvc's args (without the program name) and returns the
// exit code.
func Run(ctx context.Context, args []string, env Env) int {
	return procsvc.Run(ctx, args, env)
}

func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

func serve(ctx context.Context, args []string, env Env) error {
	var cfg config.Config
	fs, applyEnv := cfg.FlagSet("procsvc serve", env.Stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: procsvc serve [flags]\n\nRuns the API: GraphQL at /graphql, health at /healthz and /readyz.\nOn an empty database it creates a demo workspace and prints an admin token.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := Parse(fs, args); err != nil {
		return err
	}
	if err := applyEnv(env.Getenv); err != nil {
		// A setting out of range or unreadable is the invocation's
		// mistake, as a bad flag is: exit 2.
		fmt.Fprintf(env.Stderr, "procsvc: %s\n", describe(err))
		return errUsage
	}
	// Before anything is logged, listened on or opened.
	if err := database.CheckURL(cfg.DatabaseURL); err != nil {
		return err
	}
	return server.Run(ctx, cfg, newLogger(cfg, env.Stderr), env.Stdout, env.Ready)
}

func migrate(ctx context.Context, args []string, env Env) error {
	var d DBFlags
	fs := FlagSet("procsvc migrate", "Creates or upgrades the database schema, then exits. On PostgreSQL it applies the\nversioned migrations of ent/migrate/migrations (idempotent; refuses edited files).", env)
	d.Bind(fs)
	if err := Parse(fs, args); err != nil {
		return err
	}
	// Not DBFlags.Open: the schema is not ready yet.
	db, err := database.Open(ctx, d.URL(env), database.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	if db.Dialect != "postgres" {
		if err := db.Migrate(ctx); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "procsvc: %s schema is up to date\n", db.Dialect)
		return nil
	}
	applied, err := db.ApplyMigrations(ctx)
	for _, v := range applied {
		fmt.Fprintf(env.Stdout, "procsvc: applied %s\n", v)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "procsvc: postgres schema is up to date (%d applied now)\n", len(applied))
	return nil
}
