package webhooks

// The deliveries a replica holds: one lane (a queue) per endpoint, handed
// to the workers in turn, never more than PerEndpoint of one lane at once,
// so that a slow endpoint holds at most its share of the workers while the
// others' deliveries go on.

import (
	"sync"
	"time"

	"github.com/google/uuid"
)

// endpoint is what sending to an endpoint needs, as last read.
type endpoint struct {
	id, workspaceID uuid.UUID
	url, secret     string
}

// job is one leased delivery to attempt.
type job struct {
	id        uuid.UUID
	endpoint  *endpoint
	eventID   uuid.UUID
	eventType string
	eventAt   time.Time
	// body is the event as sent; nil when the event is gone (pruned) or
	// could not be rendered, with why in missing.
	body    []byte
	missing string
	// attempts is how many attempts were recorded before this one.
	attempts int
	// lease is when the lease this replica holds ends.
	lease time.Time
	// held: queued in a lane, whose room it holds until recorded.
	held bool
}

type lane struct {
	queue    []*job
	inflight int
	// reserved counts deliveries granted (take) and not yet filled;
	// unrecorded, those attempted (or handed back) whose outcome is not
	// yet written: a replica holds a delivery until then, so that a
	// recorder that falls behind slows the fan-out and the claims instead
	// of letting queues outlive their leases.
	reserved   int
	unrecorded int
	// more: the last claim or fan-out for this endpoint left deliveries
	// it had no room for; claim again once the lane runs dry.
	more bool
}

func (l *lane) held() int { return len(l.queue) + l.inflight + l.reserved + l.unrecorded }

type lanes struct {
	mu                                    sync.Mutex
	workers, perEndpoint, held, heldTotal int
	byID                                  map[uuid.UUID]*lane
	ring                                  []uuid.UUID
	next                                  int
	busy                                  int // jobs handed to the workers, not yet done
	total                                 int // every lane's held()
	// slow endpoints (their last attempt failed or took long) are held
	// no more deliveries than they can be sent at once, twice over: a
	// queue behind a slow endpoint would outlive its leases.
	slow   map[uuid.UUID]bool
	work   chan *job
	closed bool
	// kick asks for a claim (set by the dispatcher).
	kick func()
}

func newLanes(workers, perEndpoint, held, heldTotal int) *lanes {
	return &lanes{workers: workers, perEndpoint: perEndpoint, held: held, heldTotal: heldTotal,
		byID: map[uuid.UUID]*lane{}, slow: map[uuid.UUID]bool{}, work: make(chan *job, workers), kick: func() {}}
}

// take grants room for up to want deliveries of endpoint id, which the
// caller then fills (fill) with the jobs it leased, or gives back.
func (ls *lanes) take(id uuid.UUID, want int) int {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.closed || want <= 0 {
		return 0
	}
	limit := ls.held
	if ls.slow[id] {
		limit = min(limit, 2*ls.perEndpoint)
	}
	l := ls.lane(id)
	l.more = false
	n := min(want, limit-l.held(), ls.heldTotal-ls.total)
	if n <= 0 {
		// Nothing granted: its due deliveries wait for room, which its
		// lane's next attempt gives back (then it asks for a claim), or
		// the next poll finds.
		l.more = l.held() > 0
		ls.drop(id, l)
		return 0
	}
	l.reserved += n
	ls.total += n
	return n
}

// fill queues jobs (at most granted, as take granted them) and gives back
// the rest of the grant; more says deliveries were left for lack of it.
// On a closed lanes the jobs are returned, to be released.
func (ls *lanes) fill(id uuid.UUID, granted int, jobs []*job, more bool) (refused []*job) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l := ls.byID[id]
	if l == nil {
		return jobs // nothing was granted: there are none
	}
	l.reserved -= granted
	ls.total -= granted
	if ls.closed {
		ls.drop(id, l)
		return jobs
	}
	for _, j := range jobs {
		j.held = true
	}
	l.queue = append(l.queue, jobs...)
	ls.total += len(jobs)
	l.more = l.more || more
	ls.drop(id, l)
	ls.pump()
	return nil
}

// lane returns id's lane, made on first use.
func (ls *lanes) lane(id uuid.UUID) *lane {
	l := ls.byID[id]
	if l == nil {
		l = &lane{}
		ls.byID[id] = l
		ls.ring = append(ls.ring, id)
	}
	return l
}

// drop forgets an empty lane (its slowness is kept).
func (ls *lanes) drop(id uuid.UUID, l *lane) {
	if l.held() > 0 || l.more {
		return
	}
	delete(ls.byID, id)
	for i, r := range ls.ring {
		if r == id {
			ls.ring = append(ls.ring[:i], ls.ring[i+1:]...)
			if ls.next > i {
				ls.next--
			}
			break
		}
	}
}

// pump hands queued jobs to idle workers, one lane after the other.
func (ls *lanes) pump() {
	for ls.busy < ls.workers && len(ls.ring) > 0 {
		handed := false
		for range len(ls.ring) {
			if ls.next >= len(ls.ring) {
				ls.next = 0
			}
			id := ls.ring[ls.next]
			ls.next++
			l := ls.byID[id]
			if len(l.queue) == 0 || l.inflight >= ls.perEndpoint {
				continue
			}
			j := l.queue[0]
			l.queue[0] = nil
			l.queue = l.queue[1:]
			l.inflight++
			ls.busy++
			ls.work <- j // never blocks: busy < workers = cap(work)
			handed = true
			break
		}
		if !handed {
			return
		}
	}
}

// done is told by a worker that j's attempt is over; slow says whether it
// failed or took long.
func (ls *lanes) done(j *job, slow bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	id := j.endpoint.id
	if slow {
		ls.slow[id] = true
	} else {
		delete(ls.slow, id)
	}
	l := ls.byID[id]
	l.inflight--
	l.unrecorded++
	ls.busy--
	ls.pump()
}

// recorded is told that the outcomes of jobs have been written (or given
// up on): the room they held is free.
func (ls *lanes) recorded(jobs []*job) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for _, j := range jobs {
		if !j.held {
			continue
		}
		j.held = false
		id := j.endpoint.id
		l := ls.byID[id]
		l.unrecorded--
		ls.total--
		if l.more && len(l.queue) == 0 && !ls.closed {
			l.more = false
			ls.kick()
		}
		ls.drop(id, l)
	}
}

// close stops handing out jobs and returns those still queued, to be
// released; the workers finish what they were handed.
func (ls *lanes) close() []*job {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.closed {
		return nil
	}
	ls.closed = true
	var queued []*job
	for _, l := range ls.byID {
		queued = append(queued, l.queue...)
		l.unrecorded += len(l.queue) // handed back, and recorded so
		l.queue = nil
	}
	close(ls.work)
	return queued
}
