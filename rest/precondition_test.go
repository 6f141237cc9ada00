package rest_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

type etagAnswer struct {
	status int
	header http.Header
	body   map[string]any
}

func etagCall(t *testing.T, s *apitest.Server, method, path, token, ifMatch string, body any) etagAnswer {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.URL+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if ifMatch != "" {
		req.Header.Set("If-Match", ifMatch)
	}
	resp, err := s.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s %s: not a JSON object: %s", method, path, raw)
	}
	return etagAnswer{resp.StatusCode, resp.Header, m}
}

// TestIfMatch: single-record reads and writes carry an ETag; a PUT or DELETE
// with a stale If-Match is refused with 412 precondition_failed and changes
// nothing, a current one goes through, "*" means no condition, and a
// malformed header is 400 validation_failed naming If-Match.
func TestIfMatch(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Etag", "ETG")
		tok := w.MemberToken
		created := etagCall(t, s, http.MethodPost, "/procedures", tok, "", map[string]any{
			"name": "Tagged", "priority": "LOW", "state": "TODO", "dueAt": "2026-12-01",
			"categoryId": w.CategoryID, "doerId": w.MemberID, "projectId": w.ProjectID})
		emptyProject := etagCall(t, s, http.MethodPost, "/projects", tok, "", map[string]any{"name": "Spare"})
		resources := []struct {
			name, path string
			update     map[string]any
			deletable  bool
		}{
			{"Procedure", "/procedures/" + created.body["id"].(string), map[string]any{"name": "Renamed"}, true},
			{"Project", "/projects/" + emptyProject.body["id"].(string), map[string]any{"name": "Renamed"}, true},
			{"Category", "/categories/" + w.CategoryID, map[string]any{"name": "Renamed"}, true},
		}
		for _, rc := range resources {
			t.Run(rc.name, func(t *testing.T) {
				first := etagCall(t, s, http.MethodGet, rc.path, tok, "", nil)
				etag := first.header.Get("ETag")
				if first.status != http.StatusOK || etag == "" {
					t.Fatalf("GET: %d, ETag %q", first.status, etag)
				}
				if again := etagCall(t, s, http.MethodGet, rc.path, tok, "", nil); again.header.Get("ETag") != etag {
					t.Fatalf("a repeated (cached) GET lost the ETag: %q vs %q", again.header.Get("ETag"), etag)
				}
				if bad := etagCall(t, s, http.MethodPut, rc.path, tok, "yesterday", rc.update); bad.status != http.StatusBadRequest ||
					bad.body["code"] != "validation_failed" {
					t.Fatalf("malformed If-Match: %d %v", bad.status, bad.body)
				}
				updated := etagCall(t, s, http.MethodPut, rc.path, tok, etag, rc.update)
				if updated.status != http.StatusOK || updated.header.Get("ETag") == "" || updated.header.Get("ETag") == etag {
					t.Fatalf("PUT with the current ETag: %d, ETag %q (was %q)", updated.status, updated.header.Get("ETag"), etag)
				}
				stale := etagCall(t, s, http.MethodPut, rc.path, tok, etag, map[string]any{"name": "Lost update"})
				if stale.status != http.StatusPreconditionFailed || stale.body["code"] != "precondition_failed" {
					t.Fatalf("PUT with a stale ETag: %d %v", stale.status, stale.body)
				}
				if now := etagCall(t, s, http.MethodGet, rc.path, tok, "", nil); now.body["name"] != "Renamed" {
					t.Fatalf("a refused PUT changed the record: %v", now.body)
				}
				if del := etagCall(t, s, http.MethodDelete, rc.path, tok, etag, nil); del.status != http.StatusPreconditionFailed {
					t.Fatalf("DELETE with a stale ETag: %d %v", del.status, del.body)
				}
				if any := etagCall(t, s, http.MethodPut, rc.path, tok, "*", map[string]any{"name": "Any"}); any.status != http.StatusOK {
					t.Fatalf("If-Match: * : %d %v", any.status, any.body)
				}
				current := etagCall(t, s, http.MethodGet, rc.path, tok, "", nil).header.Get("ETag")
				if del := etagCall(t, s, http.MethodDelete, rc.path, tok, current, nil); del.status != http.StatusOK {
					t.Fatalf("DELETE with the current ETag: %d %v", del.status, del.body)
				}
			})
		}
	})
}
