package graph_test

// Mistakes in a request's input values (docs/api.md "Errors in GraphQL"):
// the same mistake gets the same answer whether it is written in the
// document or sent in variables — 400 validation_failed, no data, nothing
// run, one error whose extensions.fields names the argument or input field
// as REST names a body's field, in REST's words for the same mistake.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/graph/gqlhttp"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/timefmt"
)

// literalProcInput is a valid CreateProcedureInput in w written as a
// literal, its fields changed by over (GraphQL literals; "" removes one).
func literalProcInput(w *apitest.Workspace, over map[string]string) string {
	fields := []string{"name", "priority", "state", "dueAt", "categoryId", "doerId", "projectId"}
	values := map[string]string{"name": `"n"`, "priority": "MEDIUM", "state": "TODO", "dueAt": `"2026-06-01"`,
		"categoryId": quote(w.CategoryID), "doerId": quote(w.MemberID), "projectId": quote(w.ProjectID)}
	for k, v := range over {
		if _, known := values[k]; !known {
			fields = append(fields, k)
		}
		values[k] = v
	}
	var parts []string
	for _, f := range fields {
		if values[f] != "" {
			parts = append(parts, f+": "+values[f])
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// wantRefusedInput asserts that r is the refusal of input values before
// anything ran: 400, no data key, one validation_failed error whose fields
// are want, in order, and whose message is REST's: the first field's.
func wantRefusedInput(t *testing.T, r *apitest.GQLResponse, want ...[2]string) {
	t.Helper()
	if r.Status != http.StatusBadRequest {
		t.Fatalf("status %d, want 400: %+v", r.Status, r.Errors)
	}
	if len(r.Data) != 0 {
		t.Fatalf("data %s in a request that did not run", r.Data)
	}
	if len(r.Errors) != 1 {
		t.Fatalf("%d errors, want one: %+v", len(r.Errors), r.Errors)
	}
	wantError(t, r, "validation_failed")
	e := r.Errors[0]
	var got [][2]string
	for _, f := range e.Extensions.Fields {
		got = append(got, [2]string{f.Field, f.Message})
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("fields %q, want %q", got, want)
	}
	msg := want[0][0] + ": " + want[0][1]
	if n := len(want) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more)", n)
	}
	if e.Message != msg {
		t.Fatalf("message %q, want %q", e.Message, msg)
	}
}

// postREST posts body to path as token and returns the status and the
// fields of its error body.
func postREST(t *testing.T, s *apitest.Server, token, path string, body map[string]any) (int, map[string]string) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, s.URL+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out struct {
		Fields []struct{ Field, Message string }
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("REST answered %d, not JSON: %s", resp.StatusCode, raw)
	}
	fields := map[string]string{}
	for _, f := range out.Fields {
		fields[f.Field] = f.Message
	}
	return resp.StatusCode, fields
}

// TestInputMistakesAnswerAlike: each mistake, written in the document and
// sent in a variable, gets the same answer; where REST has the same mistake
// (a body of POST /procedures), it names the same field in the same words.
func TestInputMistakesAnswerAlike(t *testing.T) {
	s := apitest.Start(t, dbtest.Open(t, "sqlite"))
	w := s.NewWorkspace(t, "Mistakes", "MIS")
	before := snapshot(t, s, w.AdminToken)
	create := func(over map[string]string) string {
		return `mutation { createProcedure(input: ` + literalProcInput(w, over) + `) { id } }`
	}
	createVars := func(over map[string]any) map[string]any { return obj("in", procInput(w, "n", over)) }
	const (
		createQuery  = `mutation($in: CreateProcedureInput!) { createProcedure(input: $in) { id } }`
		listQuery    = `query($first: Int) { procedures(first: $first) { totalCount } }`
		filterQuery  = `query($f: ProcedureFilter) { procedures(filter: $f) { totalCount } }`
		nodesQuery   = `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`
		positionDoc  = `mutation { updateProcedure(id: "x", input: {position: "top"}) { id } }`
		positionVars = `mutation($in: UpdateProcedureInput!) { updateProcedure(id: "x", input: $in) { id } }`
	)
	timeMsg, rangeMsg := timefmt.ErrInvalid.Error(), timefmt.ErrOutOfRange.Error()
	cases := []struct {
		name           string
		inline         string
		query          string
		vars           map[string]any
		field, message string
		// rest is the same mistake in a REST body (procInput's fields
		// changed), when REST says it in the same words.
		rest map[string]any
	}{
		{"EnumUnknownValue", create(map[string]string{"priority": "URGENT"}),
			createQuery, createVars(map[string]any{"priority": "URGENT"}),
			"priority", "must be one of LOW, MEDIUM, HIGH", map[string]any{"priority": "URGENT"}},
		{"EnumOtherCase", create(map[string]string{"state": "todo"}),
			createQuery, createVars(map[string]any{"state": "todo"}),
			"state", "must be one of TODO, IN_PROGRESS, COMPLETED, WAITING", map[string]any{"state": "todo"}},
		// GraphQL's spelling of a generation choice is not REST's (code).
		{"EnumOtherFacesSpelling", create(map[string]string{"contentType": "code"}),
			createQuery, createVars(map[string]any{"contentType": "code"}),
			"contentType", "must be one of CODE, STANDARD, API, PROCESS", nil},
		{"EnumInNestedInput", `{ procedures(orderBy: {field: NAMEX}) { totalCount } }`,
			`query($o: ProcedureOrder) { procedures(orderBy: $o) { totalCount } }`, obj("o", obj("field", "NAMEX")),
			"field", "must be one of CREATED_AT, DUE_AT, NAME, PROJECT_NAME", nil},
		{"TimeNotATime", create(map[string]string{"dueAt": `"tomorrow"`}),
			createQuery, createVars(map[string]any{"dueAt": "tomorrow"}),
			"dueAt", timeMsg, map[string]any{"dueAt": "tomorrow"}},
		{"TimeOutOfRange", create(map[string]string{"dueAt": `"1900-01-01"`}),
			createQuery, createVars(map[string]any{"dueAt": "1900-01-01"}),
			"dueAt", rangeMsg, map[string]any{"dueAt": "1900-01-01"}},
		{"TimeNotAString", create(map[string]string{"dueAt": "20260601"}),
			createQuery, createVars(map[string]any{"dueAt": 20260601}),
			"dueAt", timeMsg, nil},
		{"TimeInFilter", `{ procedures(filter: {dueFrom: "soon"}) { totalCount } }`,
			filterQuery, obj("f", obj("dueFrom", "soon")),
			"dueFrom", timeMsg, nil},
		{"TimeArgument", `mutation { deleteProcedure(id: "x", ifUpdatedAt: "yesterday") { success } }`,
			`mutation($t: Time) { deleteProcedure(id: "x", ifUpdatedAt: $t) { success } }`, obj("t", "yesterday"),
			"ifUpdatedAt", timeMsg, nil},
		{"RequiredFieldMissing", create(map[string]string{"dueAt": ""}),
			createQuery, createVars(map[string]any{"dueAt": nil}),
			"dueAt", "is required", map[string]any{"dueAt": nil}},
		{"RequiredFieldNull", create(map[string]string{"name": "null"}),
			createQuery, obj("in", func() map[string]any { in := procInput(w, "n", nil); in["name"] = nil; return in }()),
			"name", "is required", nil},
		// A variable is named by the argument it is passed to, as the
		// same value written there is.
		{"RequiredArgumentMissing", `{ procedure { id } }`,
			`query($x: ID!) { procedure(id: $x) { id } }`, nil,
			"id", "is required", nil},
		{"NumberForString", create(map[string]string{"name": "5"}),
			createQuery, createVars(map[string]any{"name": 5}),
			"name", "must be a string", map[string]any{"name": 5}},
		{"StringForBoolean", create(map[string]string{"displayVideo": `"yes"`}),
			createQuery, createVars(map[string]any{"displayVideo": "yes"}),
			"displayVideo", "must be true or false", map[string]any{"displayVideo": "yes"}},
		{"StringForInt", `{ procedures(first: "ten") { totalCount } }`,
			listQuery, obj("first", "ten"),
			"first", "must be a whole number", nil},
		{"FractionForInt", `{ procedures(first: 1.5) { totalCount } }`,
			listQuery, obj("first", 1.5),
			"first", "must be a whole number", nil},
		{"IntOutOfRange", `{ procedures(first: 3000000000) { totalCount } }`,
			listQuery, obj("first", 3000000000),
			"first", "must be a whole number from -2147483648 to 2147483647", nil},
		{"StringForFloat", positionDoc,
			positionVars, obj("in", obj("position", "top")),
			"position", "must be a number", nil},
		{"UnknownInputField", create(map[string]string{"colour": `"red"`}),
			createQuery, createVars(map[string]any{"colour": "red"}),
			"colour", "is not a field of CreateProcedureInput", nil},
		{"InputNotAnObject", `mutation { createCategory(input: "x") { id } }`,
			`mutation($in: CreateCategoryInput!) { createCategory(input: $in) { id } }`, obj("in", "x"),
			"input", "must be an object (CreateCategoryInput)", nil},
		{"ListElementWrongType", `{ nodes(ids: ["a", true]) { id } }`,
			nodesQuery, obj("ids", []any{"a", true}),
			"ids", "must be an id", nil},
		{"ListElementNull", `{ nodes(ids: ["a", null]) { id } }`,
			nodesQuery, obj("ids", []any{"a", nil}),
			"ids", "must not contain null", nil},
		{"ListOfEnumsInFilter", `{ procedures(filter: {priorities: [HIGH, SOON]}) { totalCount } }`,
			filterQuery, obj("f", obj("priorities", []any{"HIGH", "SOON"})),
			"priorities", "must be one of LOW, MEDIUM, HIGH", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := [2]string{tc.field, tc.message}
			t.Run("Inline", func(t *testing.T) {
				wantRefusedInput(t, s.GraphQL(t, w.MemberToken, tc.inline, nil), want)
			})
			t.Run("Variables", func(t *testing.T) {
				wantRefusedInput(t, s.GraphQL(t, w.MemberToken, tc.query, tc.vars), want)
			})
			if tc.rest != nil {
				t.Run("REST", func(t *testing.T) {
					status, fields := postREST(t, s, w.MemberToken, "/procedures", procInput(w, "n", tc.rest))
					if status != http.StatusBadRequest || fields[tc.field] != tc.message {
						t.Fatalf("REST: %d %q, want 400 naming %s: %q", status, fields, tc.field, tc.message)
					}
				})
			}
		})
	}
	// Inline only: a name where an argument is expected has no variable.
	t.Run("UnknownArgument", func(t *testing.T) {
		wantRefusedInput(t, s.GraphQL(t, w.MemberToken, `{ procedures(limit: 5) { totalCount } }`, nil),
			[2]string{"limit", "is not an argument of procedures"})
	})
	// A variable's default is written in the document: named as the
	// variable is, by where it is used.
	t.Run("VariableDefault", func(t *testing.T) {
		wantRefusedInput(t, s.GraphQL(t, w.MemberToken, `query($p: Priority = URGENT) { procedures(filter: {priority: $p}) { totalCount } }`, nil),
			[2]string{"priority", "must be one of LOW, MEDIUM, HIGH"})
	})
	// A variable declared with another type than where it is used is the
	// document's mistake (gqlparser's words), named where it is used.
	t.Run("VariableOfAnotherType", func(t *testing.T) {
		r := s.GraphQL(t, w.MemberToken, `query($d: String) { procedures(filter: {dueFrom: $d}) { totalCount } }`, obj("d", "2026-01-01"))
		if r.Status != http.StatusBadRequest || len(r.Data) != 0 {
			t.Fatalf("status %d, data %s", r.Status, r.Data)
		}
		wantError(t, r, "validation_failed", "dueFrom")
	})
	// GET refuses alike.
	t.Run("GET", func(t *testing.T) {
		want := [2]string{"dueFrom", timeMsg}
		inline := "/graphql?query=" + url.QueryEscape(`{ procedures(filter: {dueFrom: "soon"}) { totalCount } }`)
		wantRefusedInput(t, rawGraphQL(t, s, http.MethodGet, inline, bearer(w.MemberToken), "", nil), want)
		vars := "/graphql?query=" + url.QueryEscape(filterQuery) + "&variables=" + url.QueryEscape(`{"f": {"dueFrom": "soon"}}`)
		wantRefusedInput(t, rawGraphQL(t, s, http.MethodGet, vars, bearer(w.MemberToken), "", nil), want)
	})
	// A subscription's stream transport refuses alike, before streaming.
	t.Run("Subscription", func(t *testing.T) {
		want := [2]string{"state", "must be one of TODO, IN_PROGRESS, COMPLETED, WAITING"}
		for name, req := range map[string]map[string]any{
			"Inline": {"query": `subscription { procedureEvents(filter: {state: todo}) { kind } }`},
			"VariablesOtherCase": {"query": `subscription($f: ProcedureEventFilter) { procedureEvents(filter: $f) { kind } }`,
				"variables": obj("f", obj("state", "todo"))},
			// Refused by gqlparser's coercion too (variablesChecked).
			"VariablesUnknown": {"query": `subscription($f: ProcedureEventFilter) { procedureEvents(filter: $f) { kind } }`,
				"variables": obj("f", obj("state", "DONE"))},
		} {
			t.Run(name, func(t *testing.T) {
				body, _ := json.Marshal(req)
				a := postAccepting(t, s, w.MemberToken, "text/event-stream", body)
				var r apitest.GQLResponse
				if err := json.Unmarshal(a.body, &r); err != nil {
					t.Fatalf("status %d, not one JSON body: %s", a.status, a.body)
				}
				r.Status, r.Header = a.status, a.header
				wantRefusedInput(t, &r, want)
			})
		}
	})
	if after := snapshot(t, s, w.AdminToken); after != before {
		t.Errorf("refused requests changed the workspace:\nbefore %s\nafter  %s", before, after)
	}
}

// TestInputMistakesAreOneError: every refused value of a request is in its
// one error's fields (as REST's body lists them), in the document's order
// or the input type's, up to 20; the message is the first's.
func TestInputMistakesAreOneError(t *testing.T) {
	s := apitest.Start(t, dbtest.Open(t, "sqlite"))
	w := s.NewWorkspace(t, "Mistakes", "MIS")
	two := [][2]string{{"priority", "must be one of LOW, MEDIUM, HIGH"}, {"dueAt", timefmt.ErrInvalid.Error()}}
	t.Run("Inline", func(t *testing.T) {
		q := `mutation { createProcedure(input: ` + literalProcInput(w, map[string]string{"priority": "URGENT", "dueAt": `"soon"`}) + `) { id } }`
		wantRefusedInput(t, s.GraphQL(t, w.MemberToken, q, nil), two...)
	})
	t.Run("Variables", func(t *testing.T) {
		r := s.GraphQL(t, w.MemberToken, `mutation($in: CreateProcedureInput!) { createProcedure(input: $in) { id } }`,
			obj("in", procInput(w, "n", map[string]any{"priority": "URGENT", "dueAt": "soon"})))
		wantRefusedInput(t, r, two...)
	})
	// The first 20 of a list's 50 wrong elements.
	var twenty [][2]string
	for range 20 {
		twenty = append(twenty, [2]string{"ids", "must be an id"})
	}
	t.Run("InlineBounded", func(t *testing.T) {
		q := `{ nodes(ids: [` + strings.Repeat("true, ", 50) + `]) { id } }`
		wantRefusedInput(t, s.GraphQL(t, w.MemberToken, q, nil), twenty...)
	})
	t.Run("VariablesBounded", func(t *testing.T) {
		ids := make([]any, 50)
		for i := range ids {
			ids[i] = true
		}
		wantRefusedInput(t, s.GraphQL(t, w.MemberToken, `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, obj("ids", ids)), twenty...)
	})
}

// TestRefusedInputRunsNothing: a mutation of two root fields whose second
// holds a refused value writes nothing, the first field included, written
// in the document or sent in variables, whatever the Accept header (GraphQL
// over HTTP: a request error is answered with its status, no data). A
// refused request leaves its Idempotency-Key free.
func TestRefusedInputRunsNothing(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		before := snapshot(t, s, w.AdminToken)
		inline := `mutation { a: createProcedure(input: ` + literalProcInput(w, nil) + `) { id }
			b: createProcedure(input: ` + literalProcInput(w, map[string]string{"dueAt": `"tomorrow"`}) + `) { id } }`
		byVariables, _ := json.Marshal(map[string]any{
			"query": `mutation($a: CreateProcedureInput!, $b: CreateProcedureInput!) {
				a: createProcedure(input: $a) { id } b: createProcedure(input: $b) { id } }`,
			"variables": obj("a", procInput(w, "a", nil), "b", procInput(w, "b", map[string]any{"dueAt": "tomorrow"})),
		})
		byLiteral, _ := json.Marshal(map[string]any{"query": inline})
		for _, accept := range []string{"", "application/json", "application/graphql-response+json", "text/event-stream", urqlAccept} {
			for name, body := range map[string][]byte{"Inline": byLiteral, "Variables": byVariables} {
				t.Run(name+"/"+accept, func(t *testing.T) {
					a := postAccepting(t, s, w.MemberToken, accept, body)
					var r apitest.GQLResponse
					if err := json.Unmarshal(a.body, &r); err != nil {
						t.Fatalf("status %d, not one JSON body: %s", a.status, a.body)
					}
					r.Status, r.Header = a.status, a.header
					wantRefusedInput(t, &r, [2]string{"dueAt", timefmt.ErrInvalid.Error()})
				})
			}
		}
		if after := snapshot(t, s, w.AdminToken); after != before {
			t.Fatalf("a refused mutation wrote:\nbefore %s\nafter  %s", before, after)
		}

		t.Run("IdempotencyKeyLeftFree", func(t *testing.T) {
			send := func(body []byte) int {
				req, _ := http.NewRequest(http.MethodPost, s.URL+"/graphql", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+w.MemberToken)
				req.Header.Set("Idempotency-Key", "refused-input-1")
				resp, err := s.HTTP.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp.StatusCode
			}
			if st := send(byVariables); st != http.StatusBadRequest {
				t.Fatalf("refused mutation: status %d", st)
			}
			fixed, _ := json.Marshal(map[string]any{"query": createProcMutation, "variables": obj("in", procInput(w, "kept", nil))})
			if st := send(fixed); st != http.StatusOK {
				t.Fatalf("the key's next request: status %d, want 200 (the refusal must leave the key free)", st)
			}
		})
	})
}

// The rule checking literals (inputLiterals, graph/gqlhttp) does not check
// @oneOf inputs, which gqlparser's rule it replaces did: none may exist
// until it does.
func TestNoOneOfInputs(t *testing.T) {
	for name, def := range gqlhttp.PublishedSchema().Types {
		if def.Directives.ForName("oneOf") != nil {
			t.Errorf("input %s is @oneOf: check it in graph/gqlhttp's inputLiterals and checkVariables first", name)
		}
	}
}
