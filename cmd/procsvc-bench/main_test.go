package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/cli"
)

func TestHelpAndUsageErrors(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		wantCode int
		wantText string
	}{
		{"TopLevelHelp", []string{"help"}, 0, "procsvc-bench load [flags]"},
		{"DashHelp", []string{"-h"}, 0, "procsvc-bench live [flags]"},
		{"NoCommand", nil, 2, "missing command"},
		{"SeedHelp", []string{"seed", "--help"}, 0, "-noise-workspaces"},
		{"LoadHelp", []string{"load", "--help"}, 0, "-idempotency-keys"},
		{"LoadHelpDashboard", []string{"load", "--help"}, 0, "-check-every"},
		{"LiveHelp", []string{"live", "--help"}, 0, "-subscribers"},
		{"UnknownCommand", []string{"serve"}, 2, "unknown command"},
		{"UnexpectedArgument", []string{"load", "extra"}, 2, `unexpected argument "extra"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			env := cli.Env{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}
			code := program.Run(context.Background(), tc.args, env)
			all := out.String() + errOut.String()
			if code != tc.wantCode || !strings.Contains(all, tc.wantText) {
				t.Fatalf("exit %d (want %d), output lacks %q:\n%s", code, tc.wantCode, tc.wantText, all)
			}
		})
	}
}
