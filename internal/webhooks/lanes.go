package webhooks

// The deliveries a replica holds, and who gets its workers (docs/
// webhooks.md, "Sharing a replica"). One lane (a queue) per endpoint, the
// lanes grouped by workspace; idle workers are handed jobs one workspace
// after the other, and within a workspace one endpoint after the other,
// never more than PerEndpoint attempts of one endpoint at once, and first
// to the workspaces within their share (PerWorkspace). A workspace past its
// share is handed more only while no workspace within its share has a job
// and more than a reserve of the workers (an eighth) would stay idle: a
// workspace alone uses nearly every worker, and one that arrives while
// another's endpoints all hang finds the reserve idle at once, then every
// worker the other frees past its share. So an endpoint that hangs holds
// at most its share of the workers, a workspace whose every endpoint hangs
// all but the reserve, and the other workspaces' deliveries go on.
//
// What a replica holds is bounded the same way: in deliveries (Held per
// endpoint, HeldPerWorkspace, HeldTotal), so that one workspace's backlog
// leaves room for the others' deliveries to be leased, and in bytes (the
// memory budget, per workspace and for the replica: the events' rendered
// bodies, each held once however many of the workspace's endpoints it is
// sent to, and what each delivery's answer and error may take).

import (
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/internal/memory"
)

// jobBytes is what the memory budget charges a held delivery besides its
// event's body: the answer's excerpt and the error it may record (at most
// ExcerptBytes each, as read: send.go reads no more of an answer into
// memory) and the job itself.
const jobBytes = 2*ExcerptBytes + 512

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
	// held: queued in a lane, whose room (and bytes) it holds until
	// recorded.
	held bool
}

type lane struct {
	ws       *workspaceLanes
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

// workspaceLanes are the lanes of one workspace's endpoints.
type workspaceLanes struct {
	id   uuid.UUID
	ring []uuid.UUID // its endpoints with a lane
	next int
	busy int // its jobs handed to the workers, not yet done
	held int // its lanes' held()
}

// heldBody is an event's body held for the jobs that send it.
type heldBody struct {
	body []byte
	refs int
}

type lanes struct {
	mu                                    sync.Mutex
	workers, perEndpoint, held, heldTotal int
	perWorkspace, heldPerWorkspace        int
	// reserve is how many workers stay idle for the workspaces within
	// their share while one past its share has jobs (an eighth).
	reserve    int
	byID       map[uuid.UUID]*lane // by endpoint
	workspaces map[uuid.UUID]*workspaceLanes
	ring       []uuid.UUID // workspaces with a lane
	next       int
	busy       int // jobs handed to the workers, not yet done
	total      int // every lane's held()
	// mem holds the bytes of what is held, by workspace; bodies the
	// events' bodies, by event, so that one is charged once.
	mem    *memory.Budget[uuid.UUID]
	bodies map[uuid.UUID]*heldBody
	// slow endpoints (their last attempt failed or took long) are held
	// no more deliveries than they can be sent at once, twice over: a
	// queue behind a slow endpoint would outlive its leases.
	slow   map[uuid.UUID]bool
	work   chan *job
	closed bool
	// running: the workers run (Dispatcher.Start). Until then nothing is
	// handed to them: what a dispatcher never started leased stays in
	// its lanes, where Close finds it to hand back.
	running bool
	// kick asks for a claim (set by the dispatcher).
	kick func()
}

func newLanes(o Options) *lanes {
	return &lanes{workers: o.Workers, perEndpoint: o.PerEndpoint, held: o.Held, heldTotal: o.HeldTotal,
		perWorkspace: o.PerWorkspace, heldPerWorkspace: o.HeldPerWorkspace, reserve: max(1, o.Workers/8),
		byID: map[uuid.UUID]*lane{}, workspaces: map[uuid.UUID]*workspaceLanes{},
		mem: memory.NewBudget[uuid.UUID](o.Memory, o.MemoryPerWorkspace), bodies: map[uuid.UUID]*heldBody{},
		slow: map[uuid.UUID]bool{}, work: make(chan *job, o.Workers), kick: func() {}}
}

// room is how many more deliveries of workspace ws this replica may hold
// now: its share of the deliveries and of the bytes (counting jobBytes
// each), and what the replica has left.
func (ls *lanes) room(ws uuid.UUID) int {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.roomLocked(ws)
}

func (ls *lanes) roomLocked(ws uuid.UUID) int {
	held := 0
	if w := ls.workspaces[ws]; w != nil {
		held = w.held
	}
	n := min(ls.heldPerWorkspace-held, ls.heldTotal-ls.total)
	// In bytes: what the workspace's share and the replica's ceiling
	// leave, at jobBytes a delivery (their bodies come on top: fill
	// hands back what does not fit). A workspace that holds nothing may
	// always take one.
	bytes := min(ls.mem.Share()-ls.mem.HeldBy(ws), ls.mem.Ceiling()-ls.mem.Held())
	if ls.mem.HeldBy(ws) == 0 {
		bytes = max(bytes, jobBytes)
	}
	return max(0, min(n, int(bytes/jobBytes)))
}

// take grants room for up to want deliveries of endpoint id, of workspace
// ws, which the caller then fills (fill) with the jobs it leased, or
// gives back.
func (ls *lanes) take(id, ws uuid.UUID, want int) int {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.closed || want <= 0 {
		return 0
	}
	limit := ls.held
	if ls.slow[id] {
		limit = min(limit, 2*ls.perEndpoint)
	}
	l := ls.lane(id, ws)
	l.more = false
	n := min(want, limit-l.held(), ls.roomLocked(ws))
	if n <= 0 {
		// Nothing granted: its due deliveries wait for room, which the
		// next recorded attempt of its lane or of its workspace's other
		// lanes gives back (then it asks for a claim), or the next poll
		// finds.
		l.more = l.ws.held > 0
		ls.drop(id, l)
		return 0
	}
	l.reserved += n
	ls.count(l, n)
	return n
}

// count adds n deliveries to what l, its workspace and the replica hold.
func (ls *lanes) count(l *lane, n int) {
	ls.total += n
	l.ws.held += n
}

// fill queues jobs (at most granted, as take granted them) and gives back
// the rest of the grant; more says deliveries were left for lack of it.
// Each job's bytes are reserved, in order: the jobs from the first that
// does not fit its workspace's share or the replica's ceiling on are
// returned, to be released (as are all of them on a closed lanes).
func (ls *lanes) fill(id uuid.UUID, granted int, jobs []*job, more bool) (refused []*job) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l := ls.byID[id]
	if l == nil {
		return jobs // nothing was granted: there are none
	}
	l.reserved -= granted
	ls.count(l, -granted)
	if ls.closed {
		ls.drop(id, l)
		return jobs
	}
	for i, j := range jobs {
		if !ls.charge(l.ws.id, j) {
			refused, jobs = jobs[i:], jobs[:i]
			more = true
			break
		}
		j.held = true
	}
	l.queue = append(l.queue, jobs...)
	ls.count(l, len(jobs))
	l.more = l.more || more
	ls.drop(id, l)
	ls.pump()
	return refused
}

// charge reserves j's bytes for workspace ws: jobBytes, and its body
// unless another held job holds the same event's.
func (ls *lanes) charge(ws uuid.UUID, j *job) bool {
	if j.body == nil {
		return ls.mem.Reserve(ws, jobBytes)
	}
	if b := ls.bodies[j.eventID]; b != nil {
		if !ls.mem.Reserve(ws, jobBytes) {
			return false
		}
		b.refs++
		j.body = b.body // the copy this batch rendered is dropped
		return true
	}
	if !ls.mem.Reserve(ws, jobBytes+int64(len(j.body))) {
		return false
	}
	ls.bodies[j.eventID] = &heldBody{body: j.body, refs: 1}
	return true
}

// uncharge gives back what charge reserved for j.
func (ls *lanes) uncharge(ws uuid.UUID, j *job) {
	n := int64(jobBytes)
	if j.body != nil {
		b := ls.bodies[j.eventID]
		if b.refs--; b.refs == 0 {
			delete(ls.bodies, j.eventID)
			n += int64(len(b.body))
		}
	}
	ls.mem.Release(ws, n)
}

// lane returns endpoint id's lane, made on first use in workspace ws's.
func (ls *lanes) lane(id, ws uuid.UUID) *lane {
	l := ls.byID[id]
	if l == nil {
		w := ls.workspaces[ws]
		if w == nil {
			w = &workspaceLanes{id: ws}
			ls.workspaces[ws] = w
			ls.ring = append(ls.ring, ws)
		}
		l = &lane{ws: w}
		ls.byID[id] = l
		w.ring = append(w.ring, id)
	}
	return l
}

// drop forgets an empty lane (its slowness is kept), and its workspace's
// once it has none.
func (ls *lanes) drop(id uuid.UUID, l *lane) {
	if l.held() > 0 || l.more {
		return
	}
	delete(ls.byID, id)
	w := l.ws
	w.ring, w.next = without(w.ring, w.next, id)
	if len(w.ring) == 0 {
		delete(ls.workspaces, w.id)
		ls.ring, ls.next = without(ls.ring, ls.next, w.id)
	}
}

// without removes id from ring, keeping next on the entry it was on.
func without(ring []uuid.UUID, next int, id uuid.UUID) ([]uuid.UUID, int) {
	for i, r := range ring {
		if r == id {
			if next > i {
				next--
			}
			return append(ring[:i], ring[i+1:]...), next
		}
	}
	return ring, next
}

// start has the workers handed what is queued, and from then on.
func (ls *lanes) start() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.running = true
	ls.pump()
}

// pump hands queued jobs to idle workers: one workspace after the other,
// and in each one endpoint after the other; past a workspace's share only
// while more than the reserve stays idle.
func (ls *lanes) pump() {
	for ls.running && !ls.closed && ls.busy < ls.workers && len(ls.ring) > 0 {
		if !ls.handOne(false) && (ls.workers-ls.busy <= ls.reserve || !ls.handOne(true)) {
			return
		}
	}
}

// handOne hands an idle worker the next job of the workspaces within their
// share, or (beyond) of any workspace; false when there is none.
func (ls *lanes) handOne(beyond bool) bool {
	for range len(ls.ring) {
		if ls.next >= len(ls.ring) {
			ls.next = 0
		}
		w := ls.workspaces[ls.ring[ls.next]]
		ls.next++
		if w.busy >= ls.perWorkspace && !beyond {
			continue
		}
		if j := ls.nextOf(w); j != nil {
			w.busy++
			ls.busy++
			ls.work <- j // never blocks: busy < workers = cap(work)
			return true
		}
	}
	return false
}

// nextOf takes the next job of w's lanes that may be sent now, if any.
func (ls *lanes) nextOf(w *workspaceLanes) *job {
	for range len(w.ring) {
		if w.next >= len(w.ring) {
			w.next = 0
		}
		l := ls.byID[w.ring[w.next]]
		w.next++
		if len(l.queue) == 0 || l.inflight >= ls.perEndpoint {
			continue
		}
		j := l.queue[0]
		l.queue[0] = nil
		l.queue = l.queue[1:]
		l.inflight++
		return j
	}
	return nil
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
	l.ws.busy--
	ls.busy--
	ls.pump()
}

// recorded is told that the outcomes of jobs have been written (or given
// up on): the room and the bytes they held are free.
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
		ls.count(l, -1)
		ls.uncharge(l.ws.id, j)
		if !ls.closed && ls.waiting(l) {
			ls.kick()
		}
		ls.drop(id, l)
	}
}

// waiting reports whether l, or another lane of its workspace, ran dry
// with deliveries left for lack of room (the room just freed may be
// theirs), and forgets that they did: the claim it asks for finds them.
func (ls *lanes) waiting(l *lane) bool {
	waiting := false
	// Backwards: drop removes the entry in place, shifting those after
	// it, which were seen.
	for i := len(l.ws.ring) - 1; i >= 0; i-- {
		id := l.ws.ring[i]
		if o := ls.byID[id]; o.more && len(o.queue) == 0 {
			o.more, waiting = false, true
			if o != l {
				ls.drop(id, o)
			}
		}
	}
	return waiting
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
