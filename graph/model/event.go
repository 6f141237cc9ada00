package model

import (
	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/internal/loader"
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
	Edges *loader.Snapshot `json:"-"`
}
