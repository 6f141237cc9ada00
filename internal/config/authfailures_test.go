package config_test

import (
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/config"
)

func TestAuthFailureSettings(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		env        map[string]string
		want       config.AuthFailures
		wantHeader string
	}{
		{"defaults", nil, nil, config.AuthFailures{Rate: 5, Burst: 100}, ""},
		{"flags", []string{"--auth-failure-rate", "0.5", "--auth-failure-burst", "20", "--client-ip-header", "X-Forwarded-For"}, nil,
			config.AuthFailures{Rate: 0.5, Burst: 20}, "X-Forwarded-For"},
		{"environment", nil, map[string]string{"PROCSVC_AUTH_FAILURE_RATE": "2", "PROCSVC_AUTH_FAILURE_BURST": "9", "PROCSVC_CLIENT_IP_HEADER": "X-Real-IP"},
			config.AuthFailures{Rate: 2, Burst: 9}, "X-Real-IP"},
		{"off", []string{"--auth-failure-rate", "0", "--auth-failure-burst", "0"}, nil, config.AuthFailures{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse(tc.args, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if c.AuthFailures != tc.want || c.ClientIPHeader != tc.wantHeader {
				t.Fatalf("got %+v %q, want %+v %q", c.AuthFailures, c.ClientIPHeader, tc.want, tc.wantHeader)
			}
		})
	}
}

func TestAuthFailureSettingsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"negative rate", []string{"--auth-failure-rate", "-1"}, nil, "--auth-failure-rate"},
		{"rate not a number", nil, map[string]string{"PROCSVC_AUTH_FAILURE_RATE": "slow"}, "PROCSVC_AUTH_FAILURE_RATE"},
		{"zero burst", []string{"--auth-failure-burst", "0"}, nil, "--auth-failure-burst"},
		{"burst over the bound", []string{"--auth-failure-burst", "1000001"}, nil, "--auth-failure-burst"},
		{"not a header name", []string{"--client-ip-header", "X Forwarded For"}, nil, "--client-ip-header"},
		{"Forwarded", nil, map[string]string{"PROCSVC_CLIENT_IP_HEADER": "forwarded"}, "X-Forwarded-For"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(tc.args, tc.env)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}
