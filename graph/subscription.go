package graph

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/graph/model"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/events"
	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/loader"
	"github.com/procsvc/procsvc/internal/ratelimit"
	"github.com/procsvc/procsvc/internal/viewer"
)

// The defaults of LiveOptions.
const (
	DefaultSubscriptionsPerToken = 20
	DefaultRecheck               = 30 * time.Second
	DefaultKeepAlive             = 25 * time.Second
)

// LiveOptions configure live updates: the procedureEvents subscription over
// WebSocket and Server-Sent Events (docs/api.md, "Live updates").
type LiveOptions struct {
	// Hub delivers this replica's committed changes; the core's announcer
	// must feed it (internal/events).
	Hub *events.Hub
	// Authenticate resolves a credential ("Bearer <secret>") as an HTTP
	// request's Authorization header is resolved (internal/auth). It
	// authenticates a WebSocket at connection_init and every operation it
	// carries, and re-authenticates a subscription whenever its workspace's
	// access changes, after a REFETCH, and every Recheck.
	Authenticate func(ctx context.Context, authorization string) (*viewer.Viewer, error)
	// Limiter charges a WebSocket's opening and each of its operations
	// (nil: no rate limit). Server-Sent Events are plain requests, charged
	// by the HTTP middleware.
	Limiter *ratelimit.Limiter
	// Loaders gives each delivered event (and each operation over a
	// WebSocket) fresh dataloaders: loader.Middleware.
	Loaders func(http.Handler) http.Handler
	// MaxPerToken bounds the subscriptions one token holds open at once on
	// this replica (DefaultSubscriptionsPerToken when 0).
	MaxPerToken int
	// Recheck is how often an open subscription re-authenticates even when
	// no access change was heard (DefaultRecheck when 0): a missed
	// notification cannot keep a revoked token listening for longer.
	Recheck time.Duration
	// KeepAlive is the interval of WebSocket pings and of Server-Sent
	// Events comments (DefaultKeepAlive when 0). A WebSocket client that
	// does not answer a ping within twice the interval is disconnected.
	KeepAlive time.Duration
	// Origins are the host patterns (path.Match syntax, e.g.
	// "app.example.com" or "*.example.com") of the web pages, besides the
	// server's own host, allowed to open WebSockets.
	Origins []string
	Log     *slog.Logger
}

// Live serves live updates to the subscriptions of one handler. It counts
// each token's open subscriptions; everything else it needs comes from the
// subscription's context.
type Live struct {
	opts LiveOptions
	// present renders an error as the executor's error presenter does.
	present func(ctx context.Context, err error) *gqlerror.Error

	mu   sync.Mutex
	open map[uuid.UUID]int
	// reads are the records events show, read once per event and replica
	// and shared by every subscriber of the workspace (see read).
	reads map[readKey]*eventRead
	order []readKey
}

// readKey names one event's read: its procedure as of its version.
type readKey struct {
	workspace, procedure uuid.UUID
	version              int64
}

// eventRead is one event's procedure and edges, read once; done is closed
// when they are known.
type eventRead struct {
	done  chan struct{}
	p     *ent.Procedure
	edges *loader.Snapshot
	err   error
}

// keptReads bounds the reads kept for subscribers still catching up.
const keptReads = 256

// NewLive returns the live updates of opts.
func NewLive(opts LiveOptions) *Live {
	if opts.MaxPerToken <= 0 {
		opts.MaxPerToken = DefaultSubscriptionsPerToken
	}
	if opts.Recheck <= 0 {
		opts.Recheck = DefaultRecheck
	}
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = DefaultKeepAlive
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Live{opts: opts, open: map[uuid.UUID]int{}, reads: map[readKey]*eventRead{}}
}

type liveKey struct{}

// liveFrom returns the Live that serves ctx's operation. The Resolver is
// shared with REST, which has no subscriptions, so the executor hands it
// over through the context (see NewServer).
func liveFrom(ctx context.Context) *Live {
	l, _ := ctx.Value(liveKey{}).(*Live)
	return l
}

// acquire takes one of token's subscription slots. Errors: rate_limited.
func (l *Live) acquire(token uuid.UUID) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[token] >= l.opts.MaxPerToken {
		return apperr.New(apperr.RateLimited, "this token already has %d subscriptions open, the most allowed: close one first", l.opts.MaxPerToken)
	}
	l.open[token]++
	return nil
}

func (l *Live) release(token uuid.UUID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[token]--; l.open[token] <= 0 {
		delete(l.open, token)
	}
}

// Open returns how many subscriptions token holds open on this replica.
func (l *Live) Open(token uuid.UUID) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open[token]
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

// Why a subscription ends on its own, besides its credential.
var (
	errTooSlow = apperr.New(apperr.Unavailable, "this subscription fell too far behind and was closed: subscribe again and refetch")
	errClosing = apperr.New(apperr.Unavailable, "the server is shutting down: subscribe again (to another replica) and refetch")
)

// procedureEvents starts a procedureEvents subscription for the viewer of
// ctx. Errors: unauthenticated, validation_failed (the filter), rate_limited
// (the token's subscriptions are at their cap).
func (l *Live) procedureEvents(ctx context.Context, svc *core.Service, f *model.ProcedureEventFilter) (<-chan *model.ProcedureEvent, error) {
	v := viewer.FromContext(ctx)
	if v == nil {
		return nil, apperr.New(apperr.Unauthenticated, "authentication required")
	}
	c := connFrom(ctx)
	if l == nil || c == nil {
		return nil, apperr.New(apperr.BadRequest, "subscriptions need a WebSocket (graphql-transport-ws) or Server-Sent Events (POST with Accept: text/event-stream)")
	}
	filter, err := newEventFilter(f)
	if err != nil {
		return nil, err
	}
	if err := l.acquire(v.TokenID); err != nil {
		return nil, err
	}
	sub := l.opts.Hub.Subscribe(v.WorkspaceID)
	out := make(chan *model.ProcedureEvent)
	go func() {
		defer close(out)
		defer sub.Close()
		defer l.release(v.TokenID)
		if err := l.deliver(ctx, svc, sub, filter, c, out); err != nil {
			c.end(ctx, l, err)
		}
	}()
	c.started()
	return out, nil
}

// deliver sends sub's events that match filter to out until ctx ends (nil)
// or the subscription must end (its error).
func (l *Live) deliver(ctx context.Context, svc *core.Service, sub *events.Subscription, filter eventFilter, c *conn, out chan<- *model.ProcedureEvent) error {
	recheck := time.NewTicker(l.opts.Recheck)
	defer recheck.Stop()
	for {
		var ev *model.ProcedureEvent
		select {
		case <-ctx.Done():
			return nil
		case <-recheck.C:
			if _, err := l.reauthenticate(ctx, c); err != nil {
				return err
			}
			continue
		case e, ok := <-sub.Events():
			if !ok {
				if errors.Is(sub.Err(), events.ErrTooSlow) {
					return errTooSlow
				}
				return errClosing
			}
			var err error
			if ev, err = l.event(ctx, svc, c, e, filter); err != nil {
				if ctx.Err() != nil {
					return nil // the subscriber left while its event was read
				}
				return err
			}
		}
		if ev == nil {
			continue
		}
		select {
		case out <- ev:
		case <-ctx.Done():
			return nil
		}
	}
}

// event renders e for the subscriber of ctx, nil when it is not delivered.
// The procedure and its edges are read now, through the core, once for all
// of this replica's subscribers of the workspace (read), and each delivery
// is rendered with fresh dataloaders seeded with them (NewServer,
// eventProcedure): nothing cached from an earlier event is shown.
func (l *Live) event(ctx context.Context, svc *core.Service, c *conn, e events.Event, filter eventFilter) (*model.ProcedureEvent, error) {
	if e.Refetch || e.Kind == core.AccessChanged {
		// After a REFETCH an access change may have been missed too.
		v, err := l.reauthenticate(ctx, c)
		if err != nil || !e.Refetch {
			return nil, err
		}
		version := e.Version
		if version == 0 {
			version = v.WorkspaceVersion
		}
		return &model.ProcedureEvent{Kind: model.ProcedureEventKindRefetch, WorkspaceVersion: int(version)}, nil
	}
	kind := model.ProcedureEventKind(e.Kind)
	if !kind.IsValid() || kind == model.ProcedureEventKindRefetch {
		return nil, nil
	}
	columnsKnown := e.Before != nil || e.After != nil
	if columnsKnown && !filter.empty() && !filter.matches(e.Before) && !filter.matches(e.After) {
		return nil, nil
	}
	id := e.ProcedureID.String()
	ev := &model.ProcedureEvent{Kind: kind, ProcedureID: &id, WorkspaceVersion: int(e.Version)}
	if kind != model.ProcedureEventKindDeleted {
		r := l.read(ctx, svc, e)
		if r.err != nil {
			return nil, r.err
		}
		ev.Procedure, ev.Edges = r.p, r.edges
	}
	if !columnsKnown && !filter.empty() && (ev.Procedure == nil || !filter.matches(&core.Facets{ProjectID: ev.Procedure.ProjectID, State: ev.Procedure.State})) {
		return nil, nil
	}
	return ev, nil
}

// read returns e's procedure (nil when gone) and its edges, read once for
// every subscriber of this replica: the first subscriber to get there reads
// them, the others wait for its result. Every subscriber of a workspace may
// see the same records (tenancy is per workspace, and every role reads
// procedures and their edges), so one read serves them all; reading per
// subscriber made 1 000 subscribers cost 5 000 statements per write. The
// read is not cancelled with the subscriber that makes it.
func (l *Live) read(ctx context.Context, svc *core.Service, e events.Event) *eventRead {
	key := readKey{e.WorkspaceID, e.ProcedureID, e.Version}
	l.mu.Lock()
	r, ok := l.reads[key]
	if !ok {
		r = &eventRead{done: make(chan struct{})}
		l.reads[key] = r
		l.order = append(l.order, key)
		if len(l.order) > keptReads {
			delete(l.reads, l.order[0])
			l.order = l.order[1:]
		}
	}
	l.mu.Unlock()
	if ok {
		select {
		case <-r.done:
			return r
		case <-ctx.Done():
			return &eventRead{err: ctx.Err()}
		}
	}
	defer close(r.done)
	rctx := l.freshLoaders(context.WithoutCancel(ctx))
	p, err := svc.Procedure(rctx, e.ProcedureID.String())
	switch {
	case err == nil:
		if err := loader.PrimeProcedures(rctx, []*ent.Procedure{p}, procedureEdges); err != nil {
			r.err = err
			return r
		}
		r.p, r.edges = p, loader.Export(rctx)
	case apperr.CodeOf(err) != apperr.NotFound:
		r.err = err
	}
	return r
}

// procedureEdges are the edges an event's procedure may render: all of
// them, and its comments' authors.
var procedureEdges = loader.Edges{Category: true, Doer: true, Project: true, Comments: true, CommentAuthors: true}

// reauthenticate checks that the subscription's credential still holds: a
// revoked token or a removed member ends it (disconnected). Other failures
// (the database not answering) leave it open until the next check.
func (l *Live) reauthenticate(ctx context.Context, c *conn) (*viewer.Viewer, error) {
	v, err := l.opts.Authenticate(ctx, c.credential)
	if err == nil {
		return v, nil
	}
	switch apperr.CodeOf(err) {
	case apperr.Unauthenticated, apperr.Disconnected, apperr.Forbidden:
		return nil, err
	}
	if ctx.Err() == nil {
		l.opts.Log.WarnContext(ctx, "subscription: credential not rechecked", "code", apperr.CodeOf(err), "error", err.Error())
	}
	return viewer.FromContext(ctx), nil
}

// eventProcedure is ProcedureEvent.procedure: the procedure read on
// receipt, its edges primed through the loaders of this event's rendering.
func eventProcedure(ctx context.Context, ev *model.ProcedureEvent) (*ent.Procedure, error) {
	if ev.Procedure == nil {
		return nil, nil
	}
	if ev.Edges != nil {
		loader.Seed(ctx, ev.Edges)
		return ev.Procedure, nil
	}
	return primed(ctx)(ev.Procedure, nil)
}
