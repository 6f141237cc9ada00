package config_test

import (
	"strings"
	"testing"
	"time"
)

// TestSQLiteStatisticsSetting: --sqlite-statistics-interval defaults to an
// hour (SQLite's own advice), takes 0 for "only at start", is read from its
// variable, and is refused out of range with a message naming the setting.
func TestSQLiteStatisticsSetting(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want time.Duration
	}{
		{nil, nil, time.Hour},
		{[]string{"--sqlite-statistics-interval", "0"}, nil, 0},
		{[]string{"--sqlite-statistics-interval", "10m"}, nil, 10 * time.Minute},
		{nil, map[string]string{"PROCSVC_SQLITE_STATISTICS_INTERVAL": "24h"}, 24 * time.Hour},
	} {
		c, err := loadServe(tc.args, tc.env)
		if err != nil || c.SQLiteStatisticsInterval != tc.want {
			t.Errorf("%v %v: %s (%v); want %s", tc.args, tc.env, c.SQLiteStatisticsInterval, err, tc.want)
		}
	}
	for _, bad := range []string{"59s", "25h", "-1m"} {
		if _, err := loadServe([]string{"--sqlite-statistics-interval", bad}, nil); err == nil || !strings.Contains(err.Error(), "--sqlite-statistics-interval") {
			t.Errorf("--sqlite-statistics-interval %s: %v, want a refusal naming the setting", bad, err)
		}
	}
}
