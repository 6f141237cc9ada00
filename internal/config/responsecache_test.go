package config_test

import (
	"strings"
	"testing"
)

// TestResponseCacheShareSetting: --response-cache-workspace-mb defaults to
// 0 (a quarter of --response-cache-mb), is read from
// PROCSVC_RESPONSE_CACHE_WORKSPACE_MB (the flag wins), and is refused below
// 0 or over the cache itself, naming the setting.
func TestResponseCacheShareSetting(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want int
	}{
		{"default", nil, nil, 0},
		{"flag", []string{"--response-cache-workspace-mb", "32"}, nil, 32},
		{"environment", nil, map[string]string{"PROCSVC_RESPONSE_CACHE_WORKSPACE_MB": "8"}, 8},
		{"flag wins", []string{"--response-cache-workspace-mb", "16"}, map[string]string{"PROCSVC_RESPONSE_CACHE_WORKSPACE_MB": "8"}, 16},
	} {
		c, err := loadServe(tc.args, tc.env)
		if err != nil || c.ResponseCacheWorkspaceMB != tc.want {
			t.Errorf("%s: %d, %v; want %d", tc.name, c.ResponseCacheWorkspaceMB, err, tc.want)
		}
	}
	for _, bad := range [][]string{
		{"--response-cache-workspace-mb", "-1"},
		{"--response-cache-workspace-mb", "65"},
		{"--response-cache-mb", "8", "--response-cache-workspace-mb", "9"},
	} {
		if _, err := loadServe(bad, nil); err == nil || !strings.Contains(err.Error(), "--response-cache-workspace-mb") {
			t.Errorf("%v: %v, want a refusal naming the setting", bad, err)
		}
	}
}
