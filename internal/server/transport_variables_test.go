package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/procsvc/procsvc/graph/live"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// TestVariablesOnEveryTransport: a request's variables mean the same
// whichever transport carries them (POST, GET, a query answered as a
// Server-Sent Event, a Server-Sent Events subscription, a WebSocket), for
// every type a variable can have, however its number is spelled. The
// transports once decoded apart: a subscription over Server-Sent Events read
// numbers as float64 and resuming with afterVersion as a variable answered
// 500 ("float64 is not an int"). Every outcome here is the same on every
// transport, is the one in the table, and is never internal.
func TestVariablesOnEveryTransport(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			db, dsn := openDB(t, dialect)
			s := startLive(t, db, liveConfig{dsn: dsn})
			ws := s.NewWorkspace(t, "Matrix", "MAT")
			first := createProcedure(t, s, ws, ws.AdminToken, "first", "")
			createProcedure(t, s, ws, ws.AdminToken, "second", "")
			version := workspaceVersion(t, db, ws.ID)

			const list = `query($n: Int, $f: ProcedureFilter) { procedures(first: $n, filter: $f, orderBy: {field: NAME, direction: ASC}) { totalCount edges { node { name } } } }`
			const node = `query($id: ID!) { node(id: $id) { id } }`
			const move = `mutation($id: ID!, $state: ProcedureState) { moveProcedure(id: $id, state: $state) { state } }`
			const resume = `subscription($after: Int, $f: ProcedureEventFilter) { procedureEvents(afterVersion: $after, filter: $f) { kind procedure { name } } }`
			cases := []struct {
				name, query, variables string
				// want is the outcome: the data (as compact JSON), or
				// "error:" and the first error's code.
				want string
			}{
				{"Int", list, `{"n": 1}`, `{"procedures":{"totalCount":2,"edges":[{"node":{"name":"first"}}]}}`},
				// JSON's 1e0 is not an integer's spelling: GraphQL's Int
				// takes integers only.
				{"IntAsExponent", list, `{"n": 1e0}`, "error:validation_failed"},
				{"IntWithFraction", list, `{"n": 1.5}`, "error:validation_failed"},
				{"IntAsString", list, `{"n": "1"}`, "error:validation_failed"},
				{"IntBeyond32Bits", list, `{"n": 9007199254740993}`, "error:validation_failed"},
				{"IntBeyondFloat", list, `{"n": 1e400}`, "error:bad_request"},
				{"Null", list, `{"n": null}`, `{"procedures":{"totalCount":2,"edges":[{"node":{"name":"first"}},{"node":{"name":"second"}}]}}`},
				{"EnumList", list, `{"f": {"states": ["TODO"]}}`, `{"procedures":{"totalCount":2,"edges":[{"node":{"name":"first"}},{"node":{"name":"second"}}]}}`},
				{"EnumUnknown", list, `{"f": {"states": ["NOPE"]}}`, "error:validation_failed"},
				{"EnumAsNumber", list, `{"f": {"state": 1}}`, "error:validation_failed"},
				{"InputObject", list, `{"f": {"search": "sec", "states": ["TODO", "COMPLETED"]}}`, `{"procedures":{"totalCount":1,"edges":[{"node":{"name":"second"}}]}}`},
				{"InputObjectUnknownField", list, `{"f": {"nope": 1}}`, "error:validation_failed"},
				{"IDList", list, `{"f": {"projectIds": ["` + ws.ProjectID + `"]}}`, `{"procedures":{"totalCount":2,"edges":[{"node":{"name":"first"}},{"node":{"name":"second"}}]}}`},
				{"IDAsNumber", node, `{"id": 12}`, `{"node":null}`},
				{"IDAsFloat", node, `{"id": 1.5}`, "error:validation_failed"},
				{"ID", node, `{"id": "` + first + `"}`, `{"node":{"id":"` + first + `"}}`},
				{"EnumOfAMutation", move, `{"id": "` + first + `", "state": "TODO"}`, `{"moveProcedure":{"state":"TODO"}}`},
				{"ResumeInt", resume, fmt.Sprintf(`{"after": %d}`, version-1), `{"procedureEvents":{"kind":"CREATED","procedure":{"name":"second"}}}`},
				{"ResumeIntAsExponent", resume, fmt.Sprintf(`{"after": %de0}`, version-1), "error:validation_failed"},
				{"ResumeWithFilter", resume, fmt.Sprintf(`{"after": %d, "f": {"state": "TODO", "projectId": "%s"}}`, version-1, ws.ProjectID), `{"procedureEvents":{"kind":"CREATED","procedure":{"name":"second"}}}`},
				{"ResumeFraction", resume, `{"after": 1.5}`, "error:validation_failed"},
				{"ResumeString", resume, `{"after": "1"}`, "error:validation_failed"},
				{"ResumeFuture", resume, `{"after": 9007199254740993}`, "error:validation_failed"},
				{"ResumeBeyondInt64", resume, `{"after": 92233720368547758070}`, "error:validation_failed"},
				{"ResumeBeyondFloat", resume, `{"after": 1e400}`, "error:bad_request"},
				{"ResumeNegative", resume, `{"after": -1}`, "error:validation_failed"},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					// In this order: a query answered first as an event
					// stream is then served to POST and GET from the response
					// cache, which must keep the handler's JSON type (it once
					// kept the stream's, text/event-stream, for a JSON body).
					type transport struct {
						name string
						run  func() string
					}
					transports := []transport{{"EventStream", func() string {
						return postOutcome(t, s, ws.AdminToken, c.query, c.variables, "text/event-stream")
					}}}
					if !strings.HasPrefix(c.query, "subscription") {
						// A subscription needs a stream.
						transports = append(transports, transport{"POST", func() string {
							return postOutcome(t, s, ws.AdminToken, c.query, c.variables, "application/json")
						}})
					}
					if strings.HasPrefix(c.query, "query") {
						transports = append(transports, transport{"GET", func() string { return getOutcome(t, s, ws.AdminToken, c.query, c.variables) }})
					}
					transports = append(transports, transport{"WebSocket", func() string { return wsOutcome(t, s, ws.AdminToken, c.query, c.variables) }})
					for _, tr := range transports {
						if got := tr.run(); got != c.want {
							t.Errorf("%s: %s, want %s", tr.name, got, c.want)
						}
					}
				})
			}
		})
	}
}

// variablesOutcome is a GraphQL response as TestVariablesOnEveryTransport compares
// it: its data, or "error:" and its first error's code.
func variablesOutcome(t *testing.T, body []byte) string {
	t.Helper()
	var resp struct {
		Data   json.RawMessage
		Errors []struct {
			Extensions struct{ Code string }
		}
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatalf("not a GraphQL response: %s", body)
	}
	if len(resp.Errors) > 0 {
		return "error:" + resp.Errors[0].Extensions.Code
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, resp.Data); err != nil {
		t.Fatalf("data %s: %v", resp.Data, err)
	}
	return compact.String()
}

// postOutcome posts the request with Accept: accept, and returns the outcome
// of its answer (for an event stream: of its first event, or of the
// refusal's body).
func postOutcome(t *testing.T, s *liveServer, token, query, variables, accept string) string {
	t.Helper()
	body := fmt.Sprintf(`{"query": %q, "variables": %s}`, query, variables)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/graphql", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 500 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s answered %d: %s", accept, resp.StatusCode, b)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		return variablesOutcome(t, b)
	}
	// The first event's data: read line by line, so that a subscription's
	// stream need not end.
	var data, line, all strings.Builder
	buf := make([]byte, 1)
	for {
		if _, err := resp.Body.Read(buf); err != nil {
			t.Fatalf("the stream ended before an event (%v): %q %v", err, all.String(), resp.Header)
		}
		all.WriteByte(buf[0])
		if buf[0] != '\n' {
			line.WriteByte(buf[0])
			continue
		}
		l := line.String()
		line.Reset()
		switch {
		case strings.HasPrefix(l, "data: "):
			data.WriteString(strings.TrimPrefix(l, "data: "))
		case l == "" && data.Len() > 0:
			return variablesOutcome(t, []byte(data.String()))
		}
	}
}

// getOutcome sends the query with GET.
func getOutcome(t *testing.T, s *liveServer, token, query, variables string) string {
	t.Helper()
	q := url.Values{"query": {query}, "variables": {variables}}
	req, err := http.NewRequest(http.MethodGet, s.URL+"/graphql?"+q.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 500 {
		t.Fatalf("GET answered %d: %s", resp.StatusCode, b)
	}
	return variablesOutcome(t, b)
}

// wsOutcome runs the operation over a WebSocket of its own and returns the
// outcome of its first answer.
func wsOutcome(t *testing.T, s *liveServer, token, query, variables string) string {
	t.Helper()
	c := openWS(t, s, token)
	defer c.c.CloseNow()
	c.send(wsMsg{ID: "1", Type: "subscribe", Payload: json.RawMessage(fmt.Sprintf(`{"query": %q, "variables": %s}`, query, variables))})
	var m wsMsg
	select {
	case got, ok := <-c.msgs:
		if !ok {
			// The protocol's answer to a message it cannot take: 4400,
			// its bad request.
			if code := websocket.CloseStatus(c.closeErr); code == live.CloseBadMessage {
				return "error:bad_request"
			}
			t.Fatalf("socket closed: %v", c.closeErr)
		}
		m = got
	case <-time.After(waitFor):
		t.Fatal("no answer")
	}
	switch m.Type {
	case "next":
		return variablesOutcome(t, m.Payload)
	case "error":
		var errs []struct {
			Extensions struct{ Code string }
		}
		if err := json.Unmarshal(m.Payload, &errs); err != nil || len(errs) == 0 {
			t.Fatalf("error message %s", m.Payload)
		}
		return "error:" + errs[0].Extensions.Code
	}
	t.Fatalf("answered %s: %s", m.Type, m.Payload)
	return ""
}
