// Package cli runs procsvc's command-line programs: the procsvc binary's
// commands (serve, the default; migrate; the operator commands for
// workspaces, members and tokens) and the machinery every procsvc program
// shares: dispatch from a table of commands, help generated from it, flag
// parsing, exit codes, and the --database-url flag. cmd/procsvc-bench builds
// its load tools on the same machinery without this package importing them,
// so that the server binary never links the load tools.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/config"
	"github.com/procsvc/procsvc/internal/database"
)

// Env is what a command runs with; main passes the process's own.
type Env struct {
	Stdout, Stderr io.Writer
	Getenv         config.Getenv
	// Ready, if set, is told the address serve listens on once it accepts
	// connections: how a caller that asked for port 0 learns the port.
	Ready func(addr string)
}

// ProcessEnv returns the Env of the running process.
func ProcessEnv() Env { return Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv} }

// A Command is one command of a Program.
type Command struct {
	// Name is the command as typed after the program's name: one word, or
	// a group and a subcommand ("token create").
	Name string
	// Args is what the program's help shows after the name.
	Args string
	// Summary is the command's line in the program's help.
	Summary string
	Run     func(ctx context.Context, args []string, env Env) error
}

// A Program is a binary's commands and its help.
type Program struct {
	// Name is the binary's name, as its help and errors spell it.
	Name string
	// Intro and Outro frame the list of commands in the help.
	Intro, Outro string
	// Default is the command run when the first argument is a flag or
	// there is none; empty for a program that needs a command.
	Default string
	// DefaultArgs is what the help shows for the default command.
	DefaultArgs string
	Commands    []Command
}

// usage is the program's help: Intro, a line a command, Outro.
func (p Program) usage() string {
	var b strings.Builder
	b.WriteString(p.Intro)
	b.WriteString("\n\nUsage:\n")
	p.commandLines(&b, "")
	b.WriteString("\n")
	b.WriteString(p.Outro)
	return b.String()
}

// groupUsage is the help of a group of two-word commands ("token"): a line
// each of its commands.
func (p Program) groupUsage(group string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage:\n")
	p.commandLines(&b, group)
	fmt.Fprintf(&b, "\nRun \"%s %s SUBCOMMAND --help\" for a subcommand's flags.\n", p.Name, group)
	return b.String()
}

// commandLines writes a line per command of group, or of every command
// when group is empty.
func (p Program) commandLines(b *strings.Builder, group string) {
	for _, c := range p.Commands {
		if g, _, _ := strings.Cut(c.Name, " "); group != "" && g != group {
			continue
		}
		line := p.Name + " " + c.Name + " " + c.Args
		if c.Name == p.Default {
			line = p.Name + " " + p.DefaultArgs
		}
		fmt.Fprintf(b, "  %-32s %s\n", line, c.Summary)
	}
}

// isGroup reports whether word is the first word of two-word commands.
func (p Program) isGroup(word string) bool {
	for _, c := range p.Commands {
		if group, _, ok := strings.Cut(c.Name, " "); ok && group == word {
			return true
		}
	}
	return false
}

// knows reports whether words name a command or a group.
func (p Program) knows(words []string) bool {
	for _, c := range p.Commands {
		if c.Name == words[0] || len(words) > 1 && c.Name == words[0]+" "+words[1] {
			return true
		}
	}
	return p.isGroup(words[0]) && len(words) == 1
}

// isHelp reports whether arg asks for help where a command is expected.
// The flag package takes -h, -help and --help (and --h) for a command's
// help; the program takes the same, and the word help, for its own.
func isHelp(arg string) bool {
	switch arg {
	case "help", "-h", "-help", "--h", "--help":
		return true
	}
	return false
}

// Run executes args (without the program name) and returns the exit code:
// 0 on success or help, 2 for a usage error, 1 when the command failed.
//
// Help: "PROGRAM help", -h or --help list the commands (never the default
// command's flags: a newcomer's first --help must show every command);
// "PROGRAM GROUP --help" lists a group's commands; "PROGRAM COMMAND
// --help" and "PROGRAM help COMMAND" show a command's flags.
func (p Program) Run(ctx context.Context, args []string, env Env) int {
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version") {
		fmt.Fprintln(env.Stdout, p.Name, Version())
		return 0
	}
	if len(args) > 0 && isHelp(args[0]) {
		topic := slices.Clip(args[1:])
		if len(topic) == 0 || isHelp(topic[0]) {
			fmt.Fprint(env.Stdout, p.usage())
			return 0
		}
		// "help COMMAND" is "COMMAND --help", shown on stdout like the
		// program's own help (as go help build is); an unknown topic is
		// still an error, on stderr.
		if p.knows(topic) {
			env.Stderr = env.Stdout
		}
		return p.Run(ctx, append(topic, "--help"), env)
	}
	name := p.Default
	if len(args) > 0 && (!strings.HasPrefix(args[0], "-") || p.Default == "") {
		name, args = args[0], args[1:]
	}
	if name == "" {
		fmt.Fprintf(env.Stderr, "%s: missing command\n\n%s", p.Name, p.usage())
		return 2
	}
	if p.isGroup(name) {
		switch {
		case len(args) > 0 && isHelp(args[0]):
			fmt.Fprint(env.Stdout, p.groupUsage(name))
			return 0
		case len(args) == 0 || strings.HasPrefix(args[0], "-"):
			fmt.Fprintf(env.Stderr, "%s %s: missing subcommand\n\n%s", p.Name, name, p.groupUsage(name))
			return 2
		}
		name, args = name+" "+args[0], args[1:]
	}
	for _, c := range p.Commands {
		if c.Name == name {
			return exitCode(c.Run(ctx, args, env), p.Name, env)
		}
	}
	fmt.Fprintf(env.Stderr, "%s: unknown command %q\n\n%s", p.Name, name, p.usage())
	return 2
}

// exitCode reports err, if any, and returns the exit code it calls for.
func exitCode(err error, program string, env Env) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	case errors.Is(err, database.ErrBadURL):
		// A mistake of the command line, as a bad flag is.
		fmt.Fprintf(env.Stderr, "%s: %s\n", program, err)
		return 2
	default:
		fmt.Fprintf(env.Stderr, "%s: %s\n", program, describe(err))
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

// FlagSet returns the flag set of the command name ("procsvc migrate"),
// whose help shows summary above its flags.
func FlagSet(name, summary string, env Env) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s [flags]\n\n%s\n\nFlags:\n", name, summary)
		fs.PrintDefaults()
	}
	return fs
}

// Parse parses a command's args, which must all be flags. Its error is
// flag.ErrHelp after --help (the command's usage shown), or one
// Program.Run turns into exit code 2, reported here in one line and a
// pointer to --help: a mistyped flag used to be answered with the
// command's whole usage (116 lines for serve), the mistake scrolled away
// above it.
func Parse(fs *flag.FlagSet, args []string) error {
	out, usage := fs.Output(), fs.Usage
	var reported strings.Builder
	fs.SetOutput(&reported)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage()
		return err
	case err != nil:
		line, _, _ := strings.Cut(reported.String(), "\n")
		fmt.Fprintf(out, "%s\nRun '%s --help' for its flags.\n", withDurationHint(fs, line), fs.Name())
		return errUsage
	case fs.NArg() > 0:
		fmt.Fprintf(out, "unexpected argument %q\nRun '%s --help' for its flags.\n", fs.Arg(0), fs.Name())
		return errUsage
	}
	return nil
}

// withDurationHint rewrites the flag package's "invalid value "5" for
// flag -x: parse error" for a duration flag into a message that says how a
// duration is written: a bare number is the usual mistake.
func withDurationHint(fs *flag.FlagSet, line string) string {
	var value, name string
	if n, _ := fmt.Sscanf(line, "invalid value %q for flag -%s", &value, &name); n != 2 {
		return line
	}
	name = strings.TrimSuffix(name, ":")
	f := fs.Lookup(name)
	if f == nil {
		return line
	}
	if g, ok := f.Value.(flag.Getter); !ok {
		return line
	} else if _, ok := g.Get().(time.Duration); !ok {
		return line
	}
	return fmt.Sprintf("invalid value %q for flag -%s: %s", value, name, config.DurationHint(value))
}

// DBFlags is the --database-url flag of the commands that open the
// database themselves.
type DBFlags struct{ url string }

// Bind adds --database-url to fs.
func (d *DBFlags) Bind(fs *flag.FlagSet) {
	fs.StringVar(&d.url, "database-url", "", "database URL (env DATABASE_URL; default sqlite://data/procsvc.db)")
}

// URL is --database-url, or else the environment's DATABASE_URL.
func (d *DBFlags) URL(env Env) string {
	if d.url != "" {
		return d.url
	}
	return env.Getenv("DATABASE_URL")
}

// CheckedURL is URL, DefaultURL when neither is set, once
// database.CheckURL has accepted it: for a command that reads the URL
// before (or instead of) opening it.
func (d *DBFlags) CheckedURL(env Env) (string, error) {
	url := d.URL(env)
	if url == "" {
		url = database.DefaultURL
	}
	return url, database.CheckURL(url)
}

// Open opens the database and checks that its schema is ready.
func (d *DBFlags) Open(ctx context.Context, env Env) (*database.DB, error) {
	db, err := database.Open(ctx, d.URL(env), database.Options{})
	if err != nil {
		return nil, err
	}
	if err := db.Ready(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}
