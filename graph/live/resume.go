package live

// Resuming a subscription (docs/api.md, "Resuming a subscription"): a
// subscriber that passes afterVersion is first replayed, from the change
// log, every event after it, then continues with its group's live events.
//
// No gap and no duplicate at the seam: the stream listens to its group
// before it reads the log, so an event that commits after the read began is
// heard live, and one that committed before is in the log (it is appended
// in its write's transaction); live events at or below the last version the
// log gave (floor) are the log's, already sent, and are skipped.

import (
	"context"
	"encoding/json"
	"maps"
	"regexp"
	"strconv"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/events"
	"github.com/procsvc/procsvc/internal/viewer"
)

// DefaultReplayLimit is Options.ReplayLimit's default.
const DefaultReplayLimit = 1000

// resumeArgument is procedureEvents' argument naming the version to
// resume after.
const resumeArgument = "afterVersion"

// resumeField returns the operation's root field's afterVersion argument,
// nil when it has none.
func resumeField(oc *graphql.OperationContext) *ast.Argument {
	if oc == nil || oc.Operation == nil {
		return nil
	}
	fields := graphql.CollectFields(oc, oc.Operation.SelectionSet, nil)
	if len(fields) != 1 {
		return nil
	}
	return fields[0].Arguments.ForName(resumeArgument)
}

// resumeVersion returns the version oc resumes after; ok is false when it
// does not resume. Errors: validation_failed (a negative version).
func resumeVersion(oc *graphql.OperationContext) (version int64, ok bool, err error) {
	arg := resumeField(oc)
	if arg == nil {
		return 0, false, nil
	}
	raw, err := arg.Value.Value(oc.Variables)
	if err != nil || raw == nil {
		return 0, false, err
	}
	switch n := raw.(type) {
	case int64:
		version = n
	case int:
		version = int64(n)
	case float64:
		version = int64(n)
	case json.Number:
		if version, err = strconv.ParseInt(string(n), 10, 64); err != nil {
			return 0, false, apperr.Invalid(resumeArgument, "must be a whole number")
		}
	default:
		return 0, false, apperr.Invalid(resumeArgument, "must be a whole number")
	}
	if version < 0 {
		return 0, false, apperr.Invalid(resumeArgument, "must be 0 or more")
	}
	return version, true, nil
}

// groupVariables are oc's variables as its group's key counts them:
// without the variable afterVersion takes, when the document uses it
// nowhere else, so that subscribers resuming from different versions share
// their group's renderings.
func groupVariables(oc *graphql.OperationContext) map[string]any {
	arg := resumeField(oc)
	if arg == nil || arg.Value.Kind != ast.Variable {
		return oc.Variables
	}
	uses := regexp.MustCompile(`\$`+regexp.QuoteMeta(arg.Value.Raw)+`\b`).FindAllStringIndex(oc.RawQuery, 3)
	if len(uses) != 2 { // its definition and afterVersion's use
		return oc.Variables
	}
	vars := maps.Clone(oc.Variables)
	delete(vars, arg.Value.Raw)
	return vars
}

// replayFrom reads what s replays: the events after version, or one
// REFETCH when the log cannot replay them (pruned, or more than
// ReplayLimit behind). The log is read on the primary (a context of its
// own, never a standby's pinned read): a standby behind the commits already
// heard live would leave a gap.
func (s *stream) replayFrom(ctx context.Context, version int64) error {
	rctx, cancel := context.WithCancel(viewer.NewContext(context.Background(), s.v))
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	if t := s.live.opts.RequestTimeout; t > 0 {
		rctx, cancel = context.WithTimeout(rctx, t)
		defer cancel()
	}
	limit := s.live.opts.ReplayLimit
	logged, pruned, err := s.g.svc.EventsAfter(rctx, version, limit+1)
	if err != nil {
		return err
	}
	if pruned || len(logged) > limit {
		s.pending = []events.Event{{Change: core.Change{WorkspaceID: s.v.WorkspaceID}, Refetch: true}}
		return nil
	}
	s.floor = version
	for _, row := range logged {
		c, ok, err := core.ReplayedChange(row)
		if err != nil {
			return err
		}
		s.floor = row.Version
		if ok {
			s.pending = append(s.pending, events.Event{Change: c, Version: row.Version})
		}
	}
	return nil
}

// replayed renders the next event s replays; nil when none is left to
// send (the filter may leave some out).
func (s *stream) replayed(ctx context.Context) (*rendered, error) {
	for len(s.pending) > 0 {
		e := s.pending[0]
		s.pending = s.pending[1:]
		version := e.Version
		if e.Refetch {
			version = s.v.WorkspaceVersion
		}
		r, err := s.g.render(e, version)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, nil
		case err != nil:
			return nil, err
		case r.payload != nil:
			return r, nil
		}
	}
	return nil, nil
}
