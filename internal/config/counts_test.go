package config_test

import (
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/config"
	"github.com/procsvc/procsvc/internal/core"
)

// TestCountSettings: --counts-in-flight and --counts-per-workspace default
// to core's defaults, are read from their PROCSVC_* variables (the flag
// wins), and are refused out of range, a workspace's share never above the
// replica's, with a message naming the setting.
func TestCountSettings(t *testing.T) {
	c, err := loadServe(nil, nil)
	if err != nil || c.CountsInFlight != core.DefaultCountsInFlight || c.CountsPerWorkspace != core.DefaultCountsPerWorkspace {
		t.Fatalf("defaults: %d, %d (%v); want %d, %d", c.CountsInFlight, c.CountsPerWorkspace, err,
			core.DefaultCountsInFlight, core.DefaultCountsPerWorkspace)
	}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		get  func(config.Config) int
		want int
	}{
		{"in flight flag", []string{"--counts-in-flight", "12"}, nil, func(c config.Config) int { return c.CountsInFlight }, 12},
		{"in flight environment", nil, map[string]string{"PROCSVC_COUNTS_IN_FLIGHT": "1000"}, func(c config.Config) int { return c.CountsInFlight }, 1000},
		{"in flight flag wins", []string{"--counts-in-flight", "5"}, map[string]string{"PROCSVC_COUNTS_IN_FLIGHT": "9"}, func(c config.Config) int { return c.CountsInFlight }, 5},
		{"per workspace flag", []string{"--counts-per-workspace", "1"}, nil, func(c config.Config) int { return c.CountsPerWorkspace }, 1},
		{"per workspace environment", nil, map[string]string{"PROCSVC_COUNTS_PER_WORKSPACE": "6"}, func(c config.Config) int { return c.CountsPerWorkspace }, 6},
		{"per workspace up to in flight", []string{"--counts-in-flight", "20", "--counts-per-workspace", "20"}, nil, func(c config.Config) int { return c.CountsPerWorkspace }, 20},
	} {
		c, err := loadServe(tc.args, tc.env)
		if err != nil || tc.get(c) != tc.want {
			t.Errorf("%s: %d, %v; want %d", tc.name, tc.get(c), err, tc.want)
		}
	}
	for _, bad := range []struct {
		args []string
		flag string
	}{
		{[]string{"--counts-in-flight", "0"}, "--counts-in-flight"},
		{[]string{"--counts-in-flight", "1001"}, "--counts-in-flight"},
		{[]string{"--counts-per-workspace", "0"}, "--counts-per-workspace"},
		{[]string{"--counts-per-workspace", "7"}, "--counts-per-workspace"},
		{[]string{"--counts-in-flight", "2", "--counts-per-workspace", "3"}, "--counts-per-workspace"},
	} {
		if _, err := loadServe(bad.args, nil); err == nil || !strings.Contains(err.Error(), bad.flag) {
			t.Errorf("%v: %v, want a refusal naming %s", bad.args, err, bad.flag)
		}
	}
}
