package graph_test

// How /graphql answers by the request's Accept header (RFC 9110 content
// negotiation, docs/api.md "Transports"): a query or mutation is answered as
// JSON, or framed as one Server-Sent Event when the client prefers
// text/event-stream over every JSON type it accepts; only a subscription
// is ever streamed.

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// urqlAccept is what urql sends with every operation.
const urqlAccept = "application/graphql-response+json, application/graphql+json, application/json, text/event-stream, multipart/mixed"

// accepted is one answer of /graphql, its body kept as sent.
type accepted struct {
	status int
	header http.Header
	body   []byte
}

// postAccepting posts body to /graphql as token, with accept as the Accept
// header (none when empty).
func postAccepting(t testing.TB, s *apitest.Server, token, accept string, body []byte) accepted {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+"/graphql", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := s.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return accepted{status: resp.StatusCode, header: resp.Header, body: raw}
}

// eventFrame is how a response is framed as GraphQL over SSE's "distinct
// connections" mode: one next event carrying it, then complete.
func eventFrame(response string) string {
	return "event: next\ndata: " + response + "\n\nevent: complete\ndata:\n\n"
}

// TestAnswerFollowsAccept: every query and mutation runs through the
// ordinary request chain; its answer is JSON unless the client prefers
// text/event-stream, when the same response is framed as one event. q=0
// means not acceptable, and order breaks ties in q. Refusals are answered
// as JSON error bodies with their status, whatever the Accept header.
func TestAnswerFollowsAccept(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		query := []byte(`{"query":"{ workspace { key } }"}`)
		const data = `{"data":{"workspace":{"key":"ACME"}}}`
		for _, c := range []struct {
			accept string
			framed bool
		}{
			{"", false},
			{"application/json", false},
			{"*/*", false},
			{"application/json, text/event-stream;q=0", false},
			{"text/event-stream;q=0, */*", false},
			{"application/json, text/event-stream", false},
			{urqlAccept, false},
			{"text/event-stream", true},
			{"text/event-stream, application/json", true},
			{"application/json;q=0.5, text/event-stream", true},
			{"text/*", true},
			{"application/json;q=0, text/event-stream;q=0.1", true},
		} {
			t.Run(c.accept, func(t *testing.T) {
				a := postAccepting(t, s, w.MemberToken, c.accept, query)
				ct := a.header.Get("Content-Type")
				switch {
				case a.status != http.StatusOK:
					t.Fatalf("status %d: %s", a.status, a.body)
				case c.framed && (ct != "text/event-stream" || string(a.body) != eventFrame(data)):
					t.Fatalf("want one framed event, got %q: %q", ct, a.body)
				case !c.framed && (!strings.Contains(ct, "json") || string(a.body) != data):
					t.Fatalf("want JSON, got %q: %q", ct, a.body)
				}
			})
		}
		t.Run("MutationFramed", func(t *testing.T) {
			a := postAccepting(t, s, w.MemberToken, "text/event-stream", []byte(`{"query":"mutation { createCategory(input: {name: \"framed\"}) { name } }"}`))
			// A write reports the version it committed (docs/api.md,
			// "Reading your writes").
			if a.status != http.StatusOK || !regexp.MustCompile(`^event: next\ndata: \{"data":\{"createCategory":\{"name":"framed"\}\},"extensions":\{"workspaceVersion":\d+\}\}\n\nevent: complete\ndata:\n\n$`).Match(a.body) {
				t.Fatalf("%d %q", a.status, a.body)
			}
		})
		t.Run("RefusalIsJSON", func(t *testing.T) {
			a := postAccepting(t, s, w.MemberToken, "text/event-stream", []byte(`{"query":"{ workspace { nope } }"}`))
			if a.status != http.StatusBadRequest || !strings.Contains(a.header.Get("Content-Type"), "json") ||
				!strings.Contains(string(a.body), `"validation_failed"`) || strings.Contains(string(a.body), `"data"`) {
				t.Fatalf("%d %q: %s", a.status, a.header.Get("Content-Type"), a.body)
			}
		})
		t.Run("SubscriptionStreamedWhenAcceptable", func(t *testing.T) {
			// Accepted at all, even below JSON: a subscription can only be
			// streamed.
			for _, accept := range []string{"text/event-stream", urqlAccept, "application/json, text/event-stream;q=0.1"} {
				ctx, cancel := context.WithCancel(context.Background())
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/graphql", strings.NewReader(`{"query":"subscription { procedureEvents { kind } }"}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+w.ViewToken)
				req.Header.Set("Accept", accept)
				resp, err := s.HTTP.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				ct := resp.Header.Get("Content-Type")
				cancel()
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
					t.Fatalf("%q: %d %q", accept, resp.StatusCode, ct)
				}
			}
		})
		t.Run("SubscriptionWithoutEventStream", func(t *testing.T) {
			for _, accept := range []string{"", "application/json", "application/json, text/event-stream;q=0"} {
				a := postAccepting(t, s, w.ViewToken, accept, []byte(`{"query":"subscription { procedureEvents { kind } }"}`))
				if !strings.Contains(a.header.Get("Content-Type"), "json") || !strings.Contains(string(a.body), `"bad_request"`) {
					t.Fatalf("%q: %d %q %s", accept, a.status, a.header.Get("Content-Type"), a.body)
				}
			}
		})
		t.Run("JSONTypeByQ", func(t *testing.T) {
			// gqlgen would take the first JSON type listed, q=0 or not.
			a := postAccepting(t, s, w.MemberToken, "application/graphql-response+json;q=0, application/json", query)
			if ct := a.header.Get("Content-Type"); a.status != http.StatusOK || !strings.HasPrefix(ct, "application/json") {
				t.Fatalf("%d %q", a.status, ct)
			}
		})
	})
}
