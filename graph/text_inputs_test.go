package graph_test

// Free-text inputs over GraphQL: a NUL character is refused in every text
// input (PostgreSQL can neither store nor compare one), and names are limited
// in characters, not bytes. Text that is not valid Unicode is in
// unicode_test.go.

import (
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// NUL characters are valid JSON ("\u0000") but PostgreSQL cannot store or
// compare them in text: every free-text input that reached the database
// with one answered `internal` on PostgreSQL (and was stored on SQLite).
// Each must be refused as validation_failed naming the field, on both
// databases, with nothing written.
func TestNULInTextInputs(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		p := createProc(t, s, w.MemberToken, procInput(w, "P1", map[string]any{"content": "keep"}))
		before := snapshot(t, s, w.AdminToken)
		cases := []struct {
			name, token, query string
			vars               map[string]any
			field              string
		}{
			{"CreateContent", w.MemberToken, createProcMutation, obj("in", procInput(w, "x", map[string]any{"content": "a\x00b"})), "content"},
			{"CreateCaptureID", w.MemberToken, createProcMutation, obj("in", procInput(w, "x", map[string]any{"captureId": "a\x00b"})), "captureId"},
			{"UpdateContent", w.MemberToken, `mutation($id: ID!, $c: String) { updateProcedure(id: $id, input: {content: $c}) { id } }`, obj("id", p.ID, "c", "a\x00b"), "content"},
			{"UpdateCaptureID", w.MemberToken, `mutation($id: ID!, $c: String) { updateProcedure(id: $id, input: {captureId: $c}) { id } }`, obj("id", p.ID, "c", "\x00"), "captureId"},
			{"ProcedureSearch", w.ViewToken, `query($q: String) { procedures(filter: {search: $q}) { totalCount } }`, obj("q", "a\x00"), "search"},
			{"ProjectSearch", w.ViewToken, `query($q: String) { projects(search: $q) { totalCount } }`, obj("q", "\x00"), "search"},
			{"CategorySearch", w.ViewToken, `query($q: String) { categories(search: $q) { totalCount } }`, obj("q", "\x00"), "search"},
			{"MemberSearch", w.ViewToken, `query($q: String) { members(search: $q) { totalCount } }`, obj("q", "\x00"), "search"},
			{"TokenName", w.AdminToken, `mutation($n: String) { createToken(input: {name: $n}) { secret } }`, obj("n", "ci\x00"), "name"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := s.GraphQL(t, c.token, c.query, c.vars)
				if c.field == "" {
					wantError(t, r, "validation_failed")
				} else {
					wantError(t, r, "validation_failed", c.field)
				}
			})
		}
		if after := snapshot(t, s, w.AdminToken); after != before {
			t.Errorf("refused inputs changed the workspace:\nbefore %s\nafter  %s", before, after)
		}
	})
}

// Names are documented as 1–500 (procedures) or 1–200 (others) characters,
// and so must the storage layer: ent's MaxLen counted bytes, so a name of
// 500 "é" passed the core and was then refused as "name: invalid value". The
// schema now validates in characters (ent/schema maxChars).
func TestMultibyteNamesAtTheLimit(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		createProc(t, s, w.MemberToken, procInput(w, strings.Repeat("é", core.MaxNameLen), nil))
		createCategory(t, s, w.MemberToken, strings.Repeat("é", core.MaxTitleLen))
		createProject(t, s, w.MemberToken, strings.Repeat("é", core.MaxTitleLen))
	})
}
