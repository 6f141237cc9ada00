package bench

import "bytes"

// liveEvent is what the tool reads of an event.
type liveEvent struct {
	Kind        string
	ProcedureID *string
	Procedure   *struct{ Name string }
}

// scanEvent reads an event of liveQuery's exact shape without decoding it
// in full, as the server writes it: {"data":{"procedureEvents":{"kind":…,
// "procedureId":…,"workspaceVersion":…,"procedure":{"name":…}}}}. Anything
// else (errors, nulls, escapes, another order) is not ok, and is decoded
// as JSON. The tool shares the machine it measures: reading 50 000 events a
// second with encoding/json cost it a core.
func scanEvent(payload []byte) (*liveEvent, bool) {
	rest, ok := bytes.CutPrefix(payload, []byte(`{"data":{"procedureEvents":{"kind":"`))
	if !ok {
		return nil, false
	}
	kind, rest, ok := cutString(rest)
	if !ok {
		return nil, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"procedureId":"`)); !ok {
		return nil, false
	}
	id, rest, ok := cutString(rest)
	if !ok {
		return nil, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"workspaceVersion":`)); !ok {
		return nil, false
	}
	i := bytes.IndexByte(rest, ',')
	if i < 0 {
		return nil, false
	}
	if rest, ok = bytes.CutPrefix(rest[i:], []byte(`,"procedure":{"name":"`)); !ok {
		return nil, false
	}
	name, rest, ok := cutString(rest)
	if !ok || string(rest) != "}}}}" {
		return nil, false
	}
	ids := string(id)
	return &liveEvent{Kind: string(kind), ProcedureID: &ids, Procedure: &struct{ Name string }{string(name)}}, true
}

// cutString returns the JSON string body before the next quote, and what
// follows the quote; not ok when it has an escape.
func cutString(b []byte) (body, rest []byte, ok bool) {
	i := bytes.IndexByte(b, '"')
	if i < 0 || bytes.IndexByte(b[:i], '\\') >= 0 {
		return nil, nil, false
	}
	return b[:i], b[i+1:], true
}

// nextOpen is how the server begins a next message of the tool's
// subscription (id "1") on graphql-transport-ws.
var nextOpen = []byte(`{"id":"1","type":"next","payload":`)

// nextPayload returns the payload of msg if it is a next message of the
// tool's subscription as the server writes it ({"id":"1","type":"next",
// "payload":…}); anything else is not ok, and is decoded as JSON. As
// scanEvent: decoding each message's envelope with encoding/json (a scan
// of the whole event, and a copy) made the tool cost more reading a
// WebSocket than reading the same events from a Server-Sent Events
// stream, on the machine it measures.
func nextPayload(msg []byte) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(msg, nextOpen)
	if !ok || len(rest) < 2 || rest[len(rest)-1] != '}' {
		return nil, false
	}
	return rest[:len(rest)-1], true
}
