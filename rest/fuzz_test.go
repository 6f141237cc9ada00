package rest_test

// Fuzzing of the REST face through the real handler on SQLite: random
// methods, routes, ids, query strings, content types and bodies. Whatever
// arrives, the answer is never a 500, always a JSON body (docs/design.md §6's error
// body with a code for every non-2xx), and a refused request leaves the
// workspace's data exactly as it was.

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/rest"
)

var fuzzContentTypes = []string{"application/json", "", "text/plain", "application/json; charset=utf-8", "application/merge-patch+json", "application/json; charset", "multipart/form-data; boundary=x"}

var fuzzMethods = []string{"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"}

func FuzzREST(f *testing.F) {
	db := dbtest.Open(f, "sqlite")
	s := apitest.Start(f, db)
	a := s.NewWorkspace(f, "Fuzz", "FZ")
	b := s.NewWorkspace(f, "Other", "OTH")

	post := func(token, path, body string) map[string]any {
		req, _ := http.NewRequest("POST", s.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := s.HTTP.Do(req)
		if err != nil {
			f.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode/100 != 2 {
			f.Fatalf("setup %s: %d %v", path, resp.StatusCode, out)
		}
		return out
	}
	procBody := func(w *apitest.Workspace, name string) string {
		return `{"name":"` + name + `","priority":"HIGH","state":"TODO","dueAt":"2026-12-01","projectId":"` + w.ProjectID +
			`","categoryId":"` + w.CategoryID + `","doerId":"` + w.MemberID + `","content":"step one"}`
	}
	pA := post(a.MemberToken, "/procedures", procBody(a, "Alpha"))
	pB := post(b.MemberToken, "/procedures", procBody(b, "Beta"))
	post(a.MemberToken, "/procedures/"+pA["id"].(string)+"/comments", `{"text":"hi"}`)
	hA := post(a.AdminToken, "/webhooks", `{"url":"https://hooks.example.com/fuzz"}`)
	hB := post(b.AdminToken, "/webhooks", `{"url":"https://hooks.example.com/other"}`)

	ids := []string{
		pA["id"].(string), "FZ-1", "fz-1", "OTH-1", pB["id"].(string), a.ProjectID, a.CategoryID, a.MemberID,
		b.ProjectID, b.CategoryID, b.MemberID, hA["id"].(string), hB["id"].(string), "", "00000000-0000-0000-0000-000000000000", "%00", "%ff", "..", "PRC-99999999999999999999",
	}
	tokens := []string{a.MemberToken, a.ViewToken, a.AdminToken, b.MemberToken, "", "garbage", "pms_" + strings.Repeat("x", 43)}
	routes := rest.Routes()

	// Seeds: every route with a plausible body.
	for i, rt := range routes {
		method, path, _ := strings.Cut(rt, " ")
		mi := 0
		for j, m := range fuzzMethods {
			if m == method {
				mi = j
			}
		}
		_ = path
		f.Add(uint8(mi), uint8(i), uint8(0), uint8(0), uint8(0), "", []byte(`{"name":"x"}`))
	}
	f.Add(uint8(1), uint8(1), uint8(0), uint8(0), uint8(0), "", []byte(procBody(a, "Seed")))
	f.Add(uint8(2), uint8(3), uint8(0), uint8(0), uint8(0), "", []byte(`{"state":"DONE","position":1e400,"content":"\u0000"}`))
	f.Add(uint8(0), uint8(0), uint8(0), uint8(0), uint8(0), "search=%00&limit=5&page=2&sortBy=name", []byte(nil))
	f.Add(uint8(0), uint8(0), uint8(0), uint8(0), uint8(0), "startedAt=2026-01-01&dueAt=2025-01-01&state=TODO&priority=LOW", []byte(nil))
	f.Add(uint8(2), uint8(3), uint8(0), uint8(0), uint8(0), "", []byte(`{"dueAt":"9999-12-31T23:59:59-23:59","captureId":"\u0000"}`))
	f.Add(uint8(1), uint8(5), uint8(0), uint8(0), uint8(0), "", []byte(`{"text":"\u0000"}`))
	f.Add(uint8(1), uint8(12), uint8(0), uint8(0), uint8(0), "", []byte(`{"name":"`+strings.Repeat("é", 200)+`"}`))

	f.Fuzz(func(t *testing.T, methodI, routeI, idI, tokenI, ctI uint8, query string, body []byte) {
		method := fuzzMethods[int(methodI)%len(fuzzMethods)]
		var path string
		if int(routeI) < len(routes) {
			_, path, _ = strings.Cut(routes[routeI], " ")
		} else {
			path = []string{"/procedures/{id}/comments/x", "/x{id}", "/graphqlx", "/procedures/", "/members/{id}/x"}[int(routeI)%5]
		}
		path = strings.ReplaceAll(path, "{id}", ids[int(idI)%len(ids)])
		target := s.URL + path
		if query != "" {
			target += "?" + query
		}
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequest(method, target, rd)
		if err != nil {
			t.Skip()
		}
		if ct := fuzzContentTypes[int(ctI)%len(fuzzContentTypes)]; ct != "" && body != nil {
			req.Header.Set("Content-Type", ct)
		}
		if tok := tokens[int(tokenI)%len(tokens)]; tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		before := apitest.DataDigest(t, db.SQL)
		resp, err := s.HTTP.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, target, err)
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode >= 500 {
			t.Fatalf("%s %s %q: status %d: %s", method, target, body, resp.StatusCode, raw)
		}
		if method == "HEAD" || resp.StatusCode == http.StatusNoContent {
			return
		}
		var out any
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s %s: body is not JSON (status %d): %q", method, target, resp.StatusCode, raw)
		}
		if resp.StatusCode/100 != 2 {
			m, _ := out.(map[string]any)
			code, _ := m["code"].(string)
			if code == "" {
				t.Fatalf("%s %s: status %d without a code: %s", method, target, resp.StatusCode, raw)
			}
			if rid, _ := m["requestId"].(string); rid == "" || rid != resp.Header.Get("X-Request-Id") {
				t.Fatalf("%s %s: requestId %q vs header %q", method, target, rid, resp.Header.Get("X-Request-Id"))
			}
			if after := apitest.DataDigest(t, db.SQL); after != before {
				t.Fatalf("%s %s %q: answered %d but changed data: %s", method, target, body, resp.StatusCode, raw)
			}
		}
	})
}
