package contentgen

import (
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/limits"
)

// The client's side (wire, retries, failures) is tested in internal/aiclient.

var apiReq = core.GenerateRequest{Name: "Rotate keys", Content: `{"method":"POST","path":"/keys"}`, ContentType: "api", DocStyle: "detailed", Language: "python"}

func TestOpenAIRequest(t *testing.T) {
	msgs := chatMessages(apiReq)
	if len(msgs) != 2 {
		t.Fatalf("messages %+v", msgs)
	}
	sys, user := msgs[0], msgs[1]
	if sys.Role != "system" || user.Role != "user" {
		t.Errorf("roles %q, %q", sys.Role, user.Role)
	}
	for _, w := range []string{"Content type: api", "Documentation style: detailed", "Programming language: python", "Parameters", "Prerequisites, Edge cases and Troubleshooting", "```python"} {
		if !strings.Contains(sys.Content, w) {
			t.Errorf("system prompt lacks %q:\n%s", w, sys.Content)
		}
	}
	for _, w := range []string{"Rotate keys", `{"method":"POST","path":"/keys"}`} {
		if !strings.Contains(user.Content, w) {
			t.Errorf("user message lacks %q:\n%s", w, user.Content)
		}
	}
	const key = "sk-test-SECRET-0123456789abcdef"
	c := Config{Provider: "openai", URL: "http://h/v1", Model: "test-model", APIKey: key, Timeout: 7, MaxRetries: 3}.clientConfig()
	if c.URL != "http://h/v1" || c.Model != "test-model" || c.APIKey != key || c.Timeout != 7 || c.MaxRetries != 3 ||
		c.Temperature != 0.2 || c.MaxReplyRunes != limits.Content {
		t.Errorf("client config %+v", c)
	}
}

func TestOpenAISystemPromptFollowsRequest(t *testing.T) {
	tests := []struct {
		req  core.GenerateRequest
		want []string
	}{
		{core.GenerateRequest{ContentType: "process", DocStyle: "simplified", Language: "other"},
			[]string{"Content type: process", "Documentation style: simplified", "Programming language: other", "\"Check:\"", "no jargon headings", "plain code fences"}},
		{core.GenerateRequest{ContentType: "code", DocStyle: "technical", Language: "csharp"},
			[]string{"Content type: code", "Documentation style: technical", "Programming language: csharp", "```csharp", "exactly as supplied"}},
		{core.GenerateRequest{},
			[]string{"Content type: standard", "Documentation style: technical", "Programming language: other", "Overview"}},
	}
	for _, tt := range tests {
		p := systemPrompt(normalize(tt.req))
		for _, w := range tt.want {
			if !strings.Contains(p, w) {
				t.Errorf("system prompt for %+v lacks %q:\n%s", tt.req, w, p)
			}
		}
	}
}
