// Package webhooks sends a workspace's events to the URLs its admins
// registered (docs/webhooks.md). The change log is the outbox: every write
// appends its event in its own transaction (internal/core, changelog.go)
// and never touches this package's tables, so an endpoint that is down
// costs no write any latency. A Dispatcher, running in every replica,
// does the rest:
//
//   - fan-out (fanout.go): for each enabled endpoint behind its
//     workspace's version, one transaction locks the endpoint, reads the
//     events after its cursor, queues a delivery for each event its
//     filters match and advances the cursor past every event it examined:
//     one delivery per endpoint and event, whatever the replicas and
//     restarts;
//   - sending (claim.go, lanes.go, send.go): due deliveries are leased,
//     workspace by workspace, within bounds per workspace (deliveries and
//     bytes held), sent outside any transaction by a bounded pool of
//     workers shared fairly (at most PerWorkspace at once for one
//     workspace, PerEndpoint for one endpoint), signed (signature.go),
//     through a client that refuses private addresses (client.go,
//     internal/egress);
//   - recording (record.go): outcomes in batches; a failure is retried on
//     the schedule (Options.Schedule), then given up; an endpoint failing
//     for long enough is disabled.
//
// Delivery is at least once: a replica that dies between sending and
// recording leaves a lease that expires, and the delivery is sent again.
// Receivers deduplicate by the Procsvc-Event-Id header.
package webhooks

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/webhookendpoint"
	"github.com/procsvc/procsvc/internal/defaults"
	"github.com/procsvc/procsvc/internal/viewer"
)

// Defaults of Options.
const (
	DefaultWorkers         = 32
	DefaultPollInterval    = time.Second
	DefaultDisableAfter    = 3 * 24 * time.Hour
	DefaultDisableFailures = 20
	// DefaultJitter spreads each retry by up to ±10% of its delay, so
	// that the deliveries of one outage do not all come back at once.
	DefaultJitter = 0.1
	// DefaultFanOutEndpoints bounds the endpoints one fan-out transaction
	// locks, DefaultFanOutEvents the events it reads of each workspace.
	DefaultFanOutEndpoints = 50
	DefaultFanOutEvents    = 100
	// DefaultHeld bounds the deliveries of one endpoint this replica holds
	// leased at once (queued and being sent), DefaultHeldTotal those of
	// every endpoint: what a replica keeps in memory.
	DefaultHeld      = 256
	DefaultHeldTotal = 4096
	// DefaultMemory bounds the bytes of webhook work a replica holds
	// (Options.Memory, --webhook-memory-mb): a quarter of it for one
	// workspace.
	DefaultMemory = 64 << 20
	// DefaultRecordBatch bounds the outcomes one transaction records.
	DefaultRecordBatch = 1000
	// DefaultFanOutWindow is the least time between two fan-outs.
	DefaultFanOutWindow = 20 * time.Millisecond
)

// DefaultSchedule is the wait before each retry of a failed delivery: 8
// retries, the last some 37 hours after the first attempt (with jitter,
// about a day and a half).
var DefaultSchedule = []time.Duration{
	time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour, 10 * time.Hour,
}

// Options tune a Dispatcher; zero values take the defaults above.
type Options struct {
	// Workers bounds the attempts this replica makes at once.
	Workers int
	// PerEndpoint bounds the attempts this replica makes at once to one
	// endpoint, so that a slow endpoint cannot take every worker (0:
	// Workers/4, at least 1).
	PerEndpoint int
	// PerWorkspace is one workspace's share of the attempts this replica
	// makes at once (0: half of Workers, rounded up): past it, a workspace
	// is handed a worker only when no workspace within its share has a job
	// and an eighth of the workers would still be idle (lanes.go), so that
	// a workspace alone uses nearly every worker and one whose endpoints
	// all hang leaves the others workers at once.
	PerWorkspace int
	// Timeout bounds one attempt (DefaultTimeout): connecting, sending
	// and reading the answer. An attempt that takes longer has failed.
	Timeout time.Duration
	// AllowPrivate lets deliveries connect to loopback, private,
	// link-local and other non-public addresses (client.go). Off in
	// production unless the operator means it; tests set it.
	AllowPrivate bool
	// PollInterval is how often the log and the due deliveries are looked
	// at when nothing wakes the dispatcher sooner.
	PollInterval time.Duration
	// Wake, when set, wakes the fan-out (as Notify does) each time a
	// value arrives.
	Wake <-chan struct{}
	// Schedule is the wait before each retry (DefaultSchedule): a delivery
	// is attempted len(Schedule)+1 times at most.
	Schedule []time.Duration
	// Jitter spreads each wait by up to ±Jitter of itself
	// (DefaultJitter); negative: none.
	Jitter float64
	// DisableAfter and DisableFailures: an endpoint whose deliveries have
	// all failed for DisableAfter, at least DisableFailures of them in a
	// row, is disabled.
	DisableAfter    time.Duration
	DisableFailures int
	// Lease is how long a replica holds a delivery it is to send (at least
	// Timeout plus 10s; default three times Timeout plus 5s); another
	// replica sends it once the lease is over.
	Lease time.Duration
	// FanOutWindow is the least time between two fan-outs (0:
	// DefaultFanOutWindow; negative: none): what an event may wait for
	// others to be fanned out with it. It bounds the fan-out's
	// transactions, and on SQLite how often they take the write lock,
	// whatever the rate of commits.
	FanOutWindow time.Duration
	// FanOutEndpoints, FanOutEvents, Held, HeldTotal, RecordBatch: the
	// batch bounds above.
	FanOutEndpoints int
	FanOutEvents    int
	Held            int
	HeldTotal       int
	RecordBatch     int
	// HeldPerWorkspace bounds the deliveries of one workspace this
	// replica holds leased (0: half of HeldTotal), so that a workspace's
	// backlog leaves room to lease the others' deliveries.
	HeldPerWorkspace int
	// Memory bounds the bytes of webhook work this replica holds (0:
	// DefaultMemory): the bodies of the deliveries it holds leased (an
	// event's once, however many endpoints it goes to) and what their
	// answers and errors may take; MemoryPerWorkspace bounds one
	// workspace's (0: a quarter of Memory). Deliveries that do not fit
	// are left to be leased once some are recorded.
	Memory             int64
	MemoryPerWorkspace int64
	// Resolver resolves the endpoints' names (nil: the default
	// resolver). Tests set one that answers what they need.
	Resolver *net.Resolver
	// Log receives what goes wrong (nil: discarded).
	Log *slog.Logger
	// Observe, when set, is told each recorded attempt (metrics).
	Observe func(Attempt)
}

// Attempt is one recorded attempt, for Options.Observe.
type Attempt struct {
	// Outcome is "succeeded", "retrying" (failed, to be retried) or
	// "failed" (failed for the last time).
	Outcome string
	// Duration is how long the attempt took (0: none was made, its event
	// being gone).
	Duration time.Duration
	// Lag is how long after its event was committed the attempt ended (0:
	// unknown, its event being gone).
	Lag time.Duration
}

func (o Options) withDefaults() Options {
	defaults.Positive(&o.Workers, DefaultWorkers)
	if o.PerEndpoint <= 0 {
		o.PerEndpoint = max(1, o.Workers/4)
	}
	if o.PerWorkspace <= 0 {
		o.PerWorkspace = (o.Workers + 1) / 2
	}
	defaults.Positive(&o.Timeout, DefaultTimeout)
	defaults.Positive(&o.PollInterval, DefaultPollInterval)
	if o.Schedule == nil {
		o.Schedule = DefaultSchedule
	}
	if o.Jitter == 0 {
		o.Jitter = DefaultJitter
	}
	defaults.Positive(&o.DisableAfter, DefaultDisableAfter)
	defaults.Positive(&o.DisableFailures, DefaultDisableFailures)
	// A job is attempted only while its lease has Timeout+leaseMargin to
	// run (send.go): the lease leaves it that, and twice Timeout to wait
	// in its lane.
	if least := o.Timeout + 2*leaseMargin; o.Lease < least {
		o.Lease = max(least, 3*o.Timeout+leaseMargin)
	}
	if o.FanOutWindow == 0 {
		o.FanOutWindow = DefaultFanOutWindow
	}
	defaults.Positive(&o.FanOutEndpoints, DefaultFanOutEndpoints)
	defaults.Positive(&o.FanOutEvents, DefaultFanOutEvents)
	defaults.Positive(&o.Held, DefaultHeld)
	defaults.Positive(&o.HeldTotal, DefaultHeldTotal)
	if o.HeldPerWorkspace <= 0 {
		o.HeldPerWorkspace = max(1, o.HeldTotal/2)
	}
	defaults.Positive(&o.Memory, DefaultMemory)
	if o.MemoryPerWorkspace <= 0 || o.MemoryPerWorkspace > o.Memory {
		o.MemoryPerWorkspace = max(1, o.Memory/4)
	}
	defaults.Positive(&o.RecordBatch, DefaultRecordBatch)
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return o
}

// Dispatcher fans the change log out to endpoints and sends the
// deliveries. Every replica runs one; they share the work through the
// database.
type Dispatcher struct {
	client   *ent.Client
	postgres bool
	opts     Options
	http     *http.Client
	log      *slog.Logger

	// ctx is the system's (the dispatcher reads every workspace), ended
	// by Close.
	ctx    context.Context
	cancel context.CancelFunc

	fanOutKick chan struct{}
	claimKick  chan struct{}
	lanes      *lanes
	results    chan result
	loops      sync.WaitGroup // fan-out and claim
	workers    sync.WaitGroup
	recorder   sync.WaitGroup

	// fanOutAfter is the id after which the next fan-out looks for
	// endpoints, so that a busy first batch cannot starve the rest.
	fanOutAfter uuid.UUID
	// claimFrom rotates the workspace claims start from, likewise, and
	// claimNext the endpoint they start from in each workspace.
	claimFrom int
	claimNext map[uuid.UUID]int

	randMu sync.Mutex
	rand   *rand.Rand

	startOnce, closeOnce sync.Once
}

// New returns a dispatcher over client, whose database is of dialect
// ("postgres" or "sqlite"). Start starts it.
func New(client *ent.Client, dialect string, opts Options) *Dispatcher {
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(viewer.System(context.Background()))
	d := &Dispatcher{
		client: client, postgres: dialect == "postgres", opts: opts, log: opts.Log.With("component", "webhooks"),
		http: newClient(opts.AllowPrivate, opts.PerEndpoint, opts.Resolver),
		ctx:  ctx, cancel: cancel,
		fanOutKick: make(chan struct{}, 1), claimKick: make(chan struct{}, 1),
		// Room for every result the lanes can hold: a worker never waits
		// for the recorder, which takes what has come while it wrote.
		results: make(chan result, opts.HeldTotal+opts.Workers),
		rand:    rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
	}
	d.lanes = newLanes(opts)
	// A lane that ran dry with deliveries left in the database asks for
	// a claim at once, not at the next poll.
	d.lanes.kick = func() { kick(d.claimKick) }
	return d
}

// Start runs the dispatcher's loops until Close.
func (d *Dispatcher) Start() {
	d.startOnce.Do(func() {
		for range d.opts.Workers {
			d.workers.Add(1)
			go d.work()
		}
		d.lanes.start()
		d.recorder.Add(1)
		go d.record()
		d.loops.Add(2)
		go d.fanOutLoop()
		go d.claimLoop()
	})
}

// Notify wakes the fan-out: a change has committed. It never blocks (the
// server calls it from events.Hub.Observe, under the hub's lock).
func (d *Dispatcher) Notify() { kick(d.fanOutKick) }

func kick(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Close stops the dispatcher: no more fan-out or claims; deliveries held
// but not yet being sent are handed back (their leases cleared, for any
// replica to send); attempts under way finish (within Timeout) and are
// recorded.
func (d *Dispatcher) Close() {
	d.closeOnce.Do(func() {
		d.cancel()
		started := true
		d.startOnce.Do(func() { started = false }) // a dispatcher never started stays so
		d.loops.Wait()
		queued := d.lanes.close()
		if !started {
			// No recorder runs: what FanOutNow or ClaimNow leased is
			// handed back here.
			var released []result
			for _, j := range queued {
				released = append(released, result{job: j, released: true})
			}
			if len(released) > 0 {
				d.flush(released)
			}
			return
		}
		for _, j := range queued {
			d.results <- result{job: j, released: true}
		}
		d.workers.Wait()
		close(d.results)
		d.recorder.Wait()
		d.http.CloseIdleConnections()
	})
}

// fanOutLoop runs the fan-out when woken, and every PollInterval.
func (d *Dispatcher) fanOutLoop() {
	defer d.loops.Done()
	tick := time.NewTicker(d.opts.PollInterval)
	defer tick.Stop()
	wake := d.opts.Wake
	// none: the last poll found no enabled endpoint at all. Wake-ups are
	// then ignored until the next poll finds one (its first events wait
	// for it): a server without webhooks reads nothing per commit.
	none := false
	for {
		select {
		case <-d.ctx.Done():
			return
		case <-d.fanOutKick:
		case _, ok := <-wake:
			if !ok {
				wake = nil
			}
		case <-tick.C:
			any, err := d.client.WebhookEndpoint.Query().Where(webhookendpoint.Enabled(true)).Exist(d.ctx)
			none = err == nil && !any
		}
		if none {
			continue
		}
		for {
			more, err := d.fanOut(d.ctx)
			if err != nil {
				if d.ctx.Err() == nil {
					d.log.Warn("webhooks: fan-out failed", "error", err.Error())
				}
				break
			}
			if !more {
				break
			}
		}
		// The commits announced meanwhile wait for the window to pass
		// (Notify keeps one wake-up): under load, one transaction fans
		// out the events of many commits.
		select {
		case <-d.ctx.Done():
			return
		case <-time.After(d.opts.FanOutWindow):
		}
	}
}

// claimLoop claims due deliveries when woken (a worker's lane ran low
// after a full claim), and every PollInterval.
func (d *Dispatcher) claimLoop() {
	defer d.loops.Done()
	tick := time.NewTicker(d.opts.PollInterval)
	defer tick.Stop()
	for {
		select {
		case <-d.ctx.Done():
			return
		case <-d.claimKick:
		case <-tick.C:
		}
		if err := d.claim(d.ctx); err != nil && d.ctx.Err() == nil {
			d.log.Warn("webhooks: claiming deliveries failed", "error", err.Error())
		}
	}
}

// retryAt is when a delivery that failed its attempts-th attempt is
// tried again; ok is false when that was its last.
func (d *Dispatcher) retryAt(attempts int, now time.Time) (at time.Time, ok bool) {
	if attempts > len(d.opts.Schedule) {
		return time.Time{}, false
	}
	wait := d.opts.Schedule[attempts-1]
	if d.opts.Jitter > 0 {
		d.randMu.Lock()
		f := 1 + d.opts.Jitter*(2*d.rand.Float64()-1)
		d.randMu.Unlock()
		wait = time.Duration(float64(wait) * f)
	}
	return now.Add(wait), true
}

// now is the time the dispatcher stamps, as the database stores it.
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }
