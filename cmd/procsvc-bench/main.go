// Command procsvc-bench is procsvc's load tools: seed loads a synthetic
// workspace into a database, load drives a running server with concurrent
// clients, live times live-update deliveries to many subscriptions. It is a
// binary of its own so that the server (cmd/procsvc) never links them;
// bench/measure.sh builds both.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/internal/cli"
)

var program = cli.Program{
	Name:  "procsvc-bench",
	Intro: "procsvc-bench — load tools for procsvc (benchmarks, load tests).",
	Commands: []cli.Command{
		{Name: "seed", Args: "[flags]", Summary: "load a synthetic workspace (benchmarks, load tests)", Run: seed},
		{Name: "load", Args: "[flags]", Summary: "drive a running server with concurrent clients", Run: load},
		{Name: "live", Args: "[flags]", Summary: "time live-update deliveries to many subscriptions", Run: live},
	},
	Outro: `Run "procsvc-bench COMMAND --help" for a command's flags.
`,
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := program.Run(ctx, os.Args[1:], cli.ProcessEnv())
	stop()
	os.Exit(code)
}

func seed(ctx context.Context, args []string, env cli.Env) error {
	var d cli.DBFlags
	shape := bench.W
	var noise, noiseProcedures int
	var seed uint64
	fs := cli.FlagSet("procsvc-bench seed", "Creates a synthetic workspace (plus noise workspaces) in large batches, deterministic\nfor --seed, and prints its admin token. The default is workload W of docs/performance.md.", env)
	d.Bind(fs)
	fs.IntVar(&shape.Procedures, "procedures", shape.Procedures, "procedures in the main workspace")
	fs.IntVar(&shape.Projects, "projects", shape.Projects, "projects per workspace")
	fs.IntVar(&shape.Categories, "categories", shape.Categories, "categories per workspace")
	fs.IntVar(&shape.Members, "members", shape.Members, "members per workspace")
	fs.IntVar(&shape.MaxComments, "max-comments", shape.MaxComments, "each procedure gets 0..N comments")
	fs.IntVar(&noise, "noise-workspaces", 4, "other workspaces, to prove tenancy costs nothing")
	fs.IntVar(&noiseProcedures, "noise-procedures", 25_000, "procedures in each noise workspace")
	fs.Uint64Var(&seed, "seed", 1, "random seed")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	db, err := d.Open(ctx, env)
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

func load(ctx context.Context, args []string, env cli.Env) error {
	cfg := bench.LoadConfig{URL: "http://127.0.0.1:8080", Clients: 16, Duration: 10 * time.Second, API: "rest", PageSize: 50}
	fs := cli.FlagSet("procsvc-bench load", "Drives a running procsvc with concurrent clients listing procedures (and, with\n--write-ratio, creating and deleting them, or with --mix update changing their priority),\nor reading the project dashboard (--mix dashboard), then prints req/s, latency percentiles\nand errors by code, and verifies every acknowledged write and every dashboard answer.", env)
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
	fs.StringVar(&cfg.Mix, "mix", bench.MixCreate, "create: writes create and delete procedures of the run's own, reads list one page;\nupdate: the realistic mix, reads spread over five list shapes (first page, second page, state,\ndueAt ascending, priority) and writes change the priority of existing procedures;\ndashboard (--api graphql): reads are the project dashboard, 20 projects × procedures(first: 10)\nwith category, doer, project and totalCount × comments(first: 5) with totalCount, every answer\nchecked (page sizes, totals, each procedure of its project), and writes are update's")
	fs.IntVar(&cfg.Pool, "pool", 500, "--mix update or dashboard: existing procedures sampled at start to update, split between the clients")
	fs.IntVar(&cfg.CheckEvery, "check-every", 1, "--mix dashboard: check every answer (1) or each client's every Nth, to spare the client's CPU (a check decodes ~130 KB)")
	if err := cli.Parse(fs, args); err != nil {
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
	if len(rep.ShapeNotes) > 0 {
		return errors.New("dashboard check failed")
	}
	return nil
}

func live(ctx context.Context, args []string, env cli.Env) error {
	cfg := bench.LiveConfig{URL: "http://127.0.0.1:8080", Subscribers: 1000, WriteRate: 50, Duration: 20 * time.Second,
		Transport: bench.TransportSSE, Sample: 100, Drain: 10 * time.Second}
	fs := cli.FlagSet("procsvc-bench live", "Opens --subscribers subscriptions to procedureEvents on a running procsvc, all with one token,\n"+
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
	if err := cli.Parse(fs, args); err != nil {
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
