package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// LoadConfig is one run of the load tool.
type LoadConfig struct {
	URL      string // base URL, e.g. http://127.0.0.1:8080
	Token    string
	Clients  int
	Duration time.Duration
	// MaxRequests bounds the run's total requests (0: no bound but Duration).
	MaxRequests int
	// API is "rest" or "graphql".
	API string
	// WriteRatio is the share of requests that write (0: read-only).
	WriteRatio float64
	// PageSize is the list page requested (default 50, at most 100).
	// GraphQL's list selects every field and each procedure's newest 3
	// comments (what REST shows when procedures have at most 3, as
	// seeded).
	PageSize int
	// IdempotencyKeys sends every write with an Idempotency-Key of its own
	// (the same on each of its retries).
	IdempotencyKeys bool
	// Retries is how many times a request is sent again after a client
	// timeout, a transport error, a 503, or a 409 whose Idempotency-Key is
	// still in progress (0: never). Writes are retried only with
	// IdempotencyKeys: without a key a retried write may run twice.
	Retries int
	// RetryBackoff is the pause before the first retry, doubled for each
	// next one up to a second, with jitter (default 10ms).
	RetryBackoff time.Duration
	// RequestTimeout bounds each attempt on the client side (0: 30 s);
	// a tiny one injects timeouts, which retries with the same key must
	// survive without duplicating a write.
	RequestTimeout time.Duration
	// Mix is what reads and writes do: "create" (the default: reads list
	// one page, writes create procedures of the run's own and delete some,
	// verified at the end), "update" (the realistic mix: reads spread over
	// five list shapes, writes changing the priority of existing
	// procedures, verified at the end) or "dashboard" (GraphQL only: reads
	// are DashboardQuery, every answer checked by CheckDashboard, writes
	// are the update mix's).
	Mix string
	// Pool is how many existing procedures the update and dashboard mixes
	// sample at start and write to (default 500); each client writes to its
	// own share.
	Pool int
	// CheckEvery is how often the dashboard mix checks an answer with
	// CheckDashboard: every answer (0 or 1, the default) or each client's
	// every CheckEvery-th. A check decodes the whole answer, about 130 KB,
	// which costs the client CPU the server may need on a small machine;
	// answers not checked are still read for errors.
	CheckEvery int
}

// Mixes of the load tool.
const (
	MixCreate    = "create"
	MixUpdate    = "update"
	MixDashboard = "dashboard"
)

// updates reports whether mix's writes are priority updates of a sampled
// pool (verified by verifyUpdates).
func updates(mix string) bool { return mix == MixUpdate || mix == MixDashboard }

// Report is what a run measured.
type Report struct {
	Requests    int
	Errors      map[string]int // by error code (or HTTP status)
	Elapsed     time.Duration
	P50         time.Duration
	P90         time.Duration
	P99         time.Duration
	Max         time.Duration
	Created     int
	Deleted     int
	Verified    bool
	VerifyNotes []string
	// Attempts counts HTTP requests sent, retries included.
	Attempts int
	// Timeouts counts attempts that hit RequestTimeout.
	Timeouts int
	// Retries counts attempts after the first of a request.
	Retries int
	// Replays counts answers marked Idempotent-Replayed.
	Replays int
	// InProgress counts 409s of an Idempotency-Key still in progress.
	InProgress int
	// Unacknowledged counts creates that ended without a success (out of
	// retries, or cut by the end of the run): each may exist at most once.
	Unacknowledged int
	// UnacknowledgedDeletes counts deletes that ended without a success:
	// each may or may not have run, so their procedures are not verified.
	UnacknowledgedDeletes int
	// Duplicates counts creates found more than once at verification.
	Duplicates int
	// Reads and Writes split Requests; the percentiles below split P50..P99.
	Reads, Writes                int
	ReadP50, ReadP90, ReadP99    time.Duration
	WriteP50, WriteP90, WriteP99 time.Duration
	// Update and dashboard mixes: PoolSize procedures sampled, Updated
	// acknowledged updates, Checked procedures whose priority was verified,
	// Uncertain those of them whose last update was never acknowledged
	// (either value passes).
	PoolSize, Updated, Checked, Uncertain int
	// Dashboard mix: ShapeChecked answers checked by CheckDashboard (those
	// failing it are also counted in Errors), ShapeNotes the first failures.
	ShapeChecked int
	ShapeNotes   []string
}

// RequestsPerSecond is the run's throughput.
func (r *Report) RequestsPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// Print writes the report as the table docs/performance.md uses.
func (r *Report) Print(w io.Writer, cfg LoadConfig) {
	if cfg.PageSize == 0 {
		cfg.PageSize = 50
	}
	mix := ""
	switch cfg.Mix {
	case MixUpdate:
		mix = fmt.Sprintf(" mix=update pool=%d", r.PoolSize)
	case MixDashboard:
		mix = fmt.Sprintf(" mix=dashboard pool=%d projects=%d procedures=%d comments=%d", r.PoolSize, DashboardProjects, DashboardProcedures, DashboardComments)
	}
	page := fmt.Sprintf(" page=%d", cfg.PageSize)
	if cfg.Mix == MixDashboard {
		page = "" // the dashboard's page sizes are its own
	}
	fmt.Fprintf(w, "api=%s clients=%d duration=%s write_ratio=%.2f%s%s\n", cfg.API, cfg.Clients, r.Elapsed.Round(time.Millisecond), cfg.WriteRatio, page, mix)
	fmt.Fprintf(w, "requests=%d req/s=%.1f p50=%s p90=%s p99=%s max=%s\n", r.Requests, r.RequestsPerSecond(),
		r.P50.Round(10*time.Microsecond), r.P90.Round(10*time.Microsecond), r.P99.Round(10*time.Microsecond), r.Max.Round(10*time.Microsecond))
	if updates(cfg.Mix) {
		rate := func(n int) float64 {
			if r.Elapsed <= 0 {
				return 0
			}
			return float64(n) / r.Elapsed.Seconds()
		}
		rd := func(d time.Duration) time.Duration { return d.Round(10 * time.Microsecond) }
		fmt.Fprintf(w, "reads=%d reads/s=%.1f read_p50=%s read_p90=%s read_p99=%s\n", r.Reads, rate(r.Reads), rd(r.ReadP50), rd(r.ReadP90), rd(r.ReadP99))
		fmt.Fprintf(w, "writes=%d writes/s=%.1f write_p50=%s write_p90=%s write_p99=%s\n", r.Writes, rate(r.Writes), rd(r.WriteP50), rd(r.WriteP90), rd(r.WriteP99))
	}
	printErrors(w, r.Errors)
	if cfg.Mix == MixDashboard {
		status := "OK"
		if len(r.ShapeNotes) > 0 {
			status = "FAILED"
		}
		fmt.Fprintf(w, "dashboard: checked=%d of %d shape=%s\n", r.ShapeChecked, r.Reads, status)
		for _, n := range r.ShapeNotes {
			fmt.Fprintf(w, "  %s\n", n)
		}
	}
	if cfg.IdempotencyKeys || cfg.Retries > 0 || cfg.RequestTimeout > 0 {
		fmt.Fprintf(w, "retries: keys=%t max=%d timeout=%s attempts=%d timeouts=%d retries=%d replays=%d in_progress=%d unacknowledged=%d unacknowledged_deletes=%d\n",
			cfg.IdempotencyKeys, cfg.Retries, cfg.RequestTimeout, r.Attempts, r.Timeouts, r.Retries, r.Replays, r.InProgress, r.Unacknowledged, r.UnacknowledgedDeletes)
	}
	if cfg.WriteRatio > 0 {
		status := "OK"
		if !r.Verified {
			status = "FAILED"
		}
		if updates(cfg.Mix) {
			fmt.Fprintf(w, "updates: acknowledged=%d checked=%d uncertain=%d verification=%s\n", r.Updated, r.Checked, r.Uncertain, status)
		} else {
			fmt.Fprintf(w, "writes: created=%d deleted=%d duplicates=%d verification=%s\n", r.Created, r.Deleted, r.Duplicates, status)
		}
		for _, n := range r.VerifyNotes {
			fmt.Fprintf(w, "  %s\n", n)
		}
	}
}

// Load runs cfg against a live server and verifies, at the end, every
// acknowledged write (the create mix: every acknowledged create exists
// exactly once and every acknowledged delete is gone; the update and
// dashboard mixes: every procedure written reads back with its last
// acknowledged priority). The dashboard mix also checks its answers as they
// come.
func Load(ctx context.Context, cfg LoadConfig) (*Report, error) {
	if cfg.Clients <= 0 || cfg.Duration <= 0 || cfg.URL == "" || cfg.Token == "" {
		return nil, errors.New("load: url, token, clients and duration are required")
	}
	if cfg.API != "rest" && cfg.API != "graphql" {
		return nil, fmt.Errorf("load: api must be rest or graphql, not %q", cfg.API)
	}
	if cfg.PageSize == 0 {
		cfg.PageSize = 50
	}
	if cfg.Retries < 0 || cfg.RequestTimeout < 0 || cfg.RetryBackoff < 0 {
		return nil, errors.New("load: retries, retry backoff and request timeout must not be negative")
	}
	if cfg.RetryBackoff == 0 {
		cfg.RetryBackoff = 10 * time.Millisecond
	}
	cfg.URL = strings.TrimRight(cfg.URL, "/")
	tr := &http.Transport{MaxIdleConns: cfg.Clients * 2, MaxIdleConnsPerHost: cfg.Clients * 2}
	c := &client{cfg: cfg, http: &http.Client{Transport: tr, Timeout: 30 * time.Second},
		runID: strconv.FormatInt(time.Now().UnixNano(), 36)}
	if cfg.RequestTimeout > 0 {
		c.http.Timeout = 0 // each attempt has its own deadline
	}
	if cfg.Mix == "" {
		cfg.Mix = MixCreate
	}
	if cfg.Mix != MixCreate && !updates(cfg.Mix) {
		return nil, fmt.Errorf("load: mix must be create, update or dashboard, not %q", cfg.Mix)
	}
	if cfg.Mix == MixDashboard && cfg.API != "graphql" {
		return nil, errors.New("load: mix dashboard reads nested connections, which only GraphQL has: use api graphql")
	}
	if cfg.Pool <= 0 {
		cfg.Pool = 500
	}
	if cfg.CheckEvery <= 0 {
		cfg.CheckEvery = 1
	}
	c.cfg = cfg
	var pool []*target
	switch {
	case updates(cfg.Mix):
		var err error
		if cfg.Mix == MixUpdate && cfg.API == "graphql" {
			if c.page2, err = c.secondPage(ctx); err != nil {
				return nil, err
			}
		}
		if cfg.WriteRatio > 0 {
			if pool, err = c.samplePool(ctx); err != nil {
				return nil, err
			}
		}
	case cfg.WriteRatio > 0:
		var err error
		if c.refs, err = c.lookupRefs(ctx); err != nil {
			return nil, err
		}
	}
	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	var (
		mu      sync.Mutex
		results []outcome
		created = map[string]string{} // id -> unique name
		deleted []string
		unacked []string // names of creates never acknowledged
		// unackedDeletes counts deletes never acknowledged.
		unackedDeletes int
		budget         = cfg.MaxRequests
		budgetMu       sync.Mutex
	)
	take := func() bool {
		if cfg.MaxRequests == 0 {
			return true
		}
		budgetMu.Lock()
		defer budgetMu.Unlock()
		if budget == 0 {
			return false
		}
		budget--
		return true
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < cfg.Clients; i++ {
		wg.Add(1)
		go func(worker int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(worker), 42))
			var local []outcome
			var mine []string
			var own []*target // this client's share of the pool
			for j := worker; j < len(pool); j += cfg.Clients {
				own = append(own, pool[j])
			}
			seq := 0
			reads := 0 // dashboard answers read, to check every CheckEvery-th
			for runCtx.Err() == nil && take() {
				var o outcome
				switch {
				case updates(cfg.Mix) && len(own) > 0 && rng.Float64() < cfg.WriteRatio:
					t := own[rng.IntN(len(own))]
					prio := otherPriority(rng, t.priority)
					key := c.newKey()
					o = c.timed(runCtx, true, func(ctx context.Context) (string, error) { return "", c.update(ctx, t.shortID, prio, key) })
					t.written = true
					if o.code == "" {
						t.priority, t.pending = prio, nil
					} else {
						t.pending = append(t.pending, prio)
					}
				case cfg.Mix == MixDashboard:
					check := reads%cfg.CheckEvery == 0
					reads++
					o = c.timed(runCtx, false, func(ctx context.Context) (string, error) { return "", c.dashboard(ctx, check) })
				case cfg.Mix == MixUpdate:
					shape := rng.IntN(len(restShapes))
					o = c.timed(runCtx, false, func(ctx context.Context) (string, error) { return "", c.listShape(ctx, shape) })
				case rng.Float64() < cfg.WriteRatio && len(mine) > 0 && rng.IntN(3) == 0:
					id := mine[len(mine)-1]
					mine = mine[:len(mine)-1]
					key := c.newKey()
					o = c.timed(runCtx, true, func(ctx context.Context) (string, error) { return "", c.delete(ctx, id, key) })
					mu.Lock()
					// A delete never acknowledged may have run: its
					// procedure is neither known to exist nor known gone.
					delete(created, id)
					if o.code == "" {
						deleted = append(deleted, id)
					} else {
						unackedDeletes++
					}
					mu.Unlock()
				case rng.Float64() < cfg.WriteRatio:
					seq++
					// The trailing dot keeps one name from being a substring of another.
					name := fmt.Sprintf("load-%s-%d-%d.", c.runID, worker, seq)
					var id string
					key := c.newKey()
					o = c.timed(runCtx, true, func(ctx context.Context) (string, error) {
						var err error
						id, err = c.create(ctx, name, key)
						return id, err
					})
					mu.Lock()
					if o.code == "" {
						mine = append(mine, id)
						created[id] = name
					} else {
						unacked = append(unacked, name)
					}
					mu.Unlock()
				default:
					o = c.timed(runCtx, false, c.list)
				}
				if runCtx.Err() != nil && o.code == "canceled" {
					break
				}
				local = append(local, o)
			}
			mu.Lock()
			results = append(results, local...)
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	rep := &Report{Elapsed: time.Since(start), Errors: map[string]int{}, Requests: len(results), Deleted: len(deleted), PoolSize: len(pool)}
	lat := make([]time.Duration, 0, len(results))
	var readLat, writeLat []time.Duration
	for _, o := range results {
		lat = append(lat, o.latency)
		if o.write {
			writeLat = append(writeLat, o.latency)
			if o.code == "" && updates(cfg.Mix) {
				rep.Updated++
			}
		} else {
			readLat = append(readLat, o.latency)
		}
		if o.code != "" {
			rep.Errors[o.code]++
		}
	}
	rep.Reads, rep.Writes = len(readLat), len(writeLat)
	rep.P50, rep.P90, rep.P99, rep.Max = percentiles(lat)
	rep.ReadP50, rep.ReadP90, rep.ReadP99, _ = percentiles(readLat)
	rep.WriteP50, rep.WriteP90, rep.WriteP99, _ = percentiles(writeLat)
	rep.Created = len(created) + len(deleted) + unackedDeletes
	rep.UnacknowledgedDeletes = unackedDeletes
	rep.Attempts, rep.Timeouts, rep.Retries = int(c.attempts.Load()), int(c.timeouts.Load()), int(c.retries.Load())
	rep.Replays, rep.InProgress, rep.Unacknowledged = int(c.replays.Load()), int(c.inProgressCount.Load()), len(unacked)
	rep.ShapeChecked, rep.ShapeNotes = int(c.shapeChecked.Load()), c.shapeNotes
	switch {
	case cfg.WriteRatio > 0 && updates(cfg.Mix):
		rep.Verified, rep.Checked, rep.Uncertain, rep.VerifyNotes = c.verifyUpdates(ctx, pool)
	case cfg.WriteRatio > 0:
		rep.Verified, rep.Duplicates, rep.VerifyNotes = c.verify(ctx, created, deleted, unacked)
	}
	return rep, nil
}

// percentiles sorts lat and returns its p50, p90, p99 and max.
func percentiles(lat []time.Duration) (p50, p90, p99, maximum time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	return pct(0.50), pct(0.90), pct(0.99), pct(1)
}

// printErrors prints a report's errors by kind, sorted, or "errors: none":
// the line format measure.sh and the tests read.
func printErrors(w io.Writer, errs map[string]int) {
	kinds := make([]string, 0, len(errs))
	for k := range errs {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	if len(kinds) == 0 {
		fmt.Fprintln(w, "errors: none")
	}
	for _, k := range kinds {
		fmt.Fprintf(w, "errors[%s]=%d\n", k, errs[k])
	}
}
