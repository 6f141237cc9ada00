package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/graph/live"
	"github.com/procsvc/procsvc/graph/model"
)

// eventSelection says whether oc's subscription selects its events'
// procedure, and which of the procedure's edges, through fragments and
// directives as the executor collects them: the live runtime reads only
// that for each event.
func eventSelection(oc *graphql.OperationContext) live.EventSelection {
	var sel live.EventSelection
	for _, root := range graphql.CollectFields(oc, oc.Operation.SelectionSet, nil) {
		for _, f := range graphql.CollectFields(oc, root.Selections, nil) {
			if f.Name == "procedure" {
				sel.Procedure = true
				sel.Edges = union(sel.Edges, selectedEdges(oc, graphql.CollectFields(oc, f.Selections, nil)))
			}
		}
	}
	return sel
}

// eventProcedure is ProcedureEvent.procedure: the procedure read for the
// event, its edges seeded into the loaders of this rendering.
func eventProcedure(ctx context.Context, ev *model.ProcedureEvent) (*ent.Procedure, error) {
	if ev.Procedure == nil {
		return nil, nil
	}
	if ev.Edges != nil {
		ev.Edges.Seed(ctx)
		return ev.Procedure, nil
	}
	return primed(ctx)(ev.Procedure, nil)
}
