package graph

import (
	"context"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/graph/model"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/respcache"
)

// maxNodes bounds nodes(ids:).
const maxNodes = 100

// node resolves a global id by the kind tagged in it (see internal/ids), so
// exactly one table is read. Ids that name nothing visible resolve to null,
// as Relay expects; other failures are errors.
func (r *Resolver) node(ctx context.Context, id string) (model.Node, error) {
	uid, err := ids.Parse(id)
	if err != nil {
		return nil, nil
	}
	var (
		n    model.Node
		nerr error
	)
	switch ids.KindOf(uid) {
	case ids.KindProcedure:
		var p *ent.Procedure
		if p, nerr = r.Service.Procedure(ctx, id); nerr == nil {
			n, nerr = primed(ctx)(p, nil)
		}
	case ids.KindProject:
		n, nerr = r.Service.Project(ctx, id)
	case ids.KindCategory:
		n, nerr = r.Service.Category(ctx, id)
	case ids.KindMember:
		n, nerr = r.Service.Member(ctx, id)
	case ids.KindComment:
		n, nerr = r.Service.Comment(ctx, id)
	case ids.KindEvent:
		// An event is pruned without a write (see HistoryPage).
		respcache.MarkUncacheable(ctx)
		var e *ent.Event
		if e, nerr = r.Service.Event(ctx, id); nerr == nil {
			n, nerr = model.EventOf(e)
		}
	case ids.KindWorkspace:
		var w *ent.Workspace
		if w, nerr = r.Service.Workspace(ctx); nerr == nil && w.ID == uid {
			n = w
		}
	case ids.KindToken:
		var ts []*ent.Token
		if ts, nerr = r.Service.Tokens(ctx); nerr == nil {
			for _, t := range ts {
				if t.ID == uid {
					n = t
				}
			}
		}
	default:
		return nil, nil
	}
	if nerr != nil {
		// Not found and not visible (a token to a non-admin) both read as null.
		if c := apperr.CodeOf(nerr); c == apperr.NotFound || c == apperr.Forbidden {
			return nil, nil
		}
		return nil, nerr
	}
	announceObject(ctx, n)
	return n, nil
}

// nodes resolves each id of idList (checkNodeIDs).
func (r *Resolver) nodes(ctx context.Context, idList []string) ([]model.Node, error) {
	if err := checkNodeIDs(idList); err != nil {
		return nil, err
	}
	out := make([]model.Node, len(idList))
	for i, id := range idList {
		n, err := r.node(ctx, id)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

// checkNodeIDs refuses the ids of nodes(ids:) beyond maxNodes, and an id
// given twice (in any spelling of the same UUID): it would render the same
// record again, and again, for nothing (docs/api.md prices nodes by its
// ids). It runs before the operation executes (pageSizeLimit) and in the
// resolver. Errors: validation_failed naming ids.
func checkNodeIDs(idList []string) error {
	if len(idList) > maxNodes {
		return apperr.Invalid("ids", "at most %d ids per call", maxNodes)
	}
	seen := make(map[string]int, len(idList))
	for i, id := range idList {
		key := id
		if uid, err := ids.Parse(id); err == nil {
			key = uid.String()
		}
		if j, ok := seen[key]; ok {
			return apperr.Invalid("ids", "ids %d and %d name the same record (%s): ask for each id once", j+1, i+1, id)
		}
		seen[key] = i
	}
	return nil
}
