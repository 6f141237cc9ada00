package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseLifetime(t *testing.T) {
	cases := []struct {
		in      string
		want    time.Duration
		wantErr string // a part of the error; empty when in is valid
	}{
		{"30d", 30 * day, ""},
		{"1d", day, ""},
		{"1d12h", 36 * time.Hour, ""},
		{"0.5d", 12 * time.Hour, ""},
		{"2d30m", 48*time.Hour + 30*time.Minute, ""},
		{"+7d", 7 * day, ""},
		{"720h", 720 * time.Hour, ""},
		{"90m", 90 * time.Minute, ""},
		{"1h30m15s", time.Hour + 30*time.Minute + 15*time.Second, ""},
		{"1.5h", 90 * time.Minute, ""},
		{"500ms", 500 * time.Millisecond, ""},
		{"10µs", 10 * time.Microsecond, ""},
		{"-1d", 0, "must be positive"},
		{"-24h", 0, "must be positive"},
		{"0d", 0, "must be positive"},
		{"0s", 0, "must be positive"},
		{"0", 0, "want a positive duration"},
		{"", 0, "want a positive duration"},
		{"30", 0, "want a positive duration"},
		{"d", 0, "want a positive duration"},
		{"30days", 0, "want a positive duration"},
		{"30D", 0, "want a positive duration"},
		{"1d 12h", 0, "want a positive duration"},
		{"1d-2h", 0, "want a positive duration"},
		{"1..5d", 0, "want a positive duration"},
		{"soon", 0, "want a positive duration"},
		{"200000d", 0, "too long"},
		{"106751d106751d", 0, "too long"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseLifetime(tc.in)
			switch {
			case tc.wantErr == "" && (err != nil || got != tc.want):
				t.Fatalf("parseLifetime(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("parseLifetime(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.wantErr)
			}
		})
	}
}

// TestExpiresInRefusalNamesTheFlag: a refused --expires-in stops token
// create before it opens the database (exit 2, a usage error), with a
// message naming the flag and the accepted forms.
func TestExpiresInRefusalNamesTheFlag(t *testing.T) {
	for _, value := range []string{"-30d", "0", "soon"} {
		t.Run(value, func(t *testing.T) {
			var out, errOut bytes.Buffer
			env := Env{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}
			file := filepath.Join(t.TempDir(), "never.db")
			code := Run(context.Background(), []string{"token", "create", "--workspace", "w", "--expires-in", value,
				"--database-url", "sqlite://" + file}, env)
			if code != 2 || !strings.Contains(errOut.String(), "-expires-in") || !strings.Contains(errOut.String(), "30d") {
				t.Fatalf("exit %d (want 2), stderr lacks the flag's name or an example:\n%s", code, errOut.String())
			}
			if _, err := os.Stat(file); !os.IsNotExist(err) {
				t.Fatalf("the database was opened: %v", err)
			}
		})
	}
}
