package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/contentgen"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// fakeModel is an OpenAI-compatible chat-completions server: it answers
// reply, or fails with status when status is not 200.
func fakeModel(t *testing.T, status int, reply string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		if status != http.StatusOK {
			http.Error(w, `{"error":{"message":"model overloaded"}}`, status)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": reply}}},
		})
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func restCreate(t *testing.T, s *apitest.Server, token string, body map[string]any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/procedures", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("not JSON: %s", raw)
	}
	return resp.StatusCode, out
}

func total(t *testing.T, s *apitest.Server, token string) int {
	t.Helper()
	var out struct{ Procedures struct{ TotalCount int } }
	s.GraphQL(t, token, `{ procedures { totalCount } }`, nil).Decode(t, &out)
	return out.Procedures.TotalCount
}

const createMutation = `mutation($in: CreateProcedureInput!) { createProcedure(input: $in) { content } }`

// TestGenerationThroughBothFaces: with generateProcedure the stored content
// is the generator's document, through GraphQL and REST alike; when the
// generator fails, both answer generation_failed and nothing is stored.
func TestGenerationThroughBothFaces(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		model, calls := fakeModel(t, http.StatusOK, "# Rotate keys\n\n1. Generate\n2. Deploy")
		broken, brokenCalls := fakeModel(t, http.StatusInternalServerError, "")
		openai := func(url string) core.Generator {
			g, err := contentgen.New(contentgen.Config{Provider: "openai", URL: url, Model: "m", APIKey: "sk-secret-123", Timeout: 5 * time.Second, MaxRetries: -1})
			if err != nil {
				t.Fatal(err)
			}
			return g
		}
		cases := []struct {
			name      string
			generator core.Generator
			wantIn    string // substring of the stored content
			fail      bool
		}{
			{"Template", contentgen.Template{}, "## ", false},
			{"OpenAI", openai(model.URL), "# Rotate keys", false},
			{"OpenAIFailing", openai(broken.URL), "", true},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				s := apitest.Start(t, db, core.WithGenerator(tc.generator))
				w := s.NewWorkspace(t, "Gen "+tc.name, "G"+strings.ToUpper(tc.name[:2]))
				in := map[string]any{"name": "Rotate keys", "priority": "HIGH", "state": "TODO", "dueAt": "2026-12-01",
					"categoryId": w.CategoryID, "doerId": w.MemberID, "projectId": w.ProjectID,
					"content": "generate new keys\ndeploy them\nrevoke the old ones", "generateProcedure": true,
					"contentType": "process", "docStyle": "detailed", "language": "other"}
				// The same choices as GraphQL spells them (internal/genchoice).
				gqlIn := maps.Clone(in)
				gqlIn["contentType"], gqlIn["docStyle"], gqlIn["language"] = "PROCESS", "DETAILED", "OTHER"
				before := total(t, s, w.MemberToken)

				gql := s.GraphQL(t, w.MemberToken, createMutation, map[string]any{"in": gqlIn})
				status, body := restCreate(t, s, w.MemberToken, in)
				if tc.fail {
					if gql.Code() != "generation_failed" {
						t.Fatalf("GraphQL: code %q, want generation_failed: %+v", gql.Code(), gql.Errors)
					}
					if status != http.StatusBadGateway || body["code"] != "generation_failed" {
						t.Fatalf("REST: %d %v, want 502 generation_failed", status, body)
					}
					msg := gql.Errors[0].Message + " " + body["message"].(string)
					if strings.Contains(msg, "sk-secret-123") {
						t.Fatalf("the API key leaked: %s", msg)
					}
					if after := total(t, s, w.MemberToken); after != before {
						t.Fatalf("a failed generation stored something: %d → %d", before, after)
					}
					if brokenCalls.Load() == 0 {
						t.Fatal("the model was never called")
					}
					return
				}
				var out struct{ CreateProcedure struct{ Content string } }
				gql.Decode(t, &out)
				if !strings.Contains(out.CreateProcedure.Content, tc.wantIn) || out.CreateProcedure.Content == in["content"] {
					t.Fatalf("GraphQL stored %q", out.CreateProcedure.Content)
				}
				if status != http.StatusOK || !strings.Contains(body["content"].(string), tc.wantIn) {
					t.Fatalf("REST: %d %v", status, body)
				}
				if after := total(t, s, w.MemberToken); after != before+2 {
					t.Fatalf("total %d → %d, want +2", before, after)
				}
				if tc.name == "OpenAI" && calls.Load() < 2 {
					t.Fatalf("model called %d times, want one per create", calls.Load())
				}
			})
		}
	})
}

// TestGenerationOptionsWithoutGenerateAreValidatedAndIgnored documents the
// rule: contentType, docStyle and language are checked always, used only with
// generateProcedure.
func TestGenerationOptionsWithoutGenerateAreValidatedAndIgnored(t *testing.T) {
	db := dbtest.Open(t, "sqlite")
	s := apitest.Start(t, db, core.WithGenerator(contentgen.Template{}))
	w := s.NewWorkspace(t, "Opts", "OPT")
	in := map[string]any{"name": "Plain", "priority": "LOW", "state": "TODO", "dueAt": "2026-12-01",
		"categoryId": w.CategoryID, "doerId": w.MemberID, "projectId": w.ProjectID,
		"content": "as typed", "contentType": "api", "docStyle": "simplified", "language": "python"}
	status, body := restCreate(t, s, w.MemberToken, in)
	if status != http.StatusOK || body["content"] != "as typed" {
		t.Fatalf("%d %v: content must be stored as sent", status, body)
	}
	in["contentType"] = "poetry"
	status, body = restCreate(t, s, w.MemberToken, in)
	if status != http.StatusBadRequest || body["code"] != "validation_failed" {
		t.Fatalf("%d %v: an invalid contentType must be refused even without generation", status, body)
	}
}
