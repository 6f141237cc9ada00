// Package cli implements procsvc's commands: serve (the default), migrate,
// and the operator commands for workspaces, members and tokens.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/config"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/events"
	"github.com/procsvc/procsvc/internal/server"
	"github.com/procsvc/procsvc/internal/timefmt"
)

// Env is what a command runs with; main passes the process's own.
type Env struct {
	Stdout, Stderr io.Writer
	Getenv         config.Getenv
	// Ready, if set, is told the address serve listens on (tests use port 0).
	Ready func(addr string)
}

const usage = `procsvc — self-hostable backend for workspace procedure tracking.

Usage:
  procsvc [serve] [flags]          run the API (GraphQL at /graphql); the default
  procsvc migrate [flags]          create or upgrade the database schema
  procsvc workspace create [flags] create a workspace with an admin and print its token
  procsvc workspace list [flags]   list workspaces
  procsvc member add [flags]       add a member to a workspace
  procsvc token create [flags]     issue a token and print its secret once
  procsvc token list [flags]       list a workspace's tokens
  procsvc token revoke [flags]     revoke a token
  procsvc bench seed [flags]       load a synthetic workspace (benchmarks, load tests)
  procsvc bench load [flags]       drive a running server with concurrent clients
  procsvc bench live [flags]       time live-update deliveries to many subscriptions

Run "procsvc COMMAND --help" for a command's flags. Every flag can also be set
through the environment variable named in its help.
`

// Run executes args (without the program name) and returns the exit code.
func Run(ctx context.Context, args []string, env Env) int {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	sub := ""
	if cmd == "workspace" || cmd == "member" || cmd == "token" || cmd == "bench" {
		if len(args) == 0 || strings.HasPrefix(args[0], "-") {
			fmt.Fprintf(env.Stderr, "procsvc %s: missing subcommand\n\n%s", cmd, usage)
			return 2
		}
		sub, args = args[0], args[1:]
	}
	var err error
	switch cmd + " " + sub {
	case "serve ":
		err = serve(ctx, args, env)
	case "migrate ":
		err = migrate(ctx, args, env)
	case "workspace create":
		err = workspaceCreate(ctx, args, env)
	case "workspace list":
		err = workspaceList(ctx, args, env)
	case "member add":
		err = memberAdd(ctx, args, env)
	case "token create":
		err = tokenCreate(ctx, args, env)
	case "token list":
		err = tokenList(ctx, args, env)
	case "token revoke":
		err = tokenRevoke(ctx, args, env)
	case "bench seed":
		err = benchSeed(ctx, args, env)
	case "bench load":
		err = benchLoad(ctx, args, env)
	case "bench live":
		err = benchLive(ctx, args, env)
	case "help ", "-h ", "--help ":
		fmt.Fprint(env.Stdout, usage)
		return 0
	default:
		fmt.Fprintf(env.Stderr, "procsvc: unknown command %q\n\n%s", strings.TrimSpace(cmd+" "+sub), usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	default:
		fmt.Fprintf(env.Stderr, "procsvc: %s\n", describe(err))
		return 1
	}
}

// errUsage marks a flag error already reported by the flag package.
var errUsage = errors.New("usage")

// describe renders err for an operator: validation messages in full.
func describe(err error) string {
	var ae *apperr.Error
	if errors.As(err, &ae) && ae.Code != apperr.Internal {
		if len(ae.Fields) > 1 {
			parts := make([]string, len(ae.Fields))
			for i, f := range ae.Fields {
				parts[i] = f.Field + ": " + f.Message
			}
			return strings.Join(parts, "; ")
		}
		return ae.Message
	}
	return err.Error()
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "unexpected argument %q\n", fs.Arg(0))
		return errUsage
	}
	return nil
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
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := applyEnv(env.Getenv); err != nil {
		return err
	}
	return server.Run(ctx, cfg, newLogger(cfg, env.Stderr), env.Stdout, env.Ready)
}

// dbFlags are the flags of the operator commands.
type dbFlags struct{ url string }

func (d *dbFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&d.url, "database-url", "", "database URL (env DATABASE_URL; default sqlite://data/procsvc.db)")
}

func (d *dbFlags) open(ctx context.Context, env Env) (*database.DB, *core.Service, error) {
	url := d.url
	if url == "" {
		url = env.Getenv("DATABASE_URL")
	}
	db, err := database.Open(ctx, url, database.Options{})
	if err != nil {
		return nil, nil, err
	}
	if err := db.Ready(ctx); err != nil {
		db.Close()
		return nil, nil, err
	}
	// On PostgreSQL the operator's changes are announced as the server's
	// are (LISTEN/NOTIFY): a token revoked or a member removed here cuts
	// their open subscriptions on every replica at once. A SQLite file has
	// no such channel; a running server notices within its re-check
	// interval (--subscription-recheck).
	var opts []core.Option
	if db.Dialect == "postgres" {
		opts = append(opts, core.WithAnnouncer(events.NewPostgresAnnouncer(events.NewHub(events.HubOptions{}))),
			core.WithLockPolicy(core.LockPolicyFor(db.Dialect)))
	}
	return db, core.New(db.Client, opts...), nil
}

func command(name, summary string, env Env) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s [flags]\n\n%s\n\nFlags:\n", name, summary)
		fs.PrintDefaults()
	}
	return fs
}

func migrate(ctx context.Context, args []string, env Env) error {
	var d dbFlags
	fs := command("procsvc migrate", "Creates or upgrades the database schema, then exits. On PostgreSQL it applies the\nversioned migrations of ent/migrate/migrations (idempotent; refuses edited files).", env)
	d.bind(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	url := d.url
	if url == "" {
		url = env.Getenv("DATABASE_URL")
	}
	db, err := database.Open(ctx, url, database.Options{})
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

func workspaceCreate(ctx context.Context, args []string, env Env) error {
	var d dbFlags
	var in core.NewWorkspace
	fs := command("procsvc workspace create", "Creates a workspace with an ADMIN member and prints the admin's token once.", env)
	d.bind(fs)
	fs.StringVar(&in.Name, "name", "", "workspace name (required)")
	fs.StringVar(&in.Key, "key", "PRC", "shortId prefix, 2–10 letters")
	fs.StringVar(&in.AdminName, "admin-name", "Admin", "the admin member's name")
	fs.StringVar(&in.AdminEmail, "admin-email", "", "the admin member's email (required)")
	if err := parse(fs, args); err != nil {
		return err
	}
	db, svc, err := d.open(ctx, env)
	if err != nil {
		return err
	}
	defer db.Close()
	b, err := svc.CreateWorkspace(ctx, in)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "workspace: %s\nadmin:     %s (%s)\ntoken:     %s\n", b.Workspace.ID, b.Admin.ID, b.Admin.Email, b.Secret)
	return nil
}

func workspaceList(ctx context.Context, args []string, env Env) error {
	var d dbFlags
	fs := command("procsvc workspace list", "Lists every workspace.", env)
	d.bind(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	db, svc, err := d.open(ctx, env)
	if err != nil {
		return err
	}
	defer db.Close()
	ws, err := svc.Workspaces(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKEY\tNAME\tCREATED")
	for _, w := range ws {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", w.ID, w.Key, w.Name, timefmt.Format(w.CreatedAt))
	}
	return tw.Flush()
}

// asAdmin opens the database and acts as an admin of the --workspace given.
func asAdmin(ctx context.Context, d *dbFlags, workspace string, env Env) (context.Context, *database.DB, *core.Service, error) {
	if workspace == "" {
		return nil, nil, nil, errors.New("--workspace is required (see procsvc workspace list)")
	}
	db, svc, err := d.open(ctx, env)
	if err != nil {
		return nil, nil, nil, err
	}
	actx, err := svc.ActAsAdmin(ctx, workspace)
	if err != nil {
		db.Close()
		return nil, nil, nil, err
	}
	return actx, db, svc, nil
}

func memberAdd(ctx context.Context, args []string, env Env) error {
	var d dbFlags
	var workspace, name, email, role string
	fs := command("procsvc member add", "Adds a member to a workspace.", env)
	d.bind(fs)
	fs.StringVar(&workspace, "workspace", "", "workspace id (required)")
	fs.StringVar(&name, "name", "", "member name (required)")
	fs.StringVar(&email, "email", "", "member email, unique in the workspace (required)")
	fs.StringVar(&role, "role", "MEMBER", "ADMIN, MEMBER or VIEWER")
	if err := parse(fs, args); err != nil {
		return err
	}
	actx, db, svc, err := asAdmin(ctx, &d, workspace, env)
	if err != nil {
		return err
	}
	defer db.Close()
	m, err := svc.AddMember(actx, core.MemberInput{Name: core.Some(name), Email: core.Some(email), Role: core.Some(strings.ToUpper(role))})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "member: %s (%s, %s)\n", m.ID, m.Email, m.Role)
	return nil
}

func tokenCreate(ctx context.Context, args []string, env Env) error {
	var d dbFlags
	var workspace, memberID, name string
	var expiresIn time.Duration
	fs := command("procsvc token create", "Issues a token for a member and prints its secret once.", env)
	d.bind(fs)
	fs.StringVar(&workspace, "workspace", "", "workspace id (required)")
	fs.StringVar(&memberID, "member", "", "member id (default: the workspace's first admin)")
	fs.StringVar(&name, "name", "", "a label for the token")
	fs.DurationVar(&expiresIn, "expires-in", 0, "lifetime, e.g. 720h (default: no expiry)")
	if err := parse(fs, args); err != nil {
		return err
	}
	actx, db, svc, err := asAdmin(ctx, &d, workspace, env)
	if err != nil {
		return err
	}
	defer db.Close()
	in := core.TokenInput{MemberID: memberID, Name: name}
	if expiresIn != 0 {
		t := time.Now().UTC().Add(expiresIn)
		in.ExpiresAt = &t
	}
	t, secret, err := svc.CreateToken(actx, in)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "token:  %s\nsecret: %s\n", t.ID, secret)
	return nil
}

func tokenList(ctx context.Context, args []string, env Env) error {
	var d dbFlags
	var workspace string
	fs := command("procsvc token list", "Lists a workspace's tokens (never their secrets).", env)
	d.bind(fs)
	fs.StringVar(&workspace, "workspace", "", "workspace id (required)")
	if err := parse(fs, args); err != nil {
		return err
	}
	actx, db, svc, err := asAdmin(ctx, &d, workspace, env)
	if err != nil {
		return err
	}
	defer db.Close()
	ts, err := svc.Tokens(actx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tMEMBER\tNAME\tCREATED\tEXPIRES\tREVOKED")
	for _, t := range ts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.MemberID, t.Name, timefmt.Format(t.CreatedAt), orDash(t.ExpiresAt), orDash(t.RevokedAt))
	}
	return tw.Flush()
}

func orDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return timefmt.Format(*t)
}

func tokenRevoke(ctx context.Context, args []string, env Env) error {
	var d dbFlags
	var workspace, id string
	fs := command("procsvc token revoke", "Revokes a token; requests with it then answer disconnected.", env)
	d.bind(fs)
	fs.StringVar(&workspace, "workspace", "", "workspace id (required)")
	fs.StringVar(&id, "id", "", "token id (required)")
	if err := parse(fs, args); err != nil {
		return err
	}
	actx, db, svc, err := asAdmin(ctx, &d, workspace, env)
	if err != nil {
		return err
	}
	defer db.Close()
	t, err := svc.RevokeToken(actx, id)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "revoked: %s at %s\n", t.ID, orDash(t.RevokedAt))
	return nil
}

// ProcessEnv returns the Env of the running process.
func ProcessEnv() Env { return Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv} }

func benchSeed(ctx context.Context, args []string, env Env) error {
	var d dbFlags
	shape := bench.W
	var noise, noiseProcedures int
	var seed uint64
	fs := command("procsvc bench seed", "Creates a synthetic workspace (plus noise workspaces) in large batches, deterministic\nfor --seed, and prints its admin token. The default is workload W of docs/performance.md.", env)
	d.bind(fs)
	fs.IntVar(&shape.Procedures, "procedures", shape.Procedures, "procedures in the main workspace")
	fs.IntVar(&shape.Projects, "projects", shape.Projects, "projects per workspace")
	fs.IntVar(&shape.Categories, "categories", shape.Categories, "categories per workspace")
	fs.IntVar(&shape.Members, "members", shape.Members, "members per workspace")
	fs.IntVar(&shape.MaxComments, "max-comments", shape.MaxComments, "each procedure gets 0..N comments")
	fs.IntVar(&noise, "noise-workspaces", 4, "other workspaces, to prove tenancy costs nothing")
	fs.IntVar(&noiseProcedures, "noise-procedures", 25_000, "procedures in each noise workspace")
	fs.Uint64Var(&seed, "seed", 1, "random seed")
	if err := parse(fs, args); err != nil {
		return err
	}
	db, _, err := d.open(ctx, env)
	if err != nil {
		return err
	}
	defer db.Close()
	start := time.Now()
	main, err := bench.Seed(ctx, db.Client, "Bench", "BEN", shape, seed)
	if err != nil {
		return err
	}
	n := shape
	n.Procedures = noiseProcedures
	for i := 0; i < noise; i++ {
		if _, err := bench.Seed(ctx, db.Client, fmt.Sprintf("Noise %d", i+1), fmt.Sprintf("NO%c", 'A'+rune(i%26)), n, seed+uint64(i)+1); err != nil {
			return err
		}
	}
	if db.Dialect == "postgres" {
		if _, err := db.SQL.ExecContext(ctx, "ANALYZE"); err != nil {
			return err
		}
	}
	fmt.Fprintf(env.Stdout, "seeded %d + %d×%d procedures in %s\nworkspace: %s\ntoken:     %s\n",
		shape.Procedures, noise, noiseProcedures, time.Since(start).Round(time.Millisecond), main.WorkspaceID, main.AdminToken)
	return nil
}

func benchLoad(ctx context.Context, args []string, env Env) error {
	cfg := bench.LoadConfig{URL: "http://127.0.0.1:8080", Clients: 16, Duration: 10 * time.Second, API: "rest", PageSize: 50}
	fs := command("procsvc bench load", "Drives a running procsvc with concurrent clients listing procedures (and, with\n--write-ratio, creating and deleting them, or with --mix update changing their priority),\nthen prints req/s, latency percentiles and errors by code, and verifies every acknowledged write.", env)
	fs.StringVar(&cfg.URL, "url", cfg.URL, "server base URL (loopback only in shared environments)")
	fs.StringVar(&cfg.Token, "token", env.Getenv("PROCSVC_TOKEN"), "bearer token (env PROCSVC_TOKEN)")
	fs.IntVar(&cfg.Clients, "clients", cfg.Clients, "concurrent clients")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long to run")
	fs.IntVar(&cfg.MaxRequests, "max-requests", 0, "stop after this many requests (0: run for --duration)")
	fs.StringVar(&cfg.API, "api", cfg.API, "rest or graphql")
	fs.Float64Var(&cfg.WriteRatio, "write-ratio", 0, "share of requests that write (0..1)")
	fs.IntVar(&cfg.PageSize, "page", cfg.PageSize, "list page size (1 to 100)")
	fs.BoolVar(&cfg.IdempotencyKeys, "idempotency-keys", false, "send each write with an Idempotency-Key of its own, the same on its retries")
	fs.IntVar(&cfg.Retries, "retries", 0, "send a request again, up to this many times, after a client timeout, a transport error, a 503 or a 409 in progress (writes only with --idempotency-keys)")
	fs.DurationVar(&cfg.RetryBackoff, "retry-backoff", 10*time.Millisecond, "pause before the first retry, doubled for each next one up to 1s, with jitter")
	fs.DurationVar(&cfg.RequestTimeout, "request-timeout", 0, "client-side timeout of each attempt (0: 30s); a tiny one injects timeouts")
	fs.StringVar(&cfg.Mix, "mix", bench.MixCreate, "create: writes create and delete procedures of the run's own, reads list one page;\nupdate: the realistic mix, reads spread over five list shapes (first page, second page, state,\ndueAt ascending, priority) and writes change the priority of existing procedures")
	fs.IntVar(&cfg.Pool, "pool", 500, "--mix update: existing procedures sampled at start to update, split between the clients")
	if err := parse(fs, args); err != nil {
		return err
	}
	rep, err := bench.Load(ctx, cfg)
	if err != nil {
		return err
	}
	rep.Print(env.Stdout, cfg)
	if cfg.WriteRatio > 0 && !rep.Verified {
		return errors.New("write verification failed")
	}
	return nil
}

func benchLive(ctx context.Context, args []string, env Env) error {
	cfg := bench.LiveConfig{URL: "http://127.0.0.1:8080", Subscribers: 1000, WriteRate: 50, Duration: 20 * time.Second,
		Transport: bench.TransportSSE, Sample: 100, Drain: 10 * time.Second}
	fs := command("procsvc bench live", "Opens --subscribers subscriptions to procedureEvents on a running procsvc, all with one token,\n"+
		"then renames existing procedures at --write-rate and prints how long each event took to reach\n"+
		"each subscriber (delivery percentiles), events missed, write latency and errors by kind.\n"+
		"The server must allow the subscriptions: start it with --subscriptions-per-token at least\n"+
		"--subscribers (at most 1000) and --rate-limit 0, or the opening is refused with rate_limited.", env)
	fs.StringVar(&cfg.URL, "url", cfg.URL, "server base URL (loopback only in shared environments)")
	fs.StringVar(&cfg.Token, "token", env.Getenv("PROCSVC_TOKEN"), "bearer token (env PROCSVC_TOKEN)")
	fs.IntVar(&cfg.Subscribers, "subscribers", cfg.Subscribers, "subscriptions held open, all with --token")
	fs.Float64Var(&cfg.WriteRate, "write-rate", cfg.WriteRate, "writes per second, each a PUT /procedures/{id} renaming one procedure")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long to write")
	fs.StringVar(&cfg.Transport, "transport", cfg.Transport, "sse (Server-Sent Events) or ws (graphql-transport-ws)")
	fs.IntVar(&cfg.Sample, "sample", cfg.Sample, "existing procedures renamed in turn (the newest ones; one more is renamed to tell that every subscription has started)")
	fs.DurationVar(&cfg.Drain, "drain", cfg.Drain, "how long to wait, after the writes, for the events still due")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg.Progress = env.Stderr
	rep, err := bench.Live(ctx, cfg)
	if err != nil {
		return err
	}
	rep.Print(env.Stdout, cfg)
	if rep.Missed > 0 {
		return fmt.Errorf("%d of %d events missed", rep.Missed, rep.Expected)
	}
	return nil
}
