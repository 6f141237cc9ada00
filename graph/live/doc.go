// Package live is the runtime of live updates, the procedureEvents
// subscription: Live (live.go) admits connections and counts them per
// token, groups the subscribers of one operation so that each event is
// read and rendered once per group (group.go, flights.go), and hands each
// subscriber its events (stream.go) over a WebSocket (websocket.go,
// websocket_operations.go, both graphql-ws subprotocols) or Server-Sent
// Events (sse.go, framing.go). The HTTP face (graph/gqlhttp) adds its
// transports to the executor (transports.go); the subscription resolver
// (graph) hands it its work (ProcedureEvents). It reads through the core
// and the dataloaders, never through the resolvers.
package live
