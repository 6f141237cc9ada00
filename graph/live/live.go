package live

import (
	"context"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/auth"
	"github.com/procsvc/procsvc/internal/defaults"
	"github.com/procsvc/procsvc/internal/events"
	"github.com/procsvc/procsvc/internal/idempotency"
	"github.com/procsvc/procsvc/internal/memory"
	"github.com/procsvc/procsvc/internal/ratelimit"
	"github.com/procsvc/procsvc/internal/viewer"
)

// The defaults of Options (docs/api.md, "Live updates").
const (
	DefaultSubscriptionsPerToken  = 20
	DefaultWebSocketsPerToken     = 20
	DefaultMaxConnections         = 10_000
	DefaultRecheck                = 30 * time.Second
	DefaultKeepAlive              = 25 * time.Second
	DefaultWriteTimeout           = 15 * time.Second
	DefaultCacheBytes             = 16 << 20
	DefaultQueueBytes             = 1 << 20
	DefaultMemoryBytes            = 256 << 20
	DefaultInitTimeout            = 10 * time.Second
	DefaultOperationsPerWorkspace = 100
	// DefaultOperationsPerSocket bounds the queries and mutations one
	// WebSocket runs at once (its subscriptions count against the token's
	// cap instead).
	DefaultOperationsPerSocket = 16
)

// Options configure live updates: the procedureEvents subscription over
// WebSocket and Server-Sent Events (docs/api.md, "Live updates"). Zero
// values take the defaults above.
type Options struct {
	// Hub delivers this replica's committed changes; the core's announcer
	// must feed it (internal/events).
	Hub *events.Hub
	// Authenticate resolves a credential ("Bearer <secret>") as an HTTP
	// request's Authorization header is resolved (internal/auth). It
	// authenticates a WebSocket at connection_init and every operation it
	// carries, and re-authenticates a subscription as it opens, whenever its
	// workspace's access changes, after a REFETCH, when its token expires,
	// and every Recheck.
	Authenticate func(ctx context.Context, authorization string) (*viewer.Viewer, error)
	// Idempotency keeps the outcome of WebSocket mutations sent with
	// extensions.idempotencyKey (nil: the key is ignored).
	Idempotency *idempotency.Store
	// Limiter charges a WebSocket's opening and each of its operations
	// (nil: no rate limit). Server-Sent Events are plain requests, charged
	// by the HTTP middleware.
	Limiter *ratelimit.Limiter
	// Loaders returns its context with fresh dataloaders (loader.Source's
	// Into): each operation over a WebSocket and each rendering of an event
	// gets its own.
	Loaders func(context.Context) context.Context
	// MaxPerToken bounds the subscriptions one token holds open at once on
	// this replica.
	MaxPerToken int
	// Buffer is how many events a subscriber may lag behind before its
	// subscription is ended as too slow (events.DefaultBuffer when 0).
	Buffer int
	// QueueBytes bounds the renderings a subscriber's lag holds (one event
	// always fits): past it, it is ended as too slow too.
	QueueBytes int64
	// WebSocketsPerToken bounds the WebSockets one token holds open at once
	// on this replica, subscriptions or not.
	WebSocketsPerToken int
	// MaxConnections bounds the live connections (WebSockets and
	// Server-Sent Events streams) this replica holds open; one more is
	// refused with unavailable.
	MaxConnections int
	// OperationsPerSocket bounds the queries and mutations one WebSocket
	// runs at once.
	OperationsPerSocket int
	// OperationsPerWorkspace bounds the distinct operations (groups: a
	// document, its variables and a role) a workspace's subscriptions run
	// on this replica. Each event is rendered once per group, so this
	// bounds what one write costs the replica to render.
	OperationsPerWorkspace int
	// Recheck is how often an open subscription re-authenticates even when
	// no access change was heard: a change no replica announced (a token
	// revoked by `procsvc token revoke` against SQLite, a row edited by
	// hand) cuts a subscription within this bound.
	Recheck time.Duration
	// KeepAlive is the interval of WebSocket pings and of Server-Sent
	// Events comments. A WebSocket whose peer does not answer a ping within
	// the interval is closed.
	KeepAlive time.Duration
	// FlushInterval is the least time between two writes of a Server-Sent
	// Events stream or of a WebSocket subscription (0: none): events that
	// come sooner are sent together, delayed that much at most. A write is
	// a system call, most of what a delivery costs a busy replica (and its
	// client); an event that comes after a quiet spell is sent at once.
	FlushInterval time.Duration
	// WriteTimeout bounds each write to a stream: a client that does not
	// take an event (or a keep-alive) within it is disconnected, so a
	// reader that stopped reading holds nothing for long.
	WriteTimeout time.Duration
	// RequestTimeout bounds each query and mutation sent over a WebSocket,
	// as the server's deadline bounds an HTTP request (0: none).
	RequestTimeout time.Duration
	// ReplayLimit bounds the events a resumed subscription is replayed
	// from the change log: one further behind is sent a REFETCH instead.
	ReplayLimit int
	// CacheBytes bounds the memory this replica keeps for live updates:
	// events' procedures as read, and their renderings, shared by the
	// subscribers still to be sent them.
	CacheBytes int64
	// MemoryBytes bounds the bytes of renderings this replica holds for
	// the subscribers still to send them: each live event's rendering from
	// the moment it is rendered until its last subscriber wrote it (counted
	// once, however many subscribers share it), and each event a resumed
	// subscription replays until it is written. WorkspaceMemoryBytes is one
	// workspace's share of it (half of it when 0): a rendering that would take a workspace past
	// its share, or the replica past MemoryBytes, is not held, and the
	// subscriptions that asked for it end (unavailable: resume later), so
	// that no workspace's subscribers ever take another's memory.
	MemoryBytes, WorkspaceMemoryBytes int64
	// InitTimeout bounds the wait for a WebSocket's connection_init
	// (closed with 4408 past it).
	InitTimeout time.Duration
	// Origins are the host patterns (path.Match syntax, e.g.
	// "app.example.com" or "*.example.com") of the web pages, besides the
	// server's own host, allowed to open WebSockets.
	Origins []string
	Log     *slog.Logger
}

// Live serves live updates to the subscriptions of one handler: it counts
// each token's subscriptions and WebSockets, groups the subscribers that
// run the same operation (group.go), and keeps what their events read and
// rendered for the subscribers that have not been sent them yet.
type Live struct {
	opts Options
	// present renders an error as the executor's error presenter does
	// (SetErrorPresenter).
	present func(ctx context.Context, err error) *gqlerror.Error

	mu            sync.Mutex
	subscriptions map[uuid.UUID]int // by token
	sockets       map[uuid.UUID]int // by token
	connections   int
	groups        map[groupKey]*group
	workspaceOps  map[uuid.UUID]int  // groups by workspace
	anonymous     map[netip.Addr]int // WebSockets before connection_init, by client
	anonymousAll  int

	// reads are events' procedures and edges, read once per replica (see
	// group.read); renders are events rendered once per group.
	reads   *flights[readKey, *eventRead]
	renders *flights[renderKey, *rendered]
	// checks are the credential checks an event (an access change, a
	// REFETCH) asks of every subscription: one per token and event.
	checks *flights[checkKey, *viewer.Viewer]
	// memory accounts the renderings held for subscribers, by workspace
	// (Options.MemoryBytes).
	memory *memory.Budget[uuid.UUID]
	// rendered counts the events the executor rendered.
	rendered atomic.Uint64
	// listening counts the subscriptions their groups hand events to.
	listening atomic.Int64
	// groupIDs numbers the groups.
	groupIDs atomic.Uint64
}

// New returns the live updates of opts.
func New(opts Options) *Live {
	defaults.Positive(&opts.MaxPerToken, DefaultSubscriptionsPerToken)
	defaults.Positive(&opts.Buffer, events.DefaultBuffer)
	defaults.Positive(&opts.QueueBytes, DefaultQueueBytes)
	defaults.Positive(&opts.WebSocketsPerToken, DefaultWebSocketsPerToken)
	defaults.Positive(&opts.MaxConnections, DefaultMaxConnections)
	defaults.Positive(&opts.OperationsPerWorkspace, DefaultOperationsPerWorkspace)
	defaults.Positive(&opts.OperationsPerSocket, DefaultOperationsPerSocket)
	defaults.Positive(&opts.Recheck, DefaultRecheck)
	defaults.Positive(&opts.KeepAlive, DefaultKeepAlive)
	defaults.Positive(&opts.WriteTimeout, DefaultWriteTimeout)
	defaults.Positive(&opts.InitTimeout, DefaultInitTimeout)
	defaults.Positive(&opts.CacheBytes, DefaultCacheBytes)
	defaults.Positive(&opts.ReplayLimit, DefaultReplayLimit)
	defaults.Positive(&opts.MemoryBytes, DefaultMemoryBytes)
	defaults.Positive(&opts.WorkspaceMemoryBytes, max(opts.MemoryBytes/2, 1))
	opts.WorkspaceMemoryBytes = min(opts.WorkspaceMemoryBytes, opts.MemoryBytes)
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Hub == nil {
		opts.Hub = events.NewHub(events.HubOptions{})
	}
	return &Live{
		opts:          opts,
		present:       func(_ context.Context, err error) *gqlerror.Error { return gqlerror.WrapPath(nil, err) },
		subscriptions: map[uuid.UUID]int{},
		sockets:       map[uuid.UUID]int{},
		groups:        map[groupKey]*group{},
		workspaceOps:  map[uuid.UUID]int{},
		anonymous:     map[netip.Addr]int{},
		// Half the bytes each: a rendering is about as large as its read.
		reads:   newFlights[readKey, *eventRead](opts.CacheBytes / 2),
		renders: newFlights[renderKey, *rendered](opts.CacheBytes / 2),
		checks:  newFlights[checkKey, *viewer.Viewer](1 << 20),
		memory:  memory.NewBudget[uuid.UUID](opts.MemoryBytes, opts.WorkspaceMemoryBytes),
	}
}

// SetErrorPresenter has l render its errors as the executor's error
// presenter does: the executor's constructor gives it, before l serves
// anything.
func (l *Live) SetErrorPresenter(present func(ctx context.Context, err error) *gqlerror.Error) {
	l.present = present
}

// Why a subscription ends on its own, besides its credential.
var (
	errTooSlow   = apperr.New(apperr.Unavailable, "this subscription fell too far behind and was closed: subscribe again and refetch")
	errClosing   = apperr.New(apperr.Unavailable, "the server is shutting down: subscribe again (to another replica) and refetch")
	errBusy      = apperr.New(apperr.Unavailable, "this server holds as many live connections as it may: retry later or on another replica")
	errUnchecked = apperr.New(apperr.Unavailable, "this subscription's access could not be checked after a change of access: subscribe again, resuming with afterVersion")
	errMemory    = apperr.New(apperr.Unavailable, "this workspace's subscriptions hold all the memory this server gives them: subscribe again later, resuming with afterVersion")
)

// hold counts r's bytes against workspace's share of the live memory
// (Options.MemoryBytes) until its last holder is done with it: r starts
// with one holder, its caller. Errors: unavailable (errMemory) when the
// workspace or the replica has no room for it.
func (l *Live) hold(workspace uuid.UUID, r *rendered) error {
	n := r.size()
	if !l.memory.Reserve(workspace, n) {
		return errMemory
	}
	r.holders.Store(1)
	r.release = func() { l.memory.Release(workspace, n) }
	return nil
}

// admit takes one of the replica's live connections. Errors: unavailable.
func (l *Live) admit() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.connections >= l.opts.MaxConnections {
		return errBusy
	}
	l.connections++
	return nil
}

func (l *Live) dismiss() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.connections--
}

// MaxAnonymousSocketsPerAddress bounds the WebSockets one client address
// (an IPv6 /48) holds open before their connection_init authenticates them
// (a NAT'd office reconnecting at once stays well under it).
const MaxAnonymousSocketsPerAddress = 256

// waitInit takes a place among anonymous WebSockets, those connection_init
// has not authenticated yet (each for InitTimeout at most): at most half of
// MaxConnections in all, so that they never keep authenticated clients
// out, and MaxAnonymousSocketsPerAddress per client address. release (safe
// to call twice) gives it back. Errors: rate_limited (the address),
// unavailable (anonymous sockets at their share).
func (l *Live) waitInit(ctx context.Context) (release func(), err error) {
	var key netip.Addr // the zero address: no client address (in process)
	if addr, ok := auth.ClientAddress(ctx); ok {
		key = auth.AddressKey(addr)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.anonymousAll >= max(1, l.opts.MaxConnections/2):
		return nil, errBusy
	case key.IsValid() && l.anonymous[key] >= MaxAnonymousSocketsPerAddress:
		return nil, apperr.New(apperr.RateLimited, "this address has %d WebSockets waiting for connection_init, the most allowed: initialise them first", MaxAnonymousSocketsPerAddress)
	}
	l.anonymousAll++
	if key.IsValid() {
		l.anonymous[key]++
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.anonymousAll--
			if !key.IsValid() {
				return
			}
			if l.anonymous[key]--; l.anonymous[key] <= 0 {
				delete(l.anonymous, key)
			}
		})
	}, nil
}

// acquire takes one of token's subscription slots. Errors: rate_limited.
func (l *Live) acquire(token uuid.UUID) error {
	return take(&l.mu, l.subscriptions, token, l.opts.MaxPerToken,
		"this token already has %d subscriptions open, the most allowed: close one first")
}

func (l *Live) release(token uuid.UUID) { give(&l.mu, l.subscriptions, token) }

// openSocket takes one of token's WebSocket slots. Errors: rate_limited.
func (l *Live) openSocket(token uuid.UUID) error {
	return take(&l.mu, l.sockets, token, l.opts.WebSocketsPerToken,
		"this token already has %d WebSockets open, the most allowed: close one first")
}

func (l *Live) closeSocket(token uuid.UUID) { give(&l.mu, l.sockets, token) }

func take(mu *sync.Mutex, counts map[uuid.UUID]int, token uuid.UUID, limit int, refusal string) error {
	mu.Lock()
	defer mu.Unlock()
	if counts[token] >= limit {
		return apperr.New(apperr.RateLimited, refusal, limit)
	}
	counts[token]++
	return nil
}

func give(mu *sync.Mutex, counts map[uuid.UUID]int, token uuid.UUID) {
	mu.Lock()
	defer mu.Unlock()
	if counts[token]--; counts[token] <= 0 {
		delete(counts, token)
	}
}

// Stats is what a Live holds at one moment.
type Stats struct {
	// Connections are the open WebSockets and Server-Sent Events streams.
	Connections int
	// Subscriptions are the open subscriptions (listening to their
	// group); Groups the distinct operations they run, each event rendered
	// once per group.
	Subscriptions, Groups int
	// CachedBytes is what the caches of reads and renderings hold
	// (at most Options.CacheBytes).
	CachedBytes int64
	// Rendered counts the events rendered since the Live started: once
	// per event and group, whatever the group's size.
	Rendered uint64
	// HeldBytes is what the renderings held for subscribers still to send
	// them take (at most Options.MemoryBytes); RefusedRenderings counts
	// the renderings refused for want of room since the Live started.
	HeldBytes         int64
	RefusedRenderings int64
}

// Stats returns what l holds now.
func (l *Live) Stats() Stats {
	l.mu.Lock()
	s := Stats{Connections: l.connections, Groups: len(l.groups), Subscriptions: int(l.listening.Load())}
	l.mu.Unlock()
	s.CachedBytes = l.reads.bytes() + l.renders.bytes()
	s.Rendered = l.rendered.Load()
	s.HeldBytes, s.RefusedRenderings = l.memory.Held(), l.memory.Refused()
	return s
}

// MemoryHeldBy returns the bytes of renderings l holds for workspace's
// subscribers (at most Options.WorkspaceMemoryBytes).
func (l *Live) MemoryHeldBy(workspace uuid.UUID) int64 { return l.memory.HeldBy(workspace) }

// reauthenticate checks that a subscription's credential still holds: a
// revoked or expired token or a removed member ends it (disconnected).
// Other failures (the database not answering) leave a subscription open
// until the next check, returning previous, unless the check is strict:
// one asked for by the subscription's opening, an access change or a
// REFETCH, any of which may be this credential's loss of access. A strict
// check that cannot be made ends the subscription (unavailable, to
// resubscribe and resume) rather than send events to someone who may no
// longer see them. The check is marked as one (auth.Recheck): the failure
// limit of the client's address must never answer it rate_limited, which
// would keep a revoked token's subscription.
func (l *Live) reauthenticate(ctx context.Context, credential string, previous *viewer.Viewer, strict bool) (*viewer.Viewer, error) {
	v, err := l.opts.Authenticate(auth.Recheck(ctx), credential)
	if err == nil && previous != nil && v.WorkspaceID != previous.WorkspaceID {
		// An identity provider's token names a person, who may be a
		// member of several workspaces (docs/api.md, "Identity provider
		// tokens"): a re-check that resolves to another workspace's member
		// never carries the subscription over.
		return nil, apperr.New(apperr.Unauthenticated, "the credential no longer acts in this subscription's workspace")
	}
	if err == nil {
		return v, nil
	}
	if lostAccess(err) {
		return nil, err
	}
	if strict {
		return nil, errUnchecked
	}
	if ctx.Err() == nil {
		l.opts.Log.WarnContext(ctx, "subscription: credential not rechecked", "code", apperr.CodeOf(err), "error", err.Error())
	}
	return previous, nil
}

// lostAccess reports whether err says a credential no longer authenticates.
func lostAccess(err error) bool {
	switch apperr.CodeOf(err) {
	case apperr.Unauthenticated, apperr.Disconnected, apperr.Forbidden:
		return true
	}
	return false
}

// checkKey names the check of a credential an event asks for: an access
// change or a REFETCH by its sequence in the hub (seq), or records read
// after a write that may have changed access, by that write's version
// (access).
type checkKey struct {
	credential string
	// workspace: an identity provider's token is one person's in each of
	// their workspaces, so its checks are shared per workspace.
	workspace uuid.UUID
	seq       uint64
	access    int64
}
