package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

func run(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}
	code = Run(context.Background(), args, env)
	return code, out.String(), errOut.String()
}

// TestTopLevelHelpListsEveryCommand: procsvc help, -h and --help list
// every command of the table, a line each, on stdout, and none of them
// shows serve's flags (the default command's --help does).
func TestTopLevelHelpListsEveryCommand(t *testing.T) {
	for _, asked := range [][]string{{"help"}, {"-h"}, {"--help"}, {"-help"}, {"help", "help"}} {
		t.Run(strings.Join(asked, " "), func(t *testing.T) {
			code, out, errOut := run(asked...)
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d, stderr %q; want 0 and nothing", code, errOut)
			}
			for _, c := range procsvc.Commands {
				line := "procsvc " + c.Name + " " + c.Args
				if c.Name == procsvc.Default {
					line = "procsvc " + procsvc.DefaultArgs
				}
				if strings.Count(out, line) != 1 || !strings.Contains(out, c.Summary) {
					t.Errorf("help lacks the line of %q:\n%s", c.Name, out)
				}
			}
			if strings.Contains(out, "-addr") {
				t.Fatalf("top-level help shows serve's flags:\n%s", out)
			}
		})
	}
}

// TestCommandHelp: every command's --help, and help COMMAND, shows its
// own flags (exit 0); a group's --help lists its subcommands.
func TestCommandHelp(t *testing.T) {
	for _, c := range procsvc.Commands {
		words := strings.Fields(c.Name)
		for _, args := range [][]string{append(words, "--help"), append(words, "-h"), append([]string{"help"}, words...)} {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				code, out, errOut := run(args...)
				all := out + errOut
				if code != 0 || !strings.Contains(all, "Usage: procsvc "+c.Name+" [flags]") || !strings.Contains(all, "Flags:") {
					t.Fatalf("exit %d (want 0), output is not %q's help:\n%s", code, c.Name, all)
				}
				if args[0] == "help" && errOut != "" {
					t.Fatalf("help %s wrote to stderr (want stdout, as help does):\n%s", c.Name, errOut)
				}
			})
		}
	}
	cases := []struct {
		args     []string
		wantCode int
		want     []string // in the output
		wantNot  string   // not in the output
	}{
		{[]string{"serve", "--help"}, 0, []string{"-addr", "-database-url"}, "workspace create"},
		{[]string{"token", "--help"}, 0, []string{"procsvc token create", "procsvc token list", "procsvc token revoke", `procsvc token SUBCOMMAND --help`}, "member add"},
		{[]string{"token", "-h"}, 0, []string{"procsvc token revoke"}, "serve"},
		{[]string{"help", "token"}, 0, []string{"procsvc token create"}, "workspace create"},
		{[]string{"member", "help"}, 0, []string{"procsvc member add", "procsvc member list"}, "token"},
		{[]string{"token"}, 2, []string{"missing subcommand", "procsvc token create"}, "workspace create"},
		{[]string{"token", "frob"}, 2, []string{`unknown command "token frob"`}, ""},
		{[]string{"help", "frob"}, 2, []string{`unknown command "frob"`}, ""},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := run(tc.args...)
			all := out + errOut
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d:\n%s", code, tc.wantCode, all)
			}
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("output lacks %q:\n%s", w, all)
				}
			}
			if tc.wantNot != "" && strings.Contains(all, tc.wantNot) {
				t.Errorf("output has %q:\n%s", tc.wantNot, all)
			}
		})
	}
}

// TestUnservableDatabaseURLIsAUsageError: serve and migrate given a
// database URL they cannot serve (an unknown scheme, a PostgreSQL URL
// without a database) exit 2 with one line naming the flag, and create
// nothing: no SQLite file named after the URL, no token printed.
func TestUnservableDatabaseURLIsAUsageError(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, args := range [][]string{
		{"serve", "--addr", "127.0.0.1:0", "--database-url", "mysql://root@localhost/procsvc"},
		{"migrate", "--database-url", "mysql://root@localhost/procsvc"},
		{"migrate", "--database-url", "postgres://127.0.0.1:5432"},
		{"serve", "--addr", "127.0.0.1:0", "--database-url", "sqlite://dta/procsvc.db"},
	} {
		code, out, errOut := run(args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "--database-url") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and one line naming --database-url", args, code, out, errOut)
		}
	}
	if entries, _ := os.ReadDir("."); len(entries) > 0 {
		t.Errorf("created %s; want nothing", entries[0].Name())
	}
}

// TestInvocationMistakesAreOneLine: a mistyped flag, a duration without its
// unit (on the command line or in the environment), a setting out of range
// and a stray argument each exit 2 with the mistake in one line and, for
// flags, a pointer to --help, never the command's whole usage; a duration's
// refusal says how one is written.
func TestInvocationMistakesAreOneLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"serve", "--bogus"}, nil, "flag provided but not defined: -bogus\nRun 'procsvc serve --help' for its flags.\n"},
		{[]string{"serve", "--db-lock-timeout", "5"}, nil, "invalid value \"5\" for flag -db-lock-timeout: a duration needs its unit: 5s (seconds), 5ms or 5m, for instance\nRun 'procsvc serve --help' for its flags.\n"},
		{[]string{"serve", "--db-lock-timeout", "soon"}, nil, "invalid value \"soon\" for flag -db-lock-timeout: not a duration such as 30s, 500ms or 2m\nRun 'procsvc serve --help' for its flags.\n"},
		{[]string{"serve"}, map[string]string{"PROCSVC_DB_LOCK_TIMEOUT": "5"}, "procsvc: invalid PROCSVC_DB_LOCK_TIMEOUT=\"5\": a duration needs its unit: 5s (seconds), 5ms or 5m, for instance\n"},
		{[]string{"serve", "--response-cache-mb", "-3"}, nil, "procsvc: invalid response cache size -3 MB: use 0 to 65536 (--response-cache-mb, PROCSVC_RESPONSE_CACHE_MB)\n"},
		{[]string{"migrate", "--x"}, nil, "flag provided but not defined: -x\nRun 'procsvc migrate --help' for its flags.\n"},
		{[]string{"migrate", "stray"}, nil, "unexpected argument \"stray\"\nRun 'procsvc migrate --help' for its flags.\n"},
	} {
		var out, errOut bytes.Buffer
		env := Env{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return tc.env[k] }}
		if code := Run(context.Background(), tc.args, env); code != 2 || out.Len() > 0 || errOut.String() != tc.want {
			t.Errorf("%v %v: exit %d, stdout %q, stderr %q; want 2 and %q", tc.args, tc.env, code, out.String(), errOut.String(), tc.want)
		}
	}
}

// TestVersion: --version prints the program's name and version on one line
// and exits 0; the version names the commit, or says why it cannot.
func TestVersion(t *testing.T) {
	code, out, errOut := run("--version")
	if code != 0 || errOut != "" || !strings.HasPrefix(out, "procsvc ") || strings.Count(out, "\n") != 1 || !strings.Contains(out, "commit ") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and one line with the commit", code, out, errOut)
	}
}
