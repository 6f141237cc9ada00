package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/archive"
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

// TestExportsInFlightSetting: --exports-in-flight defaults to
// archive.DefaultInFlight (2), and is refused outside 1 to 64.
func TestExportsInFlightSetting(t *testing.T) {
	c, err := loadServe(nil, map[string]string{"PROCSVC_EXPORTS_IN_FLIGHT": "5"})
	if err != nil || c.ExportsInFlight != 5 {
		t.Errorf("PROCSVC_EXPORTS_IN_FLIGHT=5: %d (%v)", c.ExportsInFlight, err)
	}
	if c, err := loadServe(nil, nil); err != nil || c.ExportsInFlight != archive.DefaultInFlight {
		t.Errorf("default: %d (%v); want %d", c.ExportsInFlight, err, archive.DefaultInFlight)
	}
	for _, bad := range []string{"0", "65", "-1"} {
		if _, err := loadServe([]string{"--exports-in-flight", bad}, nil); err == nil || !strings.Contains(err.Error(), "--exports-in-flight") {
			t.Errorf("--exports-in-flight %s: %v, want a refusal naming the setting", bad, err)
		}
	}
}
