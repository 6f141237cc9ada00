package config_test

import (
	"strings"
	"testing"
)

// TestLiveMemorySettings: --live-memory-mb (256) and
// --live-workspace-memory-mb (0: half of it) are read from their flags and from
// PROCSVC_LIVE_MEMORY_MB and PROCSVC_LIVE_WORKSPACE_MEMORY_MB (the flag
// wins); a workspace's share over the replica's memory, or either out of
// range, is refused naming the setting.
func TestLiveMemorySettings(t *testing.T) {
	for _, tc := range []struct {
		name        string
		args        []string
		env         map[string]string
		total, each int
	}{
		{"default", nil, nil, 256, 0},
		{"flags", []string{"--live-memory-mb", "512", "--live-workspace-memory-mb", "128"}, nil, 512, 128},
		{"environment", nil, map[string]string{"PROCSVC_LIVE_MEMORY_MB": "100", "PROCSVC_LIVE_WORKSPACE_MEMORY_MB": "10"}, 100, 10},
		{"flag wins", []string{"--live-workspace-memory-mb", "32"}, map[string]string{"PROCSVC_LIVE_WORKSPACE_MEMORY_MB": "10"}, 256, 32},
		{"one workspace may have it all", []string{"--live-memory-mb", "64", "--live-workspace-memory-mb", "64"}, nil, 64, 64},
	} {
		c, err := loadServe(tc.args, tc.env)
		if err != nil || c.Live.MemoryMB != tc.total || c.Live.WorkspaceMemoryMB != tc.each {
			t.Errorf("%s: %d and %d, %v; want %d and %d", tc.name, c.Live.MemoryMB, c.Live.WorkspaceMemoryMB, err, tc.total, tc.each)
		}
	}
	for _, bad := range []struct {
		args []string
		flag string
	}{
		{[]string{"--live-memory-mb", "0"}, "--live-memory-mb"},
		{[]string{"--live-memory-mb", "65537"}, "--live-memory-mb"},
		{[]string{"--live-workspace-memory-mb", "-1"}, "--live-workspace-memory-mb"},
		{[]string{"--live-memory-mb", "100", "--live-workspace-memory-mb", "101"}, "--live-workspace-memory-mb"},
		{[]string{"--live-workspace-memory-mb", "257"}, "--live-workspace-memory-mb"},
	} {
		if _, err := loadServe(bad.args, nil); err == nil || !strings.Contains(err.Error(), bad.flag) {
			t.Errorf("%v: %v, want a refusal naming %s", bad.args, err, bad.flag)
		}
	}
}
