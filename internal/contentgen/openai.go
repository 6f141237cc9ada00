package contentgen

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/procsvc/procsvc/internal/aiclient"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/genchoice"
	"github.com/procsvc/procsvc/internal/limits"
)

// Settings of the openai provider.
const (
	maxPromptContent = 256 << 10 // bytes of supplied content sent
	temperature      = 0.2
)

// openAI is the openai provider: it writes the prompts of a request and asks
// an OpenAI-compatible server for the document through aiclient.
type openAI struct {
	client *aiclient.Client
}

// newOpenAI returns the openai provider of c, whose defaults are applied.
func newOpenAI(c Config) (*openAI, error) {
	client, err := aiclient.New(c.clientConfig())
	if err != nil {
		// The URL is the only setting aiclient refuses: name its variable.
		return nil, errors.New("generate: PROCSVC_AI_URL must be an absolute http:// or https:// URL")
	}
	return &openAI{client: client}, nil
}

// clientConfig is what the openai provider asks of its client: the reply
// must fit in a procedure's content.
func (c Config) clientConfig() aiclient.Config {
	return aiclient.Config{URL: c.URL, Model: c.Model, APIKey: c.APIKey, Timeout: c.Timeout, MaxRetries: c.MaxRetries,
		Temperature: temperature, MaxReplyRunes: limits.Content}
}

// Generate asks the provider for the document.
func (g *openAI) Generate(ctx context.Context, req core.GenerateRequest) (string, error) {
	return g.client.Complete(ctx, chatMessages(req))
}

// chatMessages are the prompts of req: the system prompt states what to
// write, the user message what it is about.
func chatMessages(req core.GenerateRequest) []aiclient.Message {
	o := normalize(req)
	return []aiclient.Message{
		{Role: "system", Content: systemPrompt(o)},
		{Role: "user", Content: userPrompt(o, req.Content)},
	}
}

// systemPrompt states contentType, docStyle and language explicitly and
// describes the structure the template provider would produce.
func systemPrompt(o core.GenerateRequest) string {
	var b strings.Builder
	b.WriteString("You write procedure documentation for a team's procedure tracker. " +
		"Answer with one Markdown document and nothing else: no preamble, no closing remarks, no code fence around the whole document. " +
		"Start with a level-1 heading that is the procedure name.\n\n")
	fmt.Fprintf(&b, "Content type: %s\nDocumentation style: %s\nProgramming language: %s\n\n", o.ContentType, o.DocStyle, o.Language)
	tag := fenceTag(o.Language)
	switch o.ContentType {
	case genchoice.Process:
		b.WriteString("Content type process: write the procedure as numbered steps in order. After each step add a line starting with \"Check:\" that says how to confirm the step is done.\n")
	case genchoice.API:
		b.WriteString("Content type api: document each endpoint with the sections Endpoint (method and path), Parameters (a Markdown table with name, location, type, required and description), Request (body and an example) and Responses (status codes, their meaning and examples). Read JSON keys such as method, path, endpoint, params, parameters, body, response, responses and status as that information.\n")
	case genchoice.Code:
		b.WriteString("Content type code: write a walkthrough of the code: for each step a short explanation followed by the code in a fenced block")
		if tag != "" {
			b.WriteString(" tagged ```" + tag)
		}
		b.WriteString(". Explain what each block does and the identifiers it declares.\n")
	default:
		b.WriteString("Content type standard: write a general guide with the sections Overview, Steps (numbered) or Guidelines (bulleted), and Notes.\n")
	}
	switch o.DocStyle {
	case genchoice.Simplified:
		b.WriteString("Documentation style simplified: keep it short and plain; use few sections, everyday words and no jargon headings.\n")
	case genchoice.Detailed:
		b.WriteString("Documentation style detailed: be thorough; in addition add the sections Prerequisites, Edge cases and Troubleshooting.\n")
	default:
		b.WriteString("Documentation style technical: be precise; keep every term, identifier, name, value and command exactly as supplied.\n")
	}
	if n := langNames[o.Language]; n != "" {
		fmt.Fprintf(&b, "Programming language %s: write any code in %s and tag code fences ```%s.\n", o.Language, n, tag)
	} else {
		b.WriteString("Programming language other: no language was chosen; use plain code fences unless the supplied content shows its language.\n")
	}
	b.WriteString("\nUse only facts from the procedure name and the supplied content; when something needed is missing, say so briefly instead of inventing it. Write in the natural language of the supplied content.")
	return b.String()
}

func userPrompt(o core.GenerateRequest, content string) string {
	c, cut := sanitize(content, maxPromptContent)
	if strings.TrimSpace(c) == "" {
		c = "(none supplied)"
	}
	s := "Procedure name: " + o.Name + "\n\nSupplied content:\n" + c
	if cut {
		s += "\n\n(The supplied content was shortened.)"
	}
	return s
}
