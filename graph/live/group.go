package live

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/google/uuid"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/graph/model"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/events"
	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/loader"
	"github.com/procsvc/procsvc/internal/middleware"
	"github.com/procsvc/procsvc/internal/viewer"
)

// A group is the subscribers of one workspace that run the same operation
// (document, operation name and variables) under the same role: whatever
// they are sent, they are sent the same bytes. Each event is therefore read
// and rendered once per group, and every subscriber sends what it
// rendered; rendering per subscriber made 1 000 subscribers cost 1 000
// renderings a write.
//
// A group runs its operation in gqlgen's executor once, when it forms: the
// procedureEvents resolver hands the executor the group's feed, and each
// rendering puts one event on the feed and takes one response. The group
// listens to its workspace's events on one goroutine of its own (fan), which
// renders each event its subscribers are sent before handing it to them:
// a subscriber wakes once per event and finds it rendered. The goroutine
// ends with the group's last subscriber, who waits for it.
type group struct {
	key groupKey
	// id names the group in the cache of renderings, which must not keep
	// a group (and its operation) alive once its subscribers left.
	id   uint64
	live *Live
	// ready is closed once the group has formed; err then says whether it
	// could (the operation's errors, presented, as a refusal).
	ready chan struct{}
	err   gqlerror.List
	// resumeVar is afterVersion's variable the key leaves out (resumeVariable).
	resumeVar string

	// Set while the group forms, read-only after ready.
	svc    *core.Service
	filter eventFilter
	// after is the afterVersion the resolver was passed (resumeVersion).
	after *int
	// reads says what an event's rendering reads: nothing when the
	// operation does not select the procedure (and no filter needs it);
	// edges which of its edges.
	reads   bool
	edges   loader.Edges
	ctx     context.Context
	cancel  context.CancelFunc
	started bool

	// mu serialises renderings: the executor's response handler is used by
	// one goroutine at a time.
	mu        sync.Mutex
	feed      chan *model.ProcedureEvent
	responses graphql.ResponseHandler
	// opCtx is ctx with the operation, as the executor's response
	// handlers expect it.
	opCtx context.Context

	members int // guarded by live.mu

	// sub is the group's one subscription to its workspace's events; done
	// is closed when the goroutine fanning them out ended.
	sub  *events.Subscription
	done chan struct{}
	// streams are the subscribers the group hands events to, once they
	// listen (stream.open); guarded by fanMu.
	fanMu   sync.Mutex
	streams map[*stream]struct{}
}

// groupKey names a group: the workspace, the role, and a digest of the
// operation (its document, operation name and variables as coerced).
type groupKey struct {
	workspace uuid.UUID
	role      viewer.Role
	operation [sha256.Size]byte
}

func newGroupKey(v *viewer.Viewer, oc *graphql.OperationContext, resumeVar string) (groupKey, error) {
	// json.Marshal writes a map's keys in order: equal variables, equal
	// bytes.
	vars, err := json.Marshal(groupVariables(oc, resumeVar))
	if err != nil {
		return groupKey{}, err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%d:%s%d:%s", len(oc.RawQuery), oc.RawQuery, len(oc.OperationName), oc.OperationName)
	h.Write(vars)
	k := groupKey{workspace: v.WorkspaceID, role: v.Role}
	h.Sum(k.operation[:0])
	return k, nil
}

type groupCtxKey struct{}

// groupFrom returns the group whose operation ctx runs, nil outside one.
func groupFrom(ctx context.Context) *group {
	g, _ := ctx.Value(groupCtxKey{}).(*group)
	return g
}

// join adds a subscriber of v running oc to its group, forming the group if
// it is the first. Errors: the operation's errors, already presented (a
// filter that does not parse, say).
func (l *Live) join(ctx context.Context, exec graphql.GraphExecutor, oc *graphql.OperationContext, v *viewer.Viewer) (*group, gqlerror.List) {
	resumeVar := resumeVariable(oc)
	key, err := newGroupKey(v, oc, resumeVar)
	if err != nil {
		return nil, gqlerror.List{l.present(ctx, err)}
	}
	l.mu.Lock()
	g := l.groups[key]
	forming := g == nil
	if forming {
		if l.workspaceOps[key.workspace] >= l.opts.OperationsPerWorkspace {
			l.mu.Unlock()
			return nil, gqlerror.List{l.present(ctx, apperr.New(apperr.RateLimited,
				"this workspace's subscriptions run %d distinct operations on this server, the most allowed: subscribe with one of those (the same document and variables)", l.opts.OperationsPerWorkspace))}
		}
		l.workspaceOps[key.workspace]++
		g = &group{key: key, id: l.groupIDs.Add(1), live: l, ready: make(chan struct{}), resumeVar: resumeVar}
		l.groups[key] = g
	}
	g.members++
	l.mu.Unlock()
	if forming {
		g.form(ctx, exec, oc, v)
		close(g.ready)
	} else {
		select {
		case <-g.ready:
		case <-ctx.Done():
			l.leave(g)
			return nil, gqlerror.List{l.present(ctx, apperr.From(ctx.Err()))}
		}
	}
	if g.err != nil {
		l.leave(g)
		return nil, g.err
	}
	return g, nil
}

// leave removes a subscriber from g, ending g with its last one.
func (l *Live) leave(g *group) {
	l.mu.Lock()
	g.members--
	last := g.members == 0
	if last && l.groups[g.key] == g {
		delete(l.groups, g.key)
		if l.workspaceOps[g.key.workspace]--; l.workspaceOps[g.key.workspace] <= 0 {
			delete(l.workspaceOps, g.key.workspace)
		}
	}
	l.mu.Unlock()
	if last && g.cancel != nil {
		g.cancel()
		if g.done != nil {
			<-g.done
			g.sub.Close()
		}
	}
}

// form runs the group's operation in exec under a context of its own (the
// group outlives the subscriber that formed it) acting as v: the
// procedureEvents resolver (ProcedureEvents) finds the group there and
// hands the executor its feed.
func (g *group) form(ctx context.Context, exec graphql.GraphExecutor, oc *graphql.OperationContext, v *viewer.Viewer) {
	defer func() {
		if p := recover(); p != nil {
			g.live.opts.Log.ErrorContext(ctx, "panic forming a subscription", "request_id", middleware.RequestID(ctx), "panic", fmt.Sprint(p))
			g.err = gqlerror.List{g.live.present(ctx, apperr.New(apperr.Internal, "internal error"))}
		}
	}()
	gctx := context.WithValue(context.Background(), groupCtxKey{}, g)
	gctx = viewer.NewContext(gctx, v)
	gctx = middleware.ContextWithRequestID(gctx, middleware.RequestID(ctx))
	g.ctx, g.cancel = context.WithCancel(gctx)
	if len(graphql.CollectFields(oc, oc.Operation.SelectionSet, nil)) != 1 {
		// The document has one root field (its limits saw to that), but
		// @skip or @include may leave the operation none to subscribe to.
		g.err = gqlerror.List{g.live.present(ctx, apperr.New(apperr.ValidationFailed,
			"the subscription selects no field: @skip or @include left out its root field"))}
		return
	}
	g.feed = make(chan *model.ProcedureEvent, 1)
	responses, opCtx := exec.DispatchOperation(g.ctx, oc)
	if !g.started {
		// The executor refused the operation before it reached the
		// resolver, or the resolver refused it: its answer is the errors.
		resp := responses(g.ctx)
		if resp == nil || len(resp.Errors) == 0 {
			g.err = gqlerror.List{g.live.present(ctx, apperr.New(apperr.Internal, "internal error"))}
			return
		}
		g.err = resp.Errors
		return
	}
	g.responses, g.opCtx = responses, opCtx
	g.streams = map[*stream]struct{}{}
	g.sub = g.live.opts.Hub.Subscribe(v.WorkspaceID)
	g.done = make(chan struct{})
	go g.fan()
}

// streamEvent is what a group hands its subscribers: an event, rendered
// (r) unless a subscriber must first check its credential (a REFETCH, an
// access change), or the error that ends their subscriptions.
type streamEvent struct {
	e   events.Notification
	r   *rendered
	err error
}

// fan renders each event of the group's workspace its subscribers are sent
// and hands it to each of them, until the group ends. A subscriber whose
// queue is full (Options.Buffer events behind) is ended as too slow;
// the others are not delayed. When the group's own subscription ends (the
// server shutting down, or the group too slow for the hub), or a rendering
// panics, every subscriber is ended and the group is taken out of service:
// the next subscriber forms a new one.
func (g *group) fan() {
	defer close(g.done)
	defer func() {
		if p := recover(); p != nil {
			g.live.opts.Log.ErrorContext(g.ctx, "panic fanning out subscription events", "request_id", middleware.RequestID(g.ctx), "panic", fmt.Sprint(p))
			g.stop(&apperr.Error{Code: apperr.Internal, Message: "internal error", Err: fmt.Errorf("panic: %v", p)})
		}
	}()
	for {
		select {
		case <-g.ctx.Done():
			return
		case e, ok := <-g.sub.Events():
			if !ok {
				if errors.Is(g.sub.Err(), events.ErrTooSlow) {
					g.stop(errTooSlow)
				} else {
					g.stop(errClosing)
				}
				return
			}
			if se, send := g.prepare(e); send {
				g.hand(se)
			}
		}
	}
}

// prepare turns e into what g's subscribers are handed: rendered, unless a
// subscriber must check its credential first; send is false when the
// filter leaves e out.
func (g *group) prepare(e events.Notification) (se streamEvent, send bool) {
	if e.Refetch || e.Kind == core.AccessChanged {
		return streamEvent{e: e}, true
	}
	// Rendered once, here, and handed to every subscriber: only a REFETCH,
	// which subscribers render once they have checked their credential,
	// goes through the renderings cache (deliver).
	r, err := g.render(e, e.Version, e.Version)
	switch {
	case err != nil && g.ctx.Err() != nil:
		return se, false // the group ended while the event was read
	case err != nil:
		return streamEvent{e: e, err: err}, true
	case r.payload == nil:
		return se, false
	}
	// Held, counted once, until the last subscriber wrote it: no room for
	// it ends this workspace's subscribers that asked for it, never
	// another's.
	if err := g.live.hold(g.key.workspace, r); err != nil {
		return streamEvent{e: e, err: err}, true
	}
	return streamEvent{e: e, r: r}, true
}

// hand queues se for every subscriber, ending those whose queue is full.
func (g *group) hand(se streamEvent) {
	g.fanMu.Lock()
	defer g.fanMu.Unlock()
	var size int64
	if se.r != nil {
		size = se.r.size()
	}
	for s := range g.streams {
		// A subscriber holds at most Buffer events and QueueBytes of
		// renderings (one event, whatever its size, when it has none).
		if queued := s.queued.Load(); queued > 0 && queued+size > g.live.opts.QueueBytes {
			g.drop(s, errTooSlow)
			continue
		}
		if se.r != nil {
			se.r.hold() // before the subscriber can take it
		}
		select {
		case s.queue <- se:
			s.queued.Add(size)
		default:
			se.r.done()
			g.drop(s, errTooSlow)
		}
	}
	se.r.done() // the fan's own hold
}

// stop ends every subscriber with err and takes g out of service.
func (g *group) stop(err error) {
	l := g.live
	l.mu.Lock()
	if l.groups[g.key] == g {
		delete(l.groups, g.key)
		if l.workspaceOps[g.key.workspace]--; l.workspaceOps[g.key.workspace] <= 0 {
			delete(l.workspaceOps, g.key.workspace)
		}
	}
	l.mu.Unlock()
	g.fanMu.Lock()
	defer g.fanMu.Unlock()
	for s := range g.streams {
		g.drop(s, err)
	}
	g.streams = nil
}

// listen has g hand s its events from now on; false when g is out of
// service (s then ends with why).
func (g *group) listen(s *stream) bool {
	g.fanMu.Lock()
	defer g.fanMu.Unlock()
	if g.streams == nil {
		return false
	}
	g.streams[s] = struct{}{}
	g.live.listening.Add(1)
	return true
}

// unlisten stops handing s events.
func (g *group) unlisten(s *stream) {
	g.fanMu.Lock()
	defer g.fanMu.Unlock()
	if _, ok := g.streams[s]; ok {
		delete(g.streams, s)
		g.live.listening.Add(-1)
	}
}

// drop ends s with err: its queue is closed once what it holds is taken.
// g.fanMu is held.
func (g *group) drop(s *stream, err error) {
	if _, ok := g.streams[s]; !ok {
		return
	}
	delete(g.streams, s)
	g.live.listening.Add(-1)
	s.ended = err
	close(s.queue)
}

// EventSelection is what a subscription's operation selects of its events:
// whether their procedure (Procedure), and which of its edges (Edges). The
// resolvers tell it (they know the schema's edges), collected through
// fragments and directives as the executor collects them.
type EventSelection struct {
	Procedure bool
	Edges     loader.Edges
}

// ProcedureEvents is the procedureEvents resolver's work. It runs once per
// group, as the group forms, and hands the executor the group's feed and
// afterVersion, the version its subscribers resume after (resumeVersion).
// Errors: validation_failed (the filter); bad_request outside a
// subscription stream (a subscription sent as a plain POST or GET).
func ProcedureEvents(ctx context.Context, svc *core.Service, f *model.ProcedureEventFilter, afterVersion *int, sel EventSelection) (<-chan *model.ProcedureEvent, error) {
	g := groupFrom(ctx)
	if g == nil {
		return nil, apperr.New(apperr.BadRequest, "subscriptions need a WebSocket (graphql-transport-ws) or Server-Sent Events (POST with Accept: text/event-stream)")
	}
	filter, err := newEventFilter(f)
	if err != nil {
		return nil, err
	}
	g.svc, g.filter, g.after, g.started = svc, filter, afterVersion, true
	g.reads, g.edges = sel.Procedure, sel.Edges
	if !filter.empty() {
		// Comment events do not say which column they are in: the
		// procedure is read to match it.
		g.reads = true
	}
	return g.feed, nil
}

// eventFilter is a ProcedureEventFilter, its ids parsed.
type eventFilter struct {
	project *uuid.UUID
	state   *procedure.State
}

// newEventFilter parses f. Errors: validation_failed.
func newEventFilter(f *model.ProcedureEventFilter) (eventFilter, error) {
	var out eventFilter
	if f == nil {
		return out, nil
	}
	if f.ProjectID != nil {
		id, err := ids.Parse(*f.ProjectID)
		if err != nil {
			return out, apperr.Invalid("projectId", "must be an id")
		}
		out.project = &id
	}
	out.state = f.State
	return out, nil
}

func (f eventFilter) empty() bool { return f.project == nil && f.state == nil }

func (f eventFilter) matches(c *core.Facets) bool {
	return c != nil && (f.project == nil || *f.project == c.ProjectID) && (f.state == nil || *f.state == c.State)
}

// rendered is one event as a group's subscribers are sent it: frame is
// its Server-Sent Events "next" event, and payload, within it, the GraphQL
// response (both nil when the event is not delivered to them). One copy
// serves both transports.
//
// A rendering held for subscribers counts against the live memory
// (Live.hold) until its last holder is done with it (done): the group's
// fan while it hands it out, then each subscriber it was handed to until
// that subscriber wrote it or left. A rendering no one counts (release
// nil) ignores hold and done.
type rendered struct {
	frame, payload []byte
	// access is its read's (eventRead.access), 0 when it read nothing.
	access  int64
	holders atomic.Int32
	release func()
}

// hold adds a holder of r.
func (r *rendered) hold() {
	if r.release != nil {
		r.holders.Add(1)
	}
}

// done drops a holder of r; the last one gives its bytes back.
func (r *rendered) done() {
	if r != nil && r.release != nil && r.holders.Add(-1) == 0 {
		r.release()
	}
}

// newRendered renders resp once, framed.
func newRendered(resp *graphql.Response) (*rendered, error) {
	var b bytes.Buffer
	b.Write(eventNext)
	// Encode writes what json.Marshal would, and a line break: the first
	// of the two that end an event.
	if err := json.NewEncoder(&b).Encode(resp); err != nil {
		return nil, err
	}
	b.WriteByte('\n')
	frame := b.Bytes()
	return &rendered{frame: frame, payload: frame[len(eventNext) : len(frame)-len(eventEnd)]}, nil
}

// size is what r holds in memory.
func (r *rendered) size() int64 { return int64(len(r.frame)) }

// renderKey names an event's rendering for a group: a live event's by its
// sequence in the hub (seq), a replayed one's by its version and the last
// version of the log read it was replayed from (floor).
type renderKey struct {
	group, seq     uint64
	version, floor int64
}

// deliver returns a REFETCH as g's subscribers are sent it, rendered once
// for all of them: by the first subscriber to ask while the others wait.
// version is the workspace version it shows when the event carries none.
func (g *group) deliver(ctx context.Context, e events.Notification, version int64) (*rendered, error) {
	return g.live.renders.get(ctx, renderKey{group: g.id, seq: e.Seq}, func() (*rendered, int64, error) {
		r, err := g.render(e, version, e.Version)
		if err != nil {
			return nil, 0, err
		}
		return r, 128 + r.size(), nil
	})
}

// replay returns e, an event of the change log that a subscriber of g
// resumes from, rendered: once for every subscriber of g replaying it from
// the same read of the log (floor, the last version that read gave), while
// the renderings cache keeps it. Its procedure is read once per such read
// of the log, however many of its events are replayed: a replayed event
// shows its procedure as it is when replayed.
func (g *group) replay(ctx context.Context, e events.Notification, floor int64) (*rendered, error) {
	return g.live.renders.get(ctx, renderKey{group: g.id, version: e.Version, floor: floor}, func() (*rendered, int64, error) {
		r, err := g.render(e, e.Version, floor)
		if err != nil {
			return nil, 0, err
		}
		return r, 128 + r.size(), nil
	})
}

// render renders e for g, nil payload when g's subscribers are not sent
// it; its procedure is read as of readAt (see read).
func (g *group) render(e events.Notification, version, readAt int64) (*rendered, error) {
	ev, access, err := g.event(e, version, readAt)
	if err != nil || ev == nil {
		return &rendered{}, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ctx.Err() != nil {
		// Its last subscriber left while the event was read.
		return &rendered{}, nil
	}
	resp, err := g.respond(ev)
	if err != nil {
		return nil, err
	}
	r, err := newRendered(resp)
	if err != nil {
		return nil, err
	}
	r.access = access
	return r, nil
}

// respond has the executor render ev, with fresh dataloaders (seeded from
// ev's shared read, see eventProcedure): nothing loaded for an earlier
// event is shown. A panic while rendering is answered as an internal error,
// for this event only; g.mu is held.
func (g *group) respond(ev *model.ProcedureEvent) (resp *graphql.Response, err error) {
	defer func() {
		if p := recover(); p != nil {
			g.live.opts.Log.ErrorContext(g.ctx, "panic rendering a subscription event", "request_id", middleware.RequestID(g.ctx), "panic", fmt.Sprint(p))
			resp, err = &graphql.Response{Errors: gqlerror.List{g.live.present(g.ctx, apperr.New(apperr.Internal, "internal error"))}}, nil
			// The executor did not take the event: leave the feed empty.
			select {
			case <-g.feed:
			default:
			}
		}
	}()
	g.feed <- ev
	g.live.rendered.Add(1)
	resp = g.responses(g.live.opts.Loaders(g.opCtx))
	if resp == nil {
		return nil, errClosing
	}
	return resp, nil
}

// event builds what e shows g's subscribers, reading its procedure when
// they select it or their filter needs it; nil when the filter leaves it
// out.
func (g *group) event(e events.Notification, version, readAt int64) (ev *model.ProcedureEvent, access int64, err error) {
	if e.Refetch {
		return &model.ProcedureEvent{Kind: model.ProcedureEventKindRefetch, WorkspaceVersion: int(version)}, 0, nil
	}
	kind := model.ProcedureEventKind(e.Kind)
	if !kind.IsValid() || kind == model.ProcedureEventKindRefetch {
		return nil, 0, nil
	}
	filter := g.filter
	columnsKnown := e.Before != nil || e.After != nil
	if columnsKnown && !filter.empty() && !filter.matches(e.Before) && !filter.matches(e.After) {
		return nil, 0, nil
	}
	id := e.ProcedureID.String()
	ev = &model.ProcedureEvent{Kind: kind, ProcedureID: &id, WorkspaceVersion: int(e.Version)}
	if kind != model.ProcedureEventKindDeleted && g.reads {
		r, err := g.read(e, readAt)
		if err != nil {
			return nil, 0, err
		}
		ev.Procedure, access = r.p, r.access
		if r.edges != nil {
			ev.Edges = r.edges
		}
	}
	if !columnsKnown && !filter.empty() && (ev.Procedure == nil || !filter.matches(&core.Facets{ProjectID: ev.Procedure.ProjectID, State: ev.Procedure.State})) {
		return nil, 0, nil
	}
	return ev, access, nil
}

// readKey names one event's read: its procedure as of a version (a live
// event's own, or for replayed events the last one their read of the log
// gave), with the edges a group renders.
type readKey struct {
	workspace, procedure uuid.UUID
	version              int64
	edges                loader.Edges
}

// eventRead is one event's procedure (nil when gone) and the edges read
// with it; access is the version of the workspace's last write that may
// have taken someone's access away, read after them (core.AccessVersion):
// a subscriber last checked before it is checked again before it is sent
// what was read (stream.checkAccess).
type eventRead struct {
	p      *ent.Procedure
	edges  *loader.Snapshot
	access int64
}

// read returns e's procedure as of version at (see readKey) and the edges
// g renders, read through the
// core once for every group of this replica that renders the same edges:
// every subscriber of a workspace may see the same records (tenancy is per
// workspace, and every role reads procedures and their edges). Only the
// edges some subscriber selects are read: a subscriber selecting `kind`
// alone reads nothing, and one that does not select comments never holds
// them.
func (g *group) read(e events.Notification, at int64) (*eventRead, error) {
	key := readKey{e.WorkspaceID, e.ProcedureID, at, g.edges}
	return g.live.reads.get(g.ctx, key, func() (*eventRead, int64, error) {
		// Not cancelled with the subscriber that reads (the others wait
		// for it), but bounded as a request is: the group's goroutine,
		// and the last subscriber leaving, wait for it.
		base := context.WithoutCancel(g.ctx)
		if t := g.live.opts.RequestTimeout; t > 0 {
			var cancel context.CancelFunc
			base, cancel = context.WithTimeout(base, t)
			defer cancel()
		}
		rctx := g.live.opts.Loaders(base)
		p, err := g.svc.Procedure(rctx, e.ProcedureID.String())
		if err != nil {
			if apperr.CodeOf(err) == apperr.NotFound {
				return &eventRead{}, 64, nil
			}
			return nil, 0, err
		}
		if err := loader.PrimeProcedures(rctx, []*ent.Procedure{p}, g.edges); err != nil {
			return nil, 0, err
		}
		// After the procedure and its edges: an access change they may
		// show the effects of is seen here.
		access, err := g.svc.AccessVersion(rctx)
		if err != nil {
			return nil, 0, err
		}
		r := &eventRead{p: p, edges: loader.Export(rctx), access: access}
		return r, int64(procedureSize(p) + r.edges.Size()), nil
	})
}

// procedureSize estimates the bytes p holds: its text and a fixed overhead.
func procedureSize(p *ent.Procedure) int {
	n := 512 + len(p.Name) + len(p.ShortID) + len(p.ProjectName)
	if p.Content != nil {
		n += len(*p.Content)
	}
	if p.CaptureID != nil {
		n += len(*p.CaptureID)
	}
	return n
}

// operationKind returns the kind of oc's operation.
func operationKind(oc *graphql.OperationContext) ast.Operation {
	if oc == nil || oc.Operation == nil {
		return ""
	}
	return oc.Operation.Operation
}
