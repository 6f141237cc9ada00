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
	"strconv"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/procsvc/procsvc/graph/gqlrequest"
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

// resumeVariable is the variable oc's afterVersion takes when the document
// uses it nowhere else, "" otherwise (a literal, no argument, or a variable
// that also feeds another argument). The group's key leaves that variable
// out, so that subscribers resuming from different versions share their
// group's renderings, and each reads its version from its own variables
// (group.resumeVersion). Uses are counted in the parsed document, never in
// its text.
func resumeVariable(oc *graphql.OperationContext) string {
	arg := resumeField(oc)
	if arg == nil || arg.Value.Kind != ast.Variable {
		return ""
	}
	if variableUses(oc, arg.Value.Raw) != 1 { // afterVersion's own use only
		return ""
	}
	return arg.Value.Raw
}

// variableUses counts the uses of the variable name in oc's document: in
// arguments, directives and the values nested in them.
func variableUses(oc *graphql.OperationContext, name string) int {
	n := 0
	gqlrequest.WalkDocument(oc.Doc, gqlrequest.Visitor{Value: func(v *ast.Value) {
		if v.Kind == ast.Variable && v.Raw == name {
			n++
		}
	}})
	return n
}

// groupVariables are oc's variables as its group's key counts them:
// without resumeVar, the variable resumeVariable found ("" for none).
func groupVariables(oc *graphql.OperationContext, resumeVar string) map[string]any {
	if resumeVar == "" {
		return oc.Variables
	}
	vars := maps.Clone(oc.Variables)
	delete(vars, resumeVar)
	return vars
}

// resumeVersion returns the version a subscriber of g running oc resumes
// after; ok is false when it does not resume. It is the afterVersion the
// procedureEvents resolver was passed when g formed (g.after): the same for
// every subscriber, whose documents and variables are the group's, except
// the variable the key leaves out (g.resumeVar), which each subscriber
// gives its own value. Errors: validation_failed (a negative version).
func (g *group) resumeVersion(oc *graphql.OperationContext) (version int64, ok bool, err error) {
	var raw any
	if g.after != nil {
		raw = int64(*g.after)
	}
	if g.resumeVar != "" {
		raw = oc.Variables[g.resumeVar]
	}
	switch n := raw.(type) {
	case nil:
		return 0, false, nil
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
		s.pending = []events.Notification{{Change: core.Change{WorkspaceID: s.v.WorkspaceID}, Refetch: true}}
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
			s.pending = append(s.pending, events.Notification{Change: c, Version: row.Version})
		}
	}
	return nil
}

// replayed renders the next event s replays; nil when none is left to
// send (the filter may leave some out), or when ctx ended.
//
// A replay is work done for one subscriber, and priced so: each event is
// rendered once for every subscriber of the group replaying it from the
// same read of the log (group.replay), costs the subscriber's token
// replayCost of its bytes, waited for at the token's rate (a resume of a
// thousand events of 2 MB cannot take a core), and is held, counted against
// the workspace's share of the live memory, until it is written. A
// subscriber holds one replayed event at a time: one that stops reading
// holds one event until its write deadline cuts it.
func (s *stream) replayed(ctx context.Context) (*rendered, error) {
	for len(s.pending) > 0 {
		e := s.pending[0]
		s.pending = s.pending[1:]
		var shared *rendered
		var err error
		if e.Refetch {
			shared, err = s.g.render(e, s.v.WorkspaceVersion, 0)
		} else {
			shared, err = s.g.replay(ctx, e, s.floor)
		}
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, nil
		case err != nil:
			return nil, err
		case shared.payload == nil:
			continue
		}
		if err := s.live.opts.Limiter.Pace(ctx, s.v, replayCost(shared.size())); err != nil {
			return nil, nil // the subscriber left while it waited
		}
		if err := s.checkAccess(ctx, shared); err != nil {
			return nil, err
		}
		// Its own holder: the rendering may be shared with other resumers,
		// but each holds it until it has written it.
		r := &rendered{frame: shared.frame, payload: shared.payload}
		if err := s.live.hold(s.v.WorkspaceID, r); err != nil {
			return nil, err
		}
		return r, nil
	}
	return nil, nil
}

// ReplayBytesPerToken is how many bytes of replayed events cost one token
// of the subscriber's rate limit, beyond the one each event costs
// (docs/api.md, "Resuming a subscription"): as much as a page of a list.
const ReplayBytesPerToken = 64 << 10

// replayCost is what replaying an event of n bytes costs.
func replayCost(n int64) int { return 1 + int(n/ReplayBytesPerToken) }
