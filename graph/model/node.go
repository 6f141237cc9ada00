// Package model holds GraphQL types that do not map to ent entities:
// connections, inputs and payloads (generated), and the Node interface.
package model

// Node is implemented by every ent entity exposed as a GraphQL Node; the
// generated executor switches on the concrete type.
type Node interface{}
