package contentgen

import (
	"strings"
	"testing"
	"time"
)

func TestNew(t *testing.T) {
	const key = "sk-SECRET-KEY-for-tests-0123456789"
	tests := []struct {
		name    string
		cfg     Config
		wantErr string // substring; "" means success
		openai  bool
	}{
		{"empty provider is template", Config{}, "", false},
		{"template", Config{Provider: "template"}, "", false},
		{"template, any case and spaces", Config{Provider: " Template "}, "", false},
		{"openai", Config{Provider: "openai", URL: "http://localhost:1", Model: "m", APIKey: key}, "", true},
		{"openai without key", Config{Provider: "OpenAI", URL: "https://api.example.com/v1/", Model: "m"}, "", true},
		{"openai without URL", Config{Provider: "openai", Model: "m", APIKey: key}, "PROCSVC_AI_URL", false},
		{"openai without model", Config{Provider: "openai", URL: "http://x", APIKey: key}, "PROCSVC_AI_MODEL", false},
		{"openai without both", Config{Provider: "openai"}, "PROCSVC_AI_MODEL", false},
		{"openai relative URL", Config{Provider: "openai", URL: "api.example.com", Model: "m"}, "PROCSVC_AI_URL", false},
		{"openai bad scheme", Config{Provider: "openai", URL: "ftp://" + key + "@x", Model: "m", APIKey: key}, "PROCSVC_AI_URL", false},
		{"unknown provider", Config{Provider: "gemini", APIKey: key}, "PROCSVC_AI_PROVIDER", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := New(tt.cfg)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("New: want error containing %q, got nil", tt.wantErr)
				}
				if g != nil {
					t.Errorf("New: want nil generator with error, got %T", g)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %q does not name %s", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), key) {
					t.Errorf("error %q contains the API key", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			_, isOpenAI := g.(*openAI)
			_, isTemplate := g.(Template)
			if isOpenAI != tt.openai || isTemplate == tt.openai {
				t.Errorf("New returned %T", g)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	tests := []struct {
		in           Config
		timeout      time.Duration
		maxRetries   int
		wantProvider string
	}{
		{Config{}, DefaultTimeout, DefaultMaxRetries, "template"},
		{Config{Timeout: -time.Second, MaxRetries: -1}, DefaultTimeout, 0, "template"},
		{Config{Provider: "OPENAI", Timeout: time.Second, MaxRetries: 5}, time.Second, 5, "openai"},
		{Config{MaxRetries: 1000}, DefaultTimeout, MaxMaxRetries, "template"},
	}
	for _, tt := range tests {
		got := tt.in.withDefaults()
		if got.Timeout != tt.timeout || got.MaxRetries != tt.maxRetries || got.Provider != tt.wantProvider {
			t.Errorf("withDefaults(%+v) = timeout %s, retries %d, provider %q; want %s, %d, %q",
				tt.in, got.Timeout, got.MaxRetries, got.Provider, tt.timeout, tt.maxRetries, tt.wantProvider)
		}
	}
	if DefaultTimeout != 60*time.Second || DefaultMaxRetries != 2 {
		t.Errorf("defaults are %s and %d, want 60s and 2", DefaultTimeout, DefaultMaxRetries)
	}
	// New builds the openai provider's client from the config with its
	// defaults applied
	openai := Config{Provider: "openai", URL: "http://localhost:1", Model: "m"}
	if _, err := New(openai); err != nil {
		t.Fatal(err)
	}
	if c := openai.withDefaults().clientConfig(); c.Timeout != DefaultTimeout || c.MaxRetries != DefaultMaxRetries {
		t.Errorf("openai provider timeout %s retries %d, want defaults", c.Timeout, c.MaxRetries)
	}
}

func TestDescribe(t *testing.T) {
	const key = "sk-SECRET-KEY-for-tests-0123456789"
	tests := []struct {
		cfg  Config
		want []string
		not  []string
	}{
		{Config{}, []string{"template"}, nil},
		{Config{Provider: "openai", URL: "https://user:" + key + "@api.example.com/v1?api_key=" + key, Model: "gpt-x", APIKey: key},
			[]string{"openai", "gpt-x", "https://api.example.com/v1", "timeout=1m0s", "retries=2", "api key set"}, []string{key, "user", "api_key"}},
		{Config{Provider: "openai", URL: "http://ollama:11434", Model: "llama3"}, []string{"no api key", "http://ollama:11434"}, nil},
		{Config{Provider: "nope", APIKey: key}, []string{"unknown"}, []string{key}},
	}
	for _, tt := range tests {
		got := tt.cfg.Describe()
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("Describe() = %q, want it to contain %q", got, w)
			}
		}
		for _, n := range tt.not {
			if strings.Contains(got, n) {
				t.Errorf("Describe() = %q must not contain %q", got, n)
			}
		}
		if strings.Contains(got, key) {
			t.Errorf("Describe() = %q contains the API key", got)
		}
	}
}
