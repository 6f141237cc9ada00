package config_test

import (
	"strings"
	"testing"
	"time"
)

// TestIdempotencyKeyTTLSetting: --idempotency-key-ttl defaults to 24h, is
// read from PROCSVC_IDEMPOTENCY_KEY_TTL (the flag wins), and is refused
// outside 1m..720h with a message naming the setting.
func TestIdempotencyKeyTTLSetting(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want time.Duration
	}{
		{"default", nil, nil, 24 * time.Hour},
		{"flag", []string{"--idempotency-key-ttl", "1h"}, nil, time.Hour},
		{"environment", nil, map[string]string{"PROCSVC_IDEMPOTENCY_KEY_TTL": "48h"}, 48 * time.Hour},
		{"flag wins", []string{"--idempotency-key-ttl", "2h"}, map[string]string{"PROCSVC_IDEMPOTENCY_KEY_TTL": "48h"}, 2 * time.Hour},
	} {
		c, err := loadServe(tc.args, tc.env)
		if err != nil || c.IdempotencyKeyTTL != tc.want {
			t.Errorf("%s: %s, %v; want %s", tc.name, c.IdempotencyKeyTTL, err, tc.want)
		}
	}
	// The TTL must be longer than the write timeout (the lock timeout of
	// a key in progress).
	if _, err := loadServe([]string{"--idempotency-key-ttl", "2m", "--write-timeout", "2m"}, nil); err == nil ||
		!strings.Contains(err.Error(), "--idempotency-key-ttl") || !strings.Contains(err.Error(), "--write-timeout") {
		t.Errorf("a TTL equal to the write timeout: %v, want a refusal naming both settings", err)
	}
	if _, err := loadServe([]string{"--idempotency-key-ttl", "2m", "--write-timeout", "1m"}, nil); err != nil {
		t.Errorf("a TTL longer than the write timeout: %v", err)
	}
	for _, bad := range []string{"10s", "721h", "-1h"} {
		if _, err := loadServe([]string{"--idempotency-key-ttl", bad}, nil); err == nil || !strings.Contains(err.Error(), "--idempotency-key-ttl") {
			t.Errorf("%s: %v, want a refusal naming the setting", bad, err)
		}
	}
}

// TestIdempotencyWorkspaceBudgetSetting: --idempotency-workspace-mb
// defaults to 64, is read from PROCSVC_IDEMPOTENCY_WORKSPACE_MB (the flag
// wins), and is refused outside 1..65536 with a message naming the setting.
func TestIdempotencyWorkspaceBudgetSetting(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want int
	}{
		{"default", nil, nil, 64},
		{"flag", []string{"--idempotency-workspace-mb", "8"}, nil, 8},
		{"environment", nil, map[string]string{"PROCSVC_IDEMPOTENCY_WORKSPACE_MB": "256"}, 256},
		{"flag wins", []string{"--idempotency-workspace-mb", "2"}, map[string]string{"PROCSVC_IDEMPOTENCY_WORKSPACE_MB": "256"}, 2},
		{"largest", []string{"--idempotency-workspace-mb", "65536"}, nil, 65536},
	} {
		c, err := loadServe(tc.args, tc.env)
		if err != nil || c.IdempotencyWorkspaceMB != tc.want {
			t.Errorf("%s: %d, %v; want %d", tc.name, c.IdempotencyWorkspaceMB, err, tc.want)
		}
	}
	for _, bad := range []string{"0", "-1", "65537"} {
		if _, err := loadServe([]string{"--idempotency-workspace-mb", bad}, nil); err == nil || !strings.Contains(err.Error(), "--idempotency-workspace-mb") {
			t.Errorf("%s: %v, want a refusal naming the setting", bad, err)
		}
	}
}
