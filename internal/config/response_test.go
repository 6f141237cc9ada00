package config_test

import (
	"strings"
	"testing"
)

// TestMaxResponseSetting: --max-response-mb defaults to 16, is read from
// PROCSVC_MAX_RESPONSE_MB (the flag wins), and is refused below 16 (one
// procedure with its content and comments must always fit) or above 4096,
// with a message naming the setting.
func TestMaxResponseSetting(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want int
	}{
		{"default", nil, nil, 16},
		{"flag", []string{"--max-response-mb", "64"}, nil, 64},
		{"environment", nil, map[string]string{"PROCSVC_MAX_RESPONSE_MB": "32"}, 32},
		{"flag wins", []string{"--max-response-mb", "20"}, map[string]string{"PROCSVC_MAX_RESPONSE_MB": "32"}, 20},
	} {
		c, err := loadServe(tc.args, tc.env)
		if err != nil || c.MaxResponseMB != tc.want {
			t.Errorf("%s: %d, %v; want %d", tc.name, c.MaxResponseMB, err, tc.want)
		}
	}
	for _, bad := range []string{"15", "0", "-1", "4097"} {
		if _, err := loadServe([]string{"--max-response-mb", bad}, nil); err == nil || !strings.Contains(err.Error(), "--max-response-mb") {
			t.Errorf("%s: %v, want a refusal naming the setting", bad, err)
		}
	}
}
