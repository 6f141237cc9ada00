package bench

import (
	"encoding/json"
	"testing"
)

// TestScanEvent: the tool's fast read of an event agrees with decoding it
// as JSON, and leaves every other shape to the decoder.
func TestScanEvent(t *testing.T) {
	for _, tc := range []struct {
		payload string
		ok      bool
	}{
		{`{"data":{"procedureEvents":{"kind":"UPDATED","procedureId":"01a2","workspaceVersion":12,"procedure":{"name":"live 3"}}}}`, true},
		{`{"data":{"procedureEvents":{"kind":"UPDATED","procedureId":"01a2","workspaceVersion":12,"procedure":{"name":"a \"quoted\" name"}}}}`, false},
		{`{"data":{"procedureEvents":{"kind":"DELETED","procedureId":"01a2","workspaceVersion":12,"procedure":null}}}`, false},
		{`{"data":{"procedureEvents":{"kind":"REFETCH","procedureId":null,"workspaceVersion":12,"procedure":null}}}`, false},
		{`{"errors":[{"message":"x","extensions":{"code":"unavailable"}}],"data":null}`, false},
		{`{"data":{"procedureEvents":{"kind":"UPDATED","procedureId":"01a2","workspaceVersion":12,"procedure":{"name":"x"}}}}extra`, false},
	} {
		ev, ok := scanEvent([]byte(tc.payload))
		if ok != tc.ok {
			t.Fatalf("%s: ok %v", tc.payload, ok)
		}
		if !ok {
			continue
		}
		var want struct {
			Data struct{ ProcedureEvents *liveEvent }
		}
		if err := json.Unmarshal([]byte(tc.payload), &want); err != nil {
			t.Fatal(err)
		}
		w := want.Data.ProcedureEvents
		if ev.Kind != w.Kind || *ev.ProcedureID != *w.ProcedureID || ev.Procedure.Name != w.Procedure.Name {
			t.Fatalf("%s: scanned %+v, decoded %+v", tc.payload, ev, w)
		}
	}
}

// TestNextPayload: the tool's fast read of a WebSocket message agrees with
// decoding it as JSON, and leaves every other shape to the decoder.
func TestNextPayload(t *testing.T) {
	event := `{"data":{"procedureEvents":{"kind":"UPDATED","procedureId":"01a2","workspaceVersion":12,"procedure":{"name":"live 3"}}}}`
	for _, tc := range []struct {
		msg string
		ok  bool
	}{
		{`{"id":"1","type":"next","payload":` + event + `}`, true},
		{`{"id":"1","type":"next","payload":{"errors":[{"message":"x"}]}}`, true},
		{`{"id":"2","type":"next","payload":` + event + `}`, false},
		{`{"id":"1","type":"error","payload":[{"message":"x"}]}`, false},
		{`{"id":"1","type":"complete"}`, false},
		{`{"type":"ping"}`, false},
		{`{"id":"1","type":"next","payload":` + event + "}\n", false},
	} {
		payload, ok := nextPayload([]byte(tc.msg))
		if ok != tc.ok {
			t.Fatalf("%s: ok %v", tc.msg, ok)
		}
		if !ok {
			continue
		}
		var want wsMessage
		if err := json.Unmarshal([]byte(tc.msg), &want); err != nil {
			t.Fatal(err)
		}
		if want.ID != "1" || want.Type != "next" || string(payload) != string(want.Payload) {
			t.Fatalf("%s: read %s, decoded %+v", tc.msg, payload, want)
		}
	}
}
