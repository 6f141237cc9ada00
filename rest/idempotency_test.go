package rest_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// TestIdempotencyKeyOnEveryWrite: every REST write accepts Idempotency-Key
// as the OpenAPI document describes it: the first answer, its replay
// (Idempotent-Replayed), the 409 of a key reused for another request and the
// 400 of a malformed key (which the document rejects too) all validate
// against the document; reads document no such header. The webhook writes'
// keys are TestWebhookIdempotencyKeys's.
func TestIdempotencyKeyOnEveryWrite(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		M, A := e.ws.MemberToken, e.ws.AdminToken
		js := func(v any) []byte { return mustJSON(t, v) }
		proc := e.createProcedure(t, map[string]any{"name": "Keyed"})["id"].(string)
		doomed := e.createProcedure(t, map[string]any{"name": "Doomed"})["id"].(string)
		proj := e.createProject(t, map[string]any{"name": "Keyed project"})["id"].(string)
		cat := e.createCategory(t, "Keyed category")["id"].(string)
		writes := []call{
			{method: "POST", path: "/procedures", token: M, body: js(e.procBody(map[string]any{"name": "Keyed create"}))},
			{method: "PUT", path: "/procedures/" + proc, token: M, body: js(map[string]any{"name": "Keyed update"})},
			{method: "POST", path: "/procedures/" + proc + "/comments", token: M, body: js(map[string]any{"text": "once"})},
			{method: "DELETE", path: "/procedures/" + doomed, token: M},
			{method: "POST", path: "/projects", token: M, body: js(map[string]any{"name": "Keyed project 2"})},
			{method: "PUT", path: "/projects/" + proj, token: M, body: js(map[string]any{"name": "Keyed project 3"})},
			{method: "DELETE", path: "/projects/" + proj, token: A},
			{method: "POST", path: "/categories", token: M, body: js(map[string]any{"name": "Keyed category 2"})},
			{method: "PUT", path: "/categories/" + cat, token: M, body: js(map[string]any{"name": "Keyed category 3"})},
			{method: "DELETE", path: "/categories/" + cat, token: M},
		}
		for i, c := range writes {
			key := "write-" + string(rune('a'+i))
			c.header = map[string]string{"Idempotency-Key": key}
			first := e.send(t, c)
			wantOK(t, first)
			again := e.send(t, c)
			if again.Status != first.Status || !bytes.Equal(again.Raw, first.Raw) || again.Header.Get("ETag") != first.Header.Get("ETag") ||
				again.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("%s %s: the retry was not a replay: %s", c.method, c.path, again)
			}
			other := c
			other.path += "?other=1"
			wantError(t, e.send(t, other), http.StatusConflict, "conflict", "Idempotency-Key")
			bad := c
			bad.header = map[string]string{"Idempotency-Key": strings.Repeat("k", 256)}
			r := e.send(t, bad)
			wantError(t, r, http.StatusBadRequest, "validation_failed", "Idempotency-Key")
			if x := loadSpec(t).validate(t, bad, r); x.reqErr == nil {
				t.Fatalf("%s %s: the document accepts a 256-character key", c.method, c.path)
			}
		}
		doc := loadSpec(t).doc
		for path, item := range doc.Paths.Map() {
			for method, op := range item.Operations() {
				p := op.Parameters.GetByInAndName("header", "Idempotency-Key")
				if method == http.MethodGet {
					if p != nil {
						t.Errorf("GET %s documents Idempotency-Key", path)
					}
					continue
				}
				conflict := op.Responses.Value("409")
				replayed := false
				for status, resp := range op.Responses.Map() {
					if strings.HasPrefix(status, "2") {
						replayed = resp.Value.Headers["Idempotent-Replayed"] != nil
					}
				}
				if p == nil || conflict == nil || !strings.Contains(*conflict.Value.Description, "Idempotency-Key") || !replayed {
					t.Errorf("%s %s does not document Idempotency-Key, its 409 and Idempotent-Replayed", method, path)
				}
			}
		}
	})
}
