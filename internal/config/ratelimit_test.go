package config_test

import (
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/config"
)

func parse(args []string, env map[string]string) (config.Config, error) {
	var c config.Config
	fs, applyEnv := c.FlagSet("serve", io.Discard)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	err := applyEnv(func(k string) string { return env[k] })
	return c, err
}

const (
	wsA = "0190a5c4-0000-7000-8000-00000000000a"
	wsB = "0190a5c4-0000-7000-8000-00000000000b"
)

func TestRateLimitSettings(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want config.RateLimit
	}{
		{"defaults", nil, nil, config.RateLimit{Rate: 50, Burst: 200}},
		{"flags", []string{"--rate-limit", "2.5", "--rate-burst", "10"}, nil, config.RateLimit{Rate: 2.5, Burst: 10}},
		{"environment", nil, map[string]string{"PROCSVC_RATE_LIMIT": "7", "PROCSVC_RATE_BURST": "9"}, config.RateLimit{Rate: 7, Burst: 9}},
		{"off", []string{"--rate-limit", "0"}, nil, config.RateLimit{Rate: 0, Burst: 200}},
		{"off with no burst", []string{"--rate-limit", "0", "--rate-burst", "0"}, nil, config.RateLimit{}},
		{"repeated workspace flags", []string{"--rate-limit-workspace", wsA + "=1/5", "--rate-limit-workspace", strings.ToUpper(wsB) + "=0"}, nil,
			config.RateLimit{Rate: 50, Burst: 200, Workspaces: map[string]config.WorkspaceRate{wsA: {Rate: 1, Burst: 5}, wsB: {}}}},
		{"workspace list in the environment", nil, map[string]string{"PROCSVC_RATE_LIMIT_WORKSPACES": wsA + "=0.5/3, " + wsB + "=100/1000"},
			config.RateLimit{Rate: 50, Burst: 200, Workspaces: map[string]config.WorkspaceRate{wsA: {Rate: 0.5, Burst: 3}, wsB: {Rate: 100, Burst: 1000}}}},
		{"the flag wins over the environment", []string{"--rate-limit-workspace", wsA + "=1/1"}, map[string]string{"PROCSVC_RATE_LIMIT_WORKSPACES": wsB + "=2/2"},
			config.RateLimit{Rate: 50, Burst: 200, Workspaces: map[string]config.WorkspaceRate{wsA: {Rate: 1, Burst: 1}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse(tc.args, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.RateLimit, tc.want) {
				t.Fatalf("got %+v, want %+v", c.RateLimit, tc.want)
			}
		})
	}
}

func TestRateLimitSettingsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"negative rate", []string{"--rate-limit", "-1"}, nil, "--rate-limit"},
		{"zero burst", []string{"--rate-burst", "0"}, nil, "--rate-burst"},
		{"rate not a number", nil, map[string]string{"PROCSVC_RATE_LIMIT": "fast"}, "PROCSVC_RATE_LIMIT"},
		{"not a workspace id", []string{"--rate-limit-workspace", "acme=1/1"}, nil, "WORKSPACE_ID"},
		{"no burst", []string{"--rate-limit-workspace", wsA + "=1"}, nil, "BURST"},
		{"zero workspace burst", []string{"--rate-limit-workspace", wsA + "=1/0"}, nil, "burst"},
		{"negative workspace rate", []string{"--rate-limit-workspace", wsA + "=-1/1"}, nil, "rate"},
		{"twice", []string{"--rate-limit-workspace", wsA + "=1/1," + wsA + "=2/2"}, nil, "twice"},
		{"bad list in the environment", nil, map[string]string{"PROCSVC_RATE_LIMIT_WORKSPACES": wsA + "=1/1;" + wsB + "=1/1"}, "PROCSVC_RATE_LIMIT_WORKSPACES"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(tc.args, tc.env)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}
