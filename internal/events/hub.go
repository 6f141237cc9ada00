// Package events makes committed writes known to live subscribers through
// notifications (Notification): post-commit announcements that a write
// happened, not the change log's rows (ent.Event, internal/core's
// changelog.go) nor GraphQL's ProcedureEvent, which live updates render from
// them (docs/design.md, "Glossary"). A Hub fans notifications out to this
// process's subscriptions, per workspace, and an announcer (core.Announcer)
// feeds the hubs once a write has committed — directly on a single process
// (NewLocalAnnouncer), or through PostgreSQL's LISTEN/NOTIFY to the hub of
// every replica (NewPostgresAnnouncer, Listen).
//
// Notifications carry ids only; subscribers read the records themselves,
// under their own viewer, so a notification never leaks content across
// tenants or roles.
package events

import (
	"errors"
	"sync"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/internal/core"
)

// Notification is what a subscriber receives: one committed write (or a
// Refetch).
type Notification struct {
	core.Change // WorkspaceID, Kind, ProcedureID, Before, After
	// Version is the workspace's version as of the write's commit. Events of
	// one workspace arrive in the order their writes committed.
	Version int64
	// Refetch says events may have been missed (e.g. the LISTEN connection
	// was lost and restored): the subscriber should read afresh what it
	// shows. Only WorkspaceID is set then; Change.Kind is empty.
	Refetch bool
	// Seq numbers the events a hub hands to its subscribers, from 1, in
	// the order it hands them: every subscriber of a workspace sees the
	// same event under the same Seq, so work done for one delivery (a
	// read, a rendering) can be shared by the others (graph's live
	// updates). Set by Publish and Refetch.
	Seq uint64
}

// Why a subscription ended (Subscription.Err).
var (
	// ErrTooSlow: the subscriber's buffer was full when an event came.
	// Dropping one event silently would leave it showing a stale board; it
	// should subscribe again and refetch.
	ErrTooSlow = errors.New("events: subscriber too slow, events were dropped")
	// ErrClosed: the hub was closed (the server is shutting down).
	ErrClosed = errors.New("events: hub closed")
)

// DefaultBuffer is the per-subscriber buffer when HubOptions.Buffer is 0.
const DefaultBuffer = 64

// HubOptions tune a Hub.
type HubOptions struct {
	// Buffer is how many events a subscriber may lag behind before it is
	// closed with ErrTooSlow (DefaultBuffer when 0).
	Buffer int
}

// Hub fans events out to this process's subscribers, per workspace. Its
// methods are safe for concurrent use. Publish never blocks: it runs on the
// write path (after commit) or on the listener's goroutine, which a stalled
// subscriber must never hold up.
type Hub struct {
	buffer int

	mu        sync.Mutex
	subs      map[uuid.UUID][]*Subscription
	n         int
	closed    bool
	observers []func(Notification)
	// pending are the observers of changes not yet committed
	// (ObservePending).
	pending []func(Notification) (resolve func(committed bool))
	// seq is the Seq of the last event handed out.
	seq uint64
}

// Observe has every event published from now on (not Refetch) handed to
// observe as well, in publication order, under the hub's lock: observe
// must be quick and must not call the hub. The response cache keeps its
// recent writes this way (internal/respcache, recent_writes.go).
func (h *Hub) Observe(observe func(Notification)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.observers = append(h.observers, observe)
}

// ObservePending has every change this replica is about to commit
// (Pending) handed to observe as well, under the hub's lock (observe must
// be quick and must not call the hub), which returns how it is told the
// commit's outcome. The response cache's recent writes learn this way that
// a version is coming (respcache.Writes.Pending).
func (h *Hub) ObservePending(observe func(Notification) (resolve func(committed bool))) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pending = append(h.pending, observe)
}

// Pending tells the pending observers that this replica is committing e,
// and returns how the writer reports the outcome: resolve(true) once the
// commit has answered, after Record; resolve(false) if it failed, was
// rolled back, or its outcome is unknown. Call resolve exactly once.
// Subscribers hear nothing of a pending change.
func (h *Hub) Pending(e Notification) (resolve func(committed bool)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var all []func(bool)
	for _, observe := range h.pending {
		all = append(all, observe(e))
	}
	return func(committed bool) {
		for _, r := range all {
			r(committed)
		}
	}
}

// Record hands e to the observers only, not to subscribers: a replica's
// own commit, known before PostgreSQL delivers its notification to every
// replica (which then Publishes it; observers see it twice).
func (h *Hub) Record(e Notification) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, observe := range h.observers {
		observe(e)
	}
}

// NewHub returns an empty hub.
func NewHub(opts HubOptions) *Hub {
	if opts.Buffer <= 0 {
		opts.Buffer = DefaultBuffer
	}
	return &Hub{buffer: opts.Buffer, subs: map[uuid.UUID][]*Subscription{}}
}

// Subscription is one subscriber's stream of the events of a workspace.
type Subscription struct {
	hub *Hub
	ws  uuid.UUID
	ch  chan Notification

	// Guarded by hub.mu.
	i     int // index in hub.subs[ws]
	ended bool
	err   error
}

// Subscribe opens a subscription to the events of workspaceID. On a closed
// hub the subscription has already ended, with ErrClosed.
func (h *Hub) Subscribe(workspaceID uuid.UUID) *Subscription {
	s := &Subscription{hub: h, ws: workspaceID, ch: make(chan Notification, h.buffer)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		s.ended, s.err = true, ErrClosed
		close(s.ch)
		return s
	}
	list := h.subs[workspaceID]
	s.i = len(list)
	h.subs[workspaceID] = append(list, s)
	h.n++
	return s
}

// Publish hands e to every subscriber of e.WorkspaceID. A subscriber whose
// buffer is full is closed with ErrTooSlow; the others are not delayed.
func (h *Hub) Publish(e Notification) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, observe := range h.observers {
		observe(e)
	}
	h.seq++
	e.Seq = h.seq
	h.send(h.subs[e.WorkspaceID], e)
}

// Refetch tells every subscriber that events may have been missed. A
// subscriber whose buffer is full is closed with ErrTooSlow instead, which
// asks for a refetch as well.
func (h *Hub) Refetch() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ws, list := range h.subs {
		h.seq++
		h.send(list, Notification{Change: core.Change{WorkspaceID: ws}, Refetch: true, Seq: h.seq})
	}
}

// send offers e to each of list without blocking; h.mu is held. It walks
// the list backwards because end swaps the last subscriber into the slot it
// frees, and that one has then been served already.
func (h *Hub) send(list []*Subscription, e Notification) {
	for i := len(list) - 1; i >= 0; i-- {
		s := list[i]
		select {
		case s.ch <- e:
		default:
			h.end(s, ErrTooSlow)
		}
	}
}

// Subscribers returns the number of open subscriptions.
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// Close ends every subscription with ErrClosed; later subscriptions end at
// once. Publish and Refetch do nothing after it.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for _, list := range h.subs {
		for i := len(list) - 1; i >= 0; i-- {
			h.end(list[i], ErrClosed)
		}
	}
}

// end removes s from the hub and closes its channel; h.mu is held. The
// workspace's entry goes with its last subscriber, so the map only holds
// workspaces someone is watching.
func (h *Hub) end(s *Subscription, err error) {
	if s.ended {
		return
	}
	list := h.subs[s.ws]
	last := len(list) - 1
	list[s.i] = list[last]
	list[s.i].i = s.i
	list[last] = nil
	if last == 0 {
		delete(h.subs, s.ws)
	} else {
		h.subs[s.ws] = list[:last]
	}
	h.n--
	s.ended, s.err = true, err
	close(s.ch)
}

// Events returns the subscription's events. It is closed when the
// subscription ends; Err then says why.
func (s *Subscription) Events() <-chan Notification { return s.ch }

// Err returns why the subscription ended: ErrTooSlow, ErrClosed, or nil
// (still open, or ended by Close).
func (s *Subscription) Err() error {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return s.err
}

// Close ends the subscription and frees its slot. It may be called more
// than once, and after the hub ended it.
func (s *Subscription) Close() {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	s.hub.end(s, nil)
}
