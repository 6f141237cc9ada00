// Package contentgen (the content generator) produces a procedure's content when it is created with
// generateProcedure=true. It implements core.Generator with two providers:
//
//   - "template" (the default): deterministic and offline. Content that is
//     one JSON object or array is walked with encoding/json's token stream;
//     other content is read line by line (lists, "Check:" lines, code,
//     sentences). The result fills one text/template layout whose sections
//     follow the request's choices (internal/genchoice), as docs/design.md
//     §8 describes. Input, output and every structure read are bounded
//     (parse.go), so hostile content cannot make it slow, large or panic.
//   - "openai": any server speaking the OpenAI chat-completions protocol.
//     This package writes the prompts (openai.go); internal/aiclient talks to
//     the server: timeouts, retries, reply validation and failures.
//
// Every failure is an *apperr.Error with code generation_failed whose message
// says what went wrong; no message or cause ever contains the API key.
package contentgen

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/procsvc/procsvc/internal/core"
)

// Defaults applied by New and Describe to zero Config fields.
const (
	DefaultTimeout    = 60 * time.Second
	DefaultMaxRetries = 2
	// MaxMaxRetries bounds Config.MaxRetries; larger values are clamped.
	MaxMaxRetries = 10
)

// Providers accepted in Config.Provider (case-insensitive; "" is template).
const (
	ProviderTemplate = "template"
	ProviderOpenAI   = "openai"
)

// Config selects and configures the provider.
//
// Timeout is per attempt (0 or negative: DefaultTimeout). MaxRetries is the
// number of retries after the first attempt: 0 means DefaultMaxRetries, a
// negative value disables retries, values above MaxMaxRetries are clamped.
type Config struct {
	Provider   string
	URL        string
	Model      string
	APIKey     string
	Timeout    time.Duration
	MaxRetries int
}

// withDefaults returns c with its provider normalised and defaults applied.
func (c Config) withDefaults() Config {
	c.Provider = strings.ToLower(strings.TrimSpace(c.Provider))
	if c.Provider == "" {
		c.Provider = ProviderTemplate
	}
	c.URL = strings.TrimSpace(c.URL)
	c.Model = strings.TrimSpace(c.Model)
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = DefaultMaxRetries
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	case c.MaxRetries > MaxMaxRetries:
		c.MaxRetries = MaxMaxRetries
	}
	return c
}

// New returns the generator cfg selects. Errors name the setting to fix and
// never contain the API key.
func New(cfg Config) (core.Generator, error) {
	c := cfg.withDefaults()
	switch c.Provider {
	case ProviderTemplate:
		return Template{}, nil
	case ProviderOpenAI:
		var missing []string
		if c.URL == "" {
			missing = append(missing, "a base URL (PROCSVC_AI_URL)")
		}
		if c.Model == "" {
			missing = append(missing, "a model (PROCSVC_AI_MODEL)")
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("generate: provider openai needs %s", strings.Join(missing, " and "))
		}
		g, err := newOpenAI(c)
		if err != nil {
			return nil, err
		}
		return g, nil
	default:
		return nil, fmt.Errorf("generate: unknown provider %q: use template or openai (PROCSVC_AI_PROVIDER)", cfg.Provider)
	}
}

// Describe returns a one-line summary for the startup log. It never includes
// the API key (only whether one is set), nor credentials, query or fragment
// of the URL.
func (c Config) Describe() string {
	c = c.withDefaults()
	switch c.Provider {
	case ProviderTemplate:
		return "content generation: template (offline, deterministic)"
	case ProviderOpenAI:
		key := "no api key"
		if c.APIKey != "" {
			key = "api key set"
		}
		return fmt.Sprintf("content generation: openai model=%q url=%q timeout=%s retries=%d, %s",
			c.Model, safeURL(c.URL), c.Timeout, c.MaxRetries, key)
	default:
		return fmt.Sprintf("content generation: unknown provider %q", c.Provider)
	}
}

// safeURL returns scheme://host/path of raw, without user info, query or
// fragment (which could carry secrets).
func safeURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(invalid URL)"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}
