package graph_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

func TestZZProbe2(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		a := s.NewWorkspace(t, "Acme", "ACME")
		p := createProc(t, s, a.MemberToken, procInput(a, "P1", nil))
		r := s.GraphQL(t, a.MemberToken, `mutation($id: ID!, $cat: ID!) {
			m1: updateProcedure(id: $id, input: {priority: LOW}) { category { name } comments { text } }
			m2: updateCategory(id: $cat, input: {name: "Renamed"}) { name }
			m3: addComment(input: {procedureId: $id, text: "hello"}) { id }
			m4: updateProcedure(id: $id, input: {priority: HIGH}) { category { name } comments { text } }
		}`, obj("id", p.ID, "cat", a.CategoryID))
		t.Logf("loader: %s %+v", r.Data, r.Errors)

		q := `mutation { createCategory(input: {name: "via apq"}) { id } }`
		sum := sha256.Sum256([]byte(q))
		ext := `{"persistedQuery": {"version": 1, "sha256Hash": "` + hex.EncodeToString(sum[:]) + `"}}`
		r = s.GraphQL(t, a.MemberToken, `query { viewer { id } }`, nil)
		body := `{"query": ` + quote(q) + `, "extensions": ` + ext + `}`
		r = rawGraphQL(t, s, "POST", "/graphql", bearer(a.MemberToken), "application/json", []byte(body))
		t.Logf("apq post: %d %s %+v", r.Status, r.Data, r.Errors)
		req, _ := http.NewRequest("GET", s.URL+"/graphql?extensions="+url.QueryEscape(ext), nil)
		req.Header.Set("Authorization", "Bearer "+a.MemberToken)
		resp, err := s.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Logf("apq get mutation: %d %s", resp.StatusCode, raw)
	})
}
