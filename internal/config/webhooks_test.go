package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/graph/live"
	"github.com/procsvc/procsvc/internal/config"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/webhooks"
)

// TestWebhookSettings: --event-retention, --webhook-allow-private-addresses,
// --webhook-timeout, --webhook-workers and --webhook-memory-mb default to
// the packages' own defaults, are read from their PROCSVC_* variables (the flag wins), and
// are refused out of range with a message naming the setting.
func TestWebhookSettings(t *testing.T) {
	c, err := loadServe(nil, nil)
	if err != nil || c.EventRetention != core.DefaultEventRetention || c.Webhooks.AllowPrivate ||
		c.Webhooks.Timeout != webhooks.DefaultTimeout || c.Webhooks.Workers != webhooks.DefaultWorkers ||
		int64(c.Webhooks.MemoryMB)<<20 != webhooks.DefaultMemory {
		t.Fatalf("defaults: %s %+v (%v)", c.EventRetention, c.Webhooks, err)
	}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		get  func(config.Config) any
		want any
	}{
		{"retention flag", []string{"--event-retention", "48h"}, nil, func(c config.Config) any { return c.EventRetention }, 48 * time.Hour},
		{"retention environment", nil, map[string]string{"PROCSVC_EVENT_RETENTION": "2h"}, func(c config.Config) any { return c.EventRetention }, 2 * time.Hour},
		{"retention flag wins", []string{"--event-retention", "3h"}, map[string]string{"PROCSVC_EVENT_RETENTION": "2h"}, func(c config.Config) any { return c.EventRetention }, 3 * time.Hour},
		{"private flag", []string{"--webhook-allow-private-addresses"}, nil, func(c config.Config) any { return c.Webhooks.AllowPrivate }, true},
		{"private environment", nil, map[string]string{"PROCSVC_WEBHOOK_ALLOW_PRIVATE_ADDRESSES": "true"}, func(c config.Config) any { return c.Webhooks.AllowPrivate }, true},
		{"private flag wins", []string{"--webhook-allow-private-addresses=false"}, map[string]string{"PROCSVC_WEBHOOK_ALLOW_PRIVATE_ADDRESSES": "true"}, func(c config.Config) any { return c.Webhooks.AllowPrivate }, false},
		{"timeout flag", []string{"--webhook-timeout", "30s"}, nil, func(c config.Config) any { return c.Webhooks.Timeout }, 30 * time.Second},
		{"timeout environment", nil, map[string]string{"PROCSVC_WEBHOOK_TIMEOUT": "1s"}, func(c config.Config) any { return c.Webhooks.Timeout }, time.Second},
		{"workers flag", []string{"--webhook-workers", "0"}, nil, func(c config.Config) any { return c.Webhooks.Workers }, 0},
		{"workers environment", nil, map[string]string{"PROCSVC_WEBHOOK_WORKERS": "1000"}, func(c config.Config) any { return c.Webhooks.Workers }, 1000},
		{"memory flag", []string{"--webhook-memory-mb", "1"}, nil, func(c config.Config) any { return c.Webhooks.MemoryMB }, 1},
		{"memory environment", nil, map[string]string{"PROCSVC_WEBHOOK_MEMORY_MB": "65536"}, func(c config.Config) any { return c.Webhooks.MemoryMB }, 65536},
		{"memory flag wins", []string{"--webhook-memory-mb", "8"}, map[string]string{"PROCSVC_WEBHOOK_MEMORY_MB": "9"}, func(c config.Config) any { return c.Webhooks.MemoryMB }, 8},
	} {
		c, err := loadServe(tc.args, tc.env)
		if err != nil || tc.get(c) != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.name, tc.get(c), err, tc.want)
		}
	}
	for _, bad := range []struct{ flag, value string }{
		{"--event-retention", "59m"}, {"--event-retention", "8761h"}, {"--event-retention", "0"},
		{"--webhook-timeout", "999ms"}, {"--webhook-timeout", "61s"},
		{"--webhook-workers", "-1"}, {"--webhook-workers", "1001"},
		{"--webhook-memory-mb", "0"}, {"--webhook-memory-mb", "65537"},
	} {
		if _, err := loadServe([]string{bad.flag, bad.value}, nil); err == nil || !strings.Contains(err.Error(), bad.flag) {
			t.Errorf("%s %s: %v, want a refusal naming the setting", bad.flag, bad.value, err)
		}
	}
	if _, err := loadServe(nil, map[string]string{"PROCSVC_WEBHOOK_ALLOW_PRIVATE_ADDRESSES": "maybe"}); err == nil ||
		!strings.Contains(err.Error(), "PROCSVC_WEBHOOK_ALLOW_PRIVATE_ADDRESSES") {
		t.Errorf("a bad boolean: %v, want a refusal naming the variable", err)
	}
}

// TestReplayLimitSetting: --subscription-replay-limit defaults to
// live.DefaultReplayLimit, is read from its variable, and is refused out of
// range.
func TestReplayLimitSetting(t *testing.T) {
	if c, err := loadServe(nil, nil); err != nil || c.Live.ReplayLimit != live.DefaultReplayLimit {
		t.Fatalf("default: %d (%v); want %d", c.Live.ReplayLimit, err, live.DefaultReplayLimit)
	}
	if c, err := loadServe(nil, map[string]string{"PROCSVC_SUBSCRIPTION_REPLAY_LIMIT": "50"}); err != nil || c.Live.ReplayLimit != 50 {
		t.Fatalf("from the environment: %d (%v); want 50", c.Live.ReplayLimit, err)
	}
	for _, bad := range []string{"0", "100001", "-5"} {
		if _, err := loadServe([]string{"--subscription-replay-limit", bad}, nil); err == nil || !strings.Contains(err.Error(), "--subscription-replay-limit") {
			t.Errorf("--subscription-replay-limit %s: %v, want a refusal naming the setting", bad, err)
		}
	}
}
