package config_test

import (
	"strings"
	"testing"
	"time"
)

// TestExportTimeoutSetting: --export-timeout defaults to 30 minutes, is
// read from its variable, and is refused out of range (a download must be
// bounded, and must be possible) with a message naming the setting.
func TestExportTimeoutSetting(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want time.Duration
	}{
		{nil, nil, 30 * time.Minute},
		{[]string{"--export-timeout", "1m"}, nil, time.Minute},
		{nil, map[string]string{"PROCSVC_EXPORT_TIMEOUT": "24h"}, 24 * time.Hour},
	} {
		c, err := loadServe(tc.args, tc.env)
		if err != nil || c.ExportTimeout != tc.want {
			t.Errorf("%v %v: %s (%v); want %s", tc.args, tc.env, c.ExportTimeout, err, tc.want)
		}
	}
	for _, bad := range []string{"0", "59s", "25h", "-1m"} {
		if _, err := loadServe([]string{"--export-timeout", bad}, nil); err == nil || !strings.Contains(err.Error(), "--export-timeout") {
			t.Errorf("--export-timeout %s: %v, want a refusal naming the setting", bad, err)
		}
	}
}
