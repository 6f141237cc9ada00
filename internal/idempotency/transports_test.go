package idempotency_test

// An Idempotency-Key holds on every transport a GraphQL mutation can take
// over HTTP, whatever the Accept header: a mutation answered as one
// Server-Sent Event goes through the same request chain as one answered
// as JSON, and its replays are framed as the retry asks.

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/ent/category"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/idempotency"
	"github.com/procsvc/procsvc/internal/viewer"
)

// sendAccepting posts a keyed GraphQL body with accept as its Accept header.
func sendAccepting(t *testing.T, s *apitest.Server, token, accept string, body []byte, key string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+"/graphql", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	req.Header.Set(idempotency.Header, key)
	resp, err := s.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: raw}
}

func categories(t *testing.T, db *database.DB, name string) int {
	t.Helper()
	n, err := db.Client.Category.Query().Where(category.Name(name)).Count(viewer.System(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// framed is resp framed as one Server-Sent Event and its end.
func framed(resp []byte) string {
	return "event: next\ndata: " + string(resp) + "\n\nevent: complete\ndata:\n\n"
}

// TestKeyedMutationOnEveryAccept: a keyed mutation sent three times with
// one key runs once and is replayed twice, whether the client prefers JSON
// or text/event-stream; the stored answer is the response itself, so a
// retry asking for the other framing gets the same response in its own.
func TestKeyedMutationOnEveryAccept(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		for i, accept := range []string{
			"text/event-stream",
			"application/json, text/event-stream;q=0",
			"application/json;q=0.5, text/event-stream",
			"application/graphql-response+json, application/graphql+json, application/json, text/event-stream, multipart/mixed",
		} {
			t.Run(accept, func(t *testing.T) {
				name := "accept-" + string(rune('a'+i))
				body := gqlBody(`mutation { createCategory(input: {name: "`+name+`"}) { name } }`, nil)
				key := "accept-key-" + name
				first := sendAccepting(t, e.s, e.ws.MemberToken, accept, body, key)
				if first.status != http.StatusOK || first.replayed() {
					t.Fatalf("first: %d %v %s", first.status, first.header, first.body)
				}
				for range 2 {
					wantSameResponse(t, first, sendAccepting(t, e.s, e.ws.MemberToken, accept, body, key))
				}
				if n := categories(t, db, name); n != 1 {
					t.Fatalf("%d categories, want 1", n)
				}
			})
		}
		t.Run("OtherFraming", func(t *testing.T) {
			body := gqlBody(`mutation { createCategory(input: {name: "reframed"}) { name } }`, nil)
			asJSON := sendAccepting(t, e.s, e.ws.MemberToken, "application/json", body, "reframed")
			// The answer carries the version the write committed
			// (docs/api.md, "Reading your writes"); the replay is that
			// answer, framed.
			resp := string(asJSON.body)
			if asJSON.status != http.StatusOK || !regexp.MustCompile(`^\{"data":\{"createCategory":\{"name":"reframed"\}\},"extensions":\{"workspaceVersion":\d+\}\}$`).MatchString(resp) {
				t.Fatalf("first: %d %s", asJSON.status, asJSON.body)
			}
			asEvents := sendAccepting(t, e.s, e.ws.MemberToken, "text/event-stream", body, "reframed")
			if !asEvents.replayed() || asEvents.header.Get("Content-Type") != "text/event-stream" || string(asEvents.body) != framed([]byte(resp)) {
				t.Fatalf("framed replay: %v %q", asEvents.header, asEvents.body)
			}
			if n := categories(t, db, "reframed"); n != 1 {
				t.Fatalf("%d categories, want 1", n)
			}
		})
		t.Run("KeyErrorsAreJSON", func(t *testing.T) {
			body := gqlBody(`mutation { createCategory(input: {name: "other"}) { name } }`, nil)
			a := sendAccepting(t, e.s, e.ws.MemberToken, "text/event-stream", body, "reframed")
			if a.status != http.StatusConflict || !strings.Contains(a.header.Get("Content-Type"), "json") {
				t.Fatalf("%d %q %s", a.status, a.header.Get("Content-Type"), a.body)
			}
			wantGraphQLKeyError(t, a, http.StatusConflict, "conflict", idempotency.Header)
		})
	})
}
