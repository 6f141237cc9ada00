package core

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/viewer"
)

// totals caches the exact count of each (workspace, list, filter) under the
// workspace's write version. Every write bumps the version in its own
// transaction, and the version is read with the token on every request, so a
// cached total is only ever served to a request that observed the same
// version: totals stay exact without counting rows on every list, and
// replicas need no coordination (each keeps its own cache).
// docs/performance.md explains the choice.
//
// A miss is counted once however many requests miss together (the clients
// of a list right after a write, or after a start): they share one count in
// flight. And the distinct counts in flight are bounded, per workspace and
// in all (countSlots), so that a flood of distinct filters cannot take the
// database's connections from the other workspaces' requests.
// docs/performance.md ("Search under a cold cache") has the measurements.
type totals struct {
	cache *lru.Cache[totalKey, int]
	slots *countSlots

	mu sync.Mutex
	// inFlight holds the counts running, by key (guarded by mu).
	inFlight map[totalKey]*countFlight
}

// totalKey identifies one cached total: a list and its filter key, in a
// workspace as of a version.
type totalKey struct {
	workspace uuid.UUID
	version   int64
	list, key string
}

// countFlight is one count shared by the requests that asked for its key
// while it ran; done is closed when n and err are set.
type countFlight struct {
	done chan struct{}
	n    int
	err  error
	// waiters are the requests still waiting for it (guarded by
	// totals.mu): when the last one gives up, the count is cancelled.
	waiters int
	cancel  context.CancelFunc
}

// totalsSize bounds the cache: about 100 bytes an entry.
const totalsSize = 50_000

// The default bounds of the counts in flight (WithCountLimits): a
// workspace runs at most DefaultCountsPerWorkspace distinct counts at once,
// a replica DefaultCountsInFlight, under the default connection pools (20
// on PostgreSQL, 8 on SQLite), which the page reads and the writes also
// need. A count past them waits for a slot, within its request's deadline.
const (
	DefaultCountsPerWorkspace = 4
	DefaultCountsInFlight     = 6
)

// WithoutTotalsCache turns the totals cache off: every total is counted
// (or summed from tallies) on every read, neither shared nor bounded. Only
// the benchmarks that weigh the cache use it (docs/caching.md).
func WithoutTotalsCache() Option { return func(s *Service) { s.totals = nil } }

// WithCountLimits bounds the distinct counts in flight: perWorkspace in one
// workspace, total in the replica (DefaultCountsPerWorkspace and
// DefaultCountsInFlight unless set; values below 1 mean 1).
func WithCountLimits(perWorkspace, total int) Option {
	return func(s *Service) {
		if s.totals != nil {
			s.totals.slots = newCountSlots(perWorkspace, total)
		}
	}
}

func newTotals() *totals {
	c, err := lru.New[totalKey, int](totalsSize)
	if err != nil {
		panic(err)
	}
	return &totals{cache: c, slots: newCountSlots(DefaultCountsPerWorkspace, DefaultCountsInFlight),
		inFlight: map[totalKey]*countFlight{}}
}

// get returns the total for key: cached, counted by another request at
// the same version (waited for, unless ctx ends first), or counted now
// and cached. count runs under a context of its own, which keeps ctx's
// values (the viewer, for tenancy) but not its end: a requester that gives
// up does not fail the others; the count is cancelled when every one has.
// Viewers whose workspace version was not read with their token (operator
// contexts) always count, under ctx.
func (t *totals) get(ctx context.Context, list, key string, count func(context.Context) (int, error)) (int, error) {
	k, ok := t.key(ctx, list, key)
	if !ok {
		return count(ctx)
	}
	if n, ok := t.cache.Get(k); ok {
		return n, nil
	}
	t.mu.Lock()
	f, found := t.inFlight[k]
	if !found {
		// Counted since the miss above: the flight has just ended.
		if n, ok := t.cache.Get(k); ok {
			t.mu.Unlock()
			return n, nil
		}
		cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		f = &countFlight{done: make(chan struct{}), cancel: cancel}
		t.inFlight[k] = f
		slots := t.slots.join(k.workspace)
		go t.run(cctx, k, f, slots, count)
	}
	f.waiters++
	t.mu.Unlock()
	select {
	case <-f.done:
		return f.n, f.err
	case <-ctx.Done():
		t.leave(k, f)
		return 0, ctx.Err()
	}
}

// run counts f once a slot of its workspace and one of the replica are
// free, caches the total, and hands it to f's waiters.
func (t *totals) run(ctx context.Context, k totalKey, f *countFlight, slots *workspaceSlots, count func(context.Context) (int, error)) {
	defer func() {
		if p := recover(); p != nil {
			f.n, f.err = 0, &apperr.Error{Code: apperr.Internal, Message: "internal error", Err: fmt.Errorf("panic: %v", p)}
		}
		t.mu.Lock()
		if t.inFlight[k] == f {
			delete(t.inFlight, k)
		}
		t.slots.leave(k.workspace, slots)
		t.mu.Unlock()
		f.cancel()
		close(f.done)
	}()
	release, err := t.slots.acquire(ctx, slots)
	if err != nil {
		f.err = err
		return
	}
	defer release()
	if f.n, f.err = count(ctx); f.err == nil {
		// Cached before the flight leaves inFlight, so that a request
		// always finds the one or the other.
		t.cache.Add(k, f.n)
	}
}

// leave is a waiter of f giving up; the last one cancels the count, and a
// request that comes after starts its own.
func (t *totals) leave(k totalKey, f *countFlight) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if f.waiters--; f.waiters > 0 {
		return
	}
	if t.inFlight[k] == f {
		delete(t.inFlight, k)
	}
	f.cancel()
}

// peek returns the cached total for key, if ctx's viewer's version has it.
func (t *totals) peek(ctx context.Context, list, key string) (int, bool) {
	k, ok := t.key(ctx, list, key)
	if !ok {
		return 0, false
	}
	return t.cache.Get(k)
}

// put caches n as the total for key, at ctx's viewer's version.
func (t *totals) put(ctx context.Context, list, key string, n int) {
	if k, ok := t.key(ctx, list, key); ok {
		t.cache.Add(k, n)
	}
}

// key is the cache key of list and key for ctx's viewer; false when the
// viewer's version was not read with its token.
func (t *totals) key(ctx context.Context, list, key string) (totalKey, bool) {
	v := viewer.FromContext(ctx)
	if t == nil || v == nil || !v.VersionKnown {
		return totalKey{}, false
	}
	return totalKey{workspace: v.WorkspaceID, version: v.WorkspaceVersion, list: list, key: key}, true
}

// countSlots bounds the counts running: a count takes a slot of its
// workspace, then one of the replica, and waits while either is full. A
// workspace's flood of distinct filters thus waits on its own slots, and
// holds at most perWorkspace of the replica's, which the other workspaces'
// counts share. The slots are buffered channels: waiters are let in in
// the order they came.
type countSlots struct {
	perWorkspace int
	total        chan struct{}
	// workspaces holds the slots of the workspaces with counts in
	// flight, and how many (guarded by totals.mu): a workspace's entry
	// leaves with its last count, so there are at most as many as counts.
	workspaces map[uuid.UUID]*workspaceSlots
	// waiting counts the counts waiting for a slot, for tests.
	waiting atomic.Int64
}

type workspaceSlots struct {
	slots   chan struct{}
	flights int
}

func newCountSlots(perWorkspace, total int) *countSlots {
	return &countSlots{perWorkspace: max(perWorkspace, 1), total: make(chan struct{}, max(total, 1)),
		workspaces: map[uuid.UUID]*workspaceSlots{}}
}

// join registers a flight of workspace ws; totals.mu is held.
func (c *countSlots) join(ws uuid.UUID) *workspaceSlots {
	s := c.workspaces[ws]
	if s == nil {
		s = &workspaceSlots{slots: make(chan struct{}, c.perWorkspace)}
		c.workspaces[ws] = s
	}
	s.flights++
	return s
}

// leave unregisters a flight of ws, ended; totals.mu is held.
func (c *countSlots) leave(ws uuid.UUID, s *workspaceSlots) {
	if s.flights--; s.flights == 0 {
		delete(c.workspaces, ws)
	}
}

// acquire takes a slot of s and one of the replica, waiting until ctx
// ends; release gives both back.
func (c *countSlots) acquire(ctx context.Context, s *workspaceSlots) (release func(), err error) {
	select {
	case s.slots <- struct{}{}:
	default:
		if err := c.wait(ctx, s.slots); err != nil {
			return nil, err
		}
	}
	select {
	case c.total <- struct{}{}:
	default:
		if err := c.wait(ctx, c.total); err != nil {
			<-s.slots
			return nil, err
		}
	}
	return func() { <-c.total; <-s.slots }, nil
}

// wait takes a slot of slots once one is free, or fails when ctx ends.
func (c *countSlots) wait(ctx context.Context, slots chan struct{}) error {
	c.waiting.Add(1)
	defer c.waiting.Add(-1)
	select {
	case slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
