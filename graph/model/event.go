package model

import (
	"context"

	"github.com/procsvc/procsvc/ent"
)

// ProcedureEvent is one delivered live-update event (graph/subscription.graphqls).
// It is bound by hand, not generated, to carry Edges: the procedure's edges
// read once for the event and shared by every subscriber that renders it.
type ProcedureEvent struct {
	Kind ProcedureEventKind `json:"kind"`
	// Null for REFETCH.
	ProcedureID *string `json:"procedureId,omitempty"`
	// The procedure as read on delivery; null for DELETED and REFETCH, and
	// when it is gone by then.
	Procedure *ent.Procedure `json:"procedure,omitempty"`
	// The workspace's version after the change.
	WorkspaceVersion int `json:"workspaceVersion"`
	// Edges are Procedure's category, doer, project and comments (with their
	// authors), read with it; rendering seeds its loaders with them.
	Edges EventEdges `json:"-"`
}

// EventEdges are the edges read once with an event's procedure (a
// *loader.Snapshot): Seed puts them into the dataloaders of the context
// rendering the event. An interface, so that the GraphQL model does not
// depend on how the dataloaders hold them.
type EventEdges interface {
	Seed(ctx context.Context)
}
