package config_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/oidc"
)

func TestOIDCSettings(t *testing.T) {
	for _, tc := range []struct {
		name               string
		args               []string
		env                map[string]string
		issuers, audiences []string
		skew               time.Duration
	}{
		{"defaults: off", nil, nil, nil, nil, oidc.DefaultClockSkew},
		{"flags", []string{"--oidc-issuer", "https://idp.example.com/realms/main,http://127.0.0.1:5556",
			"--oidc-audience", "playground, api", "--oidc-clock-skew", "30s"}, nil,
			[]string{"https://idp.example.com/realms/main", "http://127.0.0.1:5556"}, []string{"playground", "api"}, 30 * time.Second},
		{"environment", nil, map[string]string{"PROCSVC_OIDC_ISSUER": "https://login.example.org", "PROCSVC_OIDC_AUDIENCE": "app"},
			[]string{"https://login.example.org"}, []string{"app"}, oidc.DefaultClockSkew},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse(tc.args, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.OIDC.Issuers, tc.issuers) || !slices.Equal(c.OIDC.Audiences, tc.audiences) || c.OIDC.ClockSkew != tc.skew ||
				c.OIDC.KeyRefetchInterval != oidc.DefaultKeyRefetchInterval || c.OIDC.UserinfoTTL != oidc.DefaultUserinfoTTL {
				t.Fatalf("got %+v", c.OIDC)
			}
		})
	}
}

func TestOIDCSettingsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"http off loopback", []string{"--oidc-issuer", "http://idp.example.com", "--oidc-audience", "app"}, nil, "loopback only"},
		{"not a URL", nil, map[string]string{"PROCSVC_OIDC_ISSUER": "idp.example.com", "PROCSVC_OIDC_AUDIENCE": "app"}, "absolute URL"},
		{"an issuer without an audience", []string{"--oidc-issuer", "https://idp.example.com"}, nil, "--oidc-audience"},
		{"an audience without an issuer", []string{"--oidc-audience", "app"}, nil, "without an issuer"},
		{"skew over the bound", []string{"--oidc-clock-skew", "10m"}, nil, "--oidc-clock-skew"},
		{"refetch interval under the bound", []string{"--oidc-key-refetch-interval", "10ms"}, nil, "--oidc-key-refetch-interval"},
		{"a playground client id without an issuer", []string{"--oidc-playground-client-id", "playground"}, nil, "--oidc-playground-client-id"},
		{"userinfo TTL over the bound", nil, map[string]string{"PROCSVC_OIDC_USERINFO_TTL": "2h"}, "PROCSVC_OIDC_USERINFO_TTL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(tc.args, tc.env)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// TestPlaygroundClientID: the playground's client id comes from the flag or
// the environment, and is empty (no Sign in button) by default.
func TestPlaygroundClientID(t *testing.T) {
	issuer := []string{"--oidc-issuer", "https://idp.example.com", "--oidc-audience", "playground"}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"default: none", issuer, nil, ""},
		{"flag", append(slices.Clone(issuer), "--oidc-playground-client-id", "playground"), nil, "playground"},
		{"environment", issuer, map[string]string{"PROCSVC_OIDC_PLAYGROUND_CLIENT_ID": "web"}, "web"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse(tc.args, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if c.PlaygroundClientID != tc.want {
				t.Fatalf("PlaygroundClientID %q, want %q", c.PlaygroundClientID, tc.want)
			}
		})
	}
}
