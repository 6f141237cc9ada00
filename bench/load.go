package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	// Mix is what writes do: "create" (the default: create procedures of
	// the run's own and delete some, verified at the end) or "update" (the
	// realistic mix: reads spread over five list shapes, writes changing the
	// priority of existing procedures, verified at the end).
	Mix string
	// Pool is how many existing procedures the update mix samples at start
	// and writes to (default 500); each client writes to its own share.
	Pool int
}

// Mixes of the load tool.
const (
	MixCreate = "create"
	MixUpdate = "update"
)

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
	// Duplicates counts creates found more than once at verification.
	Duplicates int
	// Reads and Writes split Requests; the percentiles below split P50..P99.
	Reads, Writes                int
	ReadP50, ReadP90, ReadP99    time.Duration
	WriteP50, WriteP90, WriteP99 time.Duration
	// Update mix: PoolSize procedures sampled, Updated acknowledged
	// updates, Checked procedures whose priority was verified, Uncertain
	// those of them whose last update was never acknowledged (either value
	// passes).
	PoolSize, Updated, Checked, Uncertain int
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
	if cfg.Mix == MixUpdate {
		mix = fmt.Sprintf(" mix=update pool=%d", r.PoolSize)
	}
	fmt.Fprintf(w, "api=%s clients=%d duration=%s write_ratio=%.2f page=%d%s\n", cfg.API, cfg.Clients, r.Elapsed.Round(time.Millisecond), cfg.WriteRatio, cfg.PageSize, mix)
	fmt.Fprintf(w, "requests=%d req/s=%.1f p50=%s p90=%s p99=%s max=%s\n", r.Requests, r.RequestsPerSecond(),
		r.P50.Round(10*time.Microsecond), r.P90.Round(10*time.Microsecond), r.P99.Round(10*time.Microsecond), r.Max.Round(10*time.Microsecond))
	if cfg.Mix == MixUpdate {
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
	if cfg.IdempotencyKeys || cfg.Retries > 0 || cfg.RequestTimeout > 0 {
		fmt.Fprintf(w, "retries: keys=%t max=%d timeout=%s attempts=%d timeouts=%d retries=%d replays=%d in_progress=%d unacknowledged=%d\n",
			cfg.IdempotencyKeys, cfg.Retries, cfg.RequestTimeout, r.Attempts, r.Timeouts, r.Retries, r.Replays, r.InProgress, r.Unacknowledged)
	}
	if cfg.WriteRatio > 0 {
		status := "OK"
		if !r.Verified {
			status = "FAILED"
		}
		if cfg.Mix == MixUpdate {
			fmt.Fprintf(w, "updates: acknowledged=%d checked=%d uncertain=%d verification=%s\n", r.Updated, r.Checked, r.Uncertain, status)
		} else {
			fmt.Fprintf(w, "writes: created=%d deleted=%d duplicates=%d verification=%s\n", r.Created, r.Deleted, r.Duplicates, status)
		}
		for _, n := range r.VerifyNotes {
			fmt.Fprintf(w, "  %s\n", n)
		}
	}
}

// refs are the ids a write needs.
type refs struct{ project, category, member string }

type client struct {
	cfg   LoadConfig
	http  *http.Client
	refs  refs
	runID string
	// page2 is the GraphQL cursor after the first page (update mix).
	page2 string
	// keys numbers Idempotency-Keys; the counters below feed the Report.
	keys                                                  atomic.Int64
	attempts, timeouts, retries, replays, inProgressCount atomic.Int64
}

type outcome struct {
	code    string // "" on success
	latency time.Duration
	write   bool
}

// target is a procedure of the update mix's pool. Each belongs to one
// client, so its last acknowledged priority is known.
type target struct {
	shortID  string
	priority string   // the last acknowledged (or, before any, the sampled) priority
	pending  []string // priorities of updates after it never acknowledged
	written  bool
}

// Load runs cfg against a live server and verifies, at the end, that every
// acknowledged create exists exactly once and every acknowledged delete is
// gone.
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
	if cfg.Mix != MixCreate && cfg.Mix != MixUpdate {
		return nil, fmt.Errorf("load: mix must be create or update, not %q", cfg.Mix)
	}
	if cfg.Pool <= 0 {
		cfg.Pool = 500
	}
	c.cfg = cfg
	var pool []*target
	switch {
	case cfg.Mix == MixUpdate:
		var err error
		if cfg.API == "graphql" {
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
		mu       sync.Mutex
		results  []outcome
		created  = map[string]string{} // id -> unique name
		deleted  []string
		unacked  []string // names of creates never acknowledged
		budget   = cfg.MaxRequests
		budgetMu sync.Mutex
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
			for runCtx.Err() == nil && take() {
				var o outcome
				switch {
				case cfg.Mix == MixUpdate && len(own) > 0 && rng.Float64() < cfg.WriteRatio:
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
				case cfg.Mix == MixUpdate:
					shape := rng.IntN(len(restShapes))
					o = c.timed(runCtx, false, func(ctx context.Context) (string, error) { return "", c.listShape(ctx, shape) })
				case rng.Float64() < cfg.WriteRatio && len(mine) > 0 && rng.IntN(3) == 0:
					id := mine[len(mine)-1]
					mine = mine[:len(mine)-1]
					key := c.newKey()
					o = c.timed(runCtx, true, func(ctx context.Context) (string, error) { return "", c.delete(ctx, id, key) })
					if o.code == "" {
						mu.Lock()
						deleted = append(deleted, id)
						delete(created, id)
						mu.Unlock()
					}
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
			if o.code == "" && cfg.Mix == MixUpdate {
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
	rep.Created = len(created) + len(deleted)
	rep.Attempts, rep.Timeouts, rep.Retries = int(c.attempts.Load()), int(c.timeouts.Load()), int(c.retries.Load())
	rep.Replays, rep.InProgress, rep.Unacknowledged = int(c.replays.Load()), int(c.inProgressCount.Load()), len(unacked)
	switch {
	case cfg.WriteRatio > 0 && cfg.Mix == MixUpdate:
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

// newKey returns a fresh Idempotency-Key for one write, "" without keys.
func (c *client) newKey() string {
	if !c.cfg.IdempotencyKeys {
		return ""
	}
	return fmt.Sprintf("load-%s-%d", c.runID, c.keys.Add(1))
}

// timed runs one request, retrying it as cfg allows, and measures it from
// the first attempt to the last answer.
func (c *client) timed(ctx context.Context, write bool, fn func(context.Context) (string, error)) outcome {
	t := time.Now()
	err := c.retry(ctx, write, fn)
	o := outcome{latency: time.Since(t), write: write}
	if err != nil {
		var ae *apiError
		switch {
		case errors.As(err, &ae):
			o.code = ae.code
		case ctx.Err() != nil:
			o.code = "canceled"
		default:
			o.code = "transport"
		}
	}
	return o
}

// errTimeout is an attempt cut by the client's RequestTimeout.
var errTimeout = &apiError{code: "timeout"}

// retry runs fn, each attempt bounded by RequestTimeout, and runs it again
// (with the same Idempotency-Key, which fn carries) after a client timeout,
// a transport error, a 503 or a 409 in progress, at most Retries times,
// backing off exponentially with jitter. Writes are retried only with keys.
func (c *client) retry(ctx context.Context, write bool, fn func(context.Context) (string, error)) error {
	backoff := c.cfg.RetryBackoff
	for attempt := 0; ; attempt++ {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if c.cfg.RequestTimeout > 0 {
			actx, cancel = context.WithTimeout(ctx, c.cfg.RequestTimeout)
		}
		c.attempts.Add(1)
		_, err := fn(actx)
		if err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
			c.timeouts.Add(1)
			err = errTimeout
		}
		cancel()
		var ae *apiError
		retryable := err != nil && ctx.Err() == nil && (err == errTimeout || !errors.As(err, &ae) ||
			ae.status == http.StatusServiceUnavailable || ae.code == codeInProgress)
		if !retryable || attempt >= c.cfg.Retries || (write && !c.cfg.IdempotencyKeys) {
			return err
		}
		c.retries.Add(1)
		pause := backoff/2 + rand.N(backoff/2+1)
		backoff = min(2*backoff, time.Second)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
	}
}

// codeInProgress is the code the client gives a 409 answered while the
// request's Idempotency-Key is in progress (the server adds Retry-After).
const codeInProgress = "in_progress"

type apiError struct {
	status int
	code   string
}

func (e *apiError) Error() string { return fmt.Sprintf("HTTP %d %s", e.status, e.code) }

func (c *client) do(ctx context.Context, method, path string, body any, out any) error {
	return c.doKeyed(ctx, method, path, "", body, out)
}

// doKeyed is do with an Idempotency-Key ("" for none).
func (c *client) doKeyed(ctx context.Context, method, path, key string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.cfg.URL+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.Header.Get("Idempotent-Replayed") == "true" {
		c.replays.Add(1)
	}
	if resp.StatusCode == http.StatusConflict && resp.Header.Get("Retry-After") != "" {
		c.inProgressCount.Add(1)
		return &apiError{status: resp.StatusCode, code: codeInProgress}
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Code string }
		_ = json.Unmarshal(raw, &e)
		if e.Code == "" {
			var g struct {
				Errors []struct {
					Extensions struct{ Code string }
				}
			}
			if json.Unmarshal(raw, &g) == nil && len(g.Errors) > 0 {
				e.Code = g.Errors[0].Extensions.Code
			}
		}
		if e.Code == "" {
			e.Code = "http_" + strconv.Itoa(resp.StatusCode)
		}
		return &apiError{status: resp.StatusCode, code: e.Code}
	}
	if r, ok := out.(*json.RawMessage); ok {
		*r = raw
		return nil
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

const loadListQuery = `query LoadList($first: Int!) { procedures(first: $first) { totalCount nodes {
  id shortId name priority state content categoryId doerId creatorId position dueAt createdAt updatedAt
  projectId workspaceId captureId displayVideo isFineTunedData
  category { id name } doer { id name email } project { id name } comments(last: 3) { id text createdAt } } } }`

func (c *client) graphql(ctx context.Context, query string, vars map[string]any, out any) error {
	return c.graphqlKeyed(ctx, "", query, vars, out)
}

// graphqlKeyed is graphql with an Idempotency-Key ("" for none).
func (c *client) graphqlKeyed(ctx context.Context, key, query string, vars map[string]any, out any) error {
	if out == nil {
		// The list's body is large: a client measuring the server should
		// not spend its CPU parsing it. gqlgen writes "errors" first when
		// there are any, so a prefix check finds them.
		var raw json.RawMessage
		if err := c.doKeyed(ctx, http.MethodPost, "/graphql", key, map[string]any{"query": query, "variables": vars}, &raw); err != nil {
			return err
		}
		if !bytes.HasPrefix(raw, []byte(`{"errors"`)) {
			return nil
		}
		var failed struct {
			Errors []struct {
				Extensions struct{ Code string }
			}
		}
		if err := json.Unmarshal(raw, &failed); err != nil || len(failed.Errors) == 0 {
			return &apiError{status: 200, code: "malformed_response"}
		}
		return &apiError{status: 200, code: failed.Errors[0].Extensions.Code}
	}
	var resp struct {
		Data   json.RawMessage
		Errors []struct {
			Extensions struct{ Code string }
		}
	}
	if err := c.doKeyed(ctx, http.MethodPost, "/graphql", key, map[string]any{"query": query, "variables": vars}, &resp); err != nil {
		return err
	}
	if len(resp.Errors) > 0 {
		return &apiError{status: 200, code: resp.Errors[0].Extensions.Code}
	}
	if out != nil {
		return json.Unmarshal(resp.Data, out)
	}
	return nil
}

func (c *client) list(ctx context.Context) (string, error) {
	if c.cfg.API == "graphql" {
		return "", c.graphql(ctx, loadListQuery, map[string]any{"first": c.cfg.PageSize}, nil)
	}
	return "", c.do(ctx, http.MethodGet, "/procedures?limit="+strconv.Itoa(c.cfg.PageSize), nil, nil)
}

func (c *client) create(ctx context.Context, name, key string) (string, error) {
	in := map[string]any{"name": name, "priority": "MEDIUM", "state": "TODO", "dueAt": "2030-01-01T00:00:00Z",
		"projectId": c.refs.project, "categoryId": c.refs.category, "doerId": c.refs.member}
	if c.cfg.API == "graphql" {
		var out struct{ CreateProcedure struct{ ID string } }
		err := c.graphqlKeyed(ctx, key, `mutation C($in: CreateProcedureInput!) { createProcedure(input: $in) { id } }`, map[string]any{"in": in}, &out)
		return out.CreateProcedure.ID, err
	}
	var out struct{ ID string }
	err := c.doKeyed(ctx, http.MethodPost, "/procedures", key, in, &out)
	return out.ID, err
}

func (c *client) delete(ctx context.Context, id, key string) error {
	if c.cfg.API == "graphql" {
		return c.graphqlKeyed(ctx, key, `mutation D($id: ID!) { deleteProcedure(id: $id) { success } }`, map[string]any{"id": id}, nil)
	}
	return c.doKeyed(ctx, http.MethodDelete, "/procedures/"+url.PathEscape(id), key, nil, nil)
}

func (c *client) lookupRefs(ctx context.Context) (refs, error) {
	first := func(path string) (string, error) {
		var out struct{ Data []struct{ ID string } }
		if err := c.do(ctx, http.MethodGet, path+"?limit=1", nil, &out); err != nil {
			return "", fmt.Errorf("load: GET %s: %w", path, err)
		}
		if len(out.Data) == 0 {
			return "", fmt.Errorf("load: the workspace has no %s; seed it first", strings.TrimPrefix(path, "/"))
		}
		return out.Data[0].ID, nil
	}
	var r refs
	var err error
	if r.project, err = first("/projects"); err != nil {
		return r, err
	}
	if r.category, err = first("/categories"); err != nil {
		return r, err
	}
	r.member, err = first("/members")
	return r, err
}

// verify checks every acknowledged create exists exactly once (searching by
// its unique name), every create never acknowledged at most once, and every
// acknowledged delete is gone. It returns the creates found more than once.
func (c *client) verify(ctx context.Context, created map[string]string, deleted, unacked []string) (bool, int, []string) {
	var notes []string
	duplicates := 0
	count := func(name string) (int, []string, error) {
		var out struct {
			Data []struct{ ID string }
			Meta struct{ Total int }
		}
		err := c.do(ctx, http.MethodGet, "/procedures?search="+url.QueryEscape(name), nil, &out)
		ids := make([]string, len(out.Data))
		for i, d := range out.Data {
			ids[i] = d.ID
		}
		return out.Meta.Total, ids, err
	}
	for id, name := range created {
		total, ids, err := count(name)
		if err != nil {
			notes = append(notes, fmt.Sprintf("create %s: search failed: %v", id, err))
			continue
		}
		if total > 1 {
			duplicates++
		}
		if total != 1 || len(ids) != 1 || ids[0] != id {
			notes = append(notes, fmt.Sprintf("create %s (%s): found %d times", id, name, total))
		}
	}
	for _, name := range unacked {
		total, _, err := count(name)
		if err != nil {
			notes = append(notes, fmt.Sprintf("unacknowledged create %s: search failed: %v", name, err))
			continue
		}
		if total > 1 {
			duplicates++
			notes = append(notes, fmt.Sprintf("unacknowledged create %s: found %d times", name, total))
		}
	}
	for _, id := range deleted {
		err := c.do(ctx, http.MethodGet, "/procedures/"+url.PathEscape(id), nil, nil)
		var ae *apiError
		if !errors.As(err, &ae) || ae.status != http.StatusNotFound {
			notes = append(notes, fmt.Sprintf("delete %s: still readable (%v)", id, err))
		}
	}
	return len(notes) == 0, duplicates, notes
}

// restShapes are the update mix's five list shapes, each a page of
// PageSize with every nested edge and the total; listShape sends the same
// in GraphQL (the second page's cursor is read at start).
var restShapes = []string{"", "&page=2", "&state=IN_PROGRESS", "&sortBy=dueAt&sortOrder=asc", "&priority=HIGH"}

const loadShapeQuery = `query LoadShape($first: Int!, $after: String, $filter: ProcedureFilter, $orderBy: ProcedureOrder) {
  procedures(first: $first, after: $after, filter: $filter, orderBy: $orderBy) { totalCount nodes {
  id shortId name priority state content categoryId doerId creatorId position dueAt createdAt updatedAt
  projectId workspaceId captureId displayVideo isFineTunedData
  category { id name } doer { id name email } project { id name } comments(last: 3) { id text createdAt } } } }`

// listShape reads list shape i (0..4) of restShapes.
func (c *client) listShape(ctx context.Context, i int) error {
	if c.cfg.API != "graphql" {
		return c.do(ctx, http.MethodGet, "/procedures?limit="+strconv.Itoa(c.cfg.PageSize)+restShapes[i], nil, nil)
	}
	vars := map[string]any{"first": c.cfg.PageSize}
	switch i {
	case 1:
		if c.page2 != "" {
			vars["after"] = c.page2
		}
	case 2:
		vars["filter"] = map[string]any{"state": "IN_PROGRESS"}
	case 3:
		vars["orderBy"] = map[string]any{"field": "DUE_AT", "direction": "ASC"}
	case 4:
		vars["filter"] = map[string]any{"priority": "HIGH"}
	}
	return c.graphql(ctx, loadShapeQuery, vars, nil)
}

// secondPage returns the GraphQL cursor after the first page of PageSize.
func (c *client) secondPage(ctx context.Context) (string, error) {
	var out struct {
		Procedures struct{ PageInfo struct{ EndCursor *string } }
	}
	if err := c.graphql(ctx, `query P($first: Int!) { procedures(first: $first) { pageInfo { endCursor } } }`,
		map[string]any{"first": c.cfg.PageSize}, &out); err != nil {
		return "", fmt.Errorf("load: reading the first page's cursor: %w", err)
	}
	if out.Procedures.PageInfo.EndCursor == nil {
		return "", nil
	}
	return *out.Procedures.PageInfo.EndCursor, nil
}

// samplePool pages through the newest procedures (REST, 100 a page) until it
// holds Pool of them with a shortId, or the workspace has no more.
func (c *client) samplePool(ctx context.Context) ([]*target, error) {
	var pool []*target
	for page := 1; len(pool) < c.cfg.Pool; page++ {
		var out struct {
			Data []struct {
				ShortID  *string `json:"shortId"`
				Priority string  `json:"priority"`
			}
		}
		if err := c.do(ctx, http.MethodGet, "/procedures?limit=100&page="+strconv.Itoa(page), nil, &out); err != nil {
			return nil, fmt.Errorf("load: sampling procedures (page %d): %w", page, err)
		}
		for _, d := range out.Data {
			if d.ShortID != nil && len(pool) < c.cfg.Pool {
				pool = append(pool, &target{shortID: *d.ShortID, priority: d.Priority})
			}
		}
		if len(out.Data) < 100 {
			break
		}
	}
	if len(pool) == 0 {
		return nil, errors.New("load: the workspace has no procedures to update; seed it first")
	}
	return pool, nil
}

var priorities = []string{"LOW", "MEDIUM", "HIGH"}

// otherPriority picks a priority other than p, so that every update changes
// the procedure.
func otherPriority(rng *rand.Rand, p string) string {
	for {
		if q := priorities[rng.IntN(len(priorities))]; q != p {
			return q
		}
	}
}

// update sets the priority of the procedure with shortID.
func (c *client) update(ctx context.Context, shortID, priority, key string) error {
	if c.cfg.API == "graphql" {
		var out struct{ UpdateProcedure *struct{ Priority string } }
		err := c.graphqlKeyed(ctx, key, `mutation U($id: ID!, $in: UpdateProcedureInput!) { updateProcedure(id: $id, input: $in) { priority } }`,
			map[string]any{"id": shortID, "in": map[string]any{"priority": priority}}, &out)
		if err == nil && (out.UpdateProcedure == nil || out.UpdateProcedure.Priority != priority) {
			return &apiError{status: 200, code: "wrong_result"}
		}
		return err
	}
	var out struct{ Priority string }
	err := c.doKeyed(ctx, http.MethodPut, "/procedures/"+url.PathEscape(shortID), key, map[string]any{"priority": priority}, &out)
	if err == nil && out.Priority != priority {
		return &apiError{status: 200, code: "wrong_result"}
	}
	return err
}

// priorityOf reads the procedure's priority through the run's API.
func (c *client) priorityOf(ctx context.Context, shortID string) (string, error) {
	if c.cfg.API == "graphql" {
		var out struct{ Procedure *struct{ Priority string } }
		if err := c.graphql(ctx, `query G($id: ID!) { procedure(id: $id) { priority } }`, map[string]any{"id": shortID}, &out); err != nil {
			return "", err
		}
		if out.Procedure == nil {
			return "", &apiError{status: 200, code: "not_found"}
		}
		return out.Procedure.Priority, nil
	}
	var out struct{ Priority string }
	err := c.do(ctx, http.MethodGet, "/procedures/"+url.PathEscape(shortID), nil, &out)
	return out.Priority, err
}

// verifyUpdates checks, for every procedure of the pool the run wrote to,
// that the API returns its last acknowledged priority (or, when updates
// after it were never acknowledged, one of theirs: they may have run). Each
// procedure had one writer, so its last acknowledged write is known.
func (c *client) verifyUpdates(ctx context.Context, pool []*target) (ok bool, checked, uncertain int, notes []string) {
	for _, t := range pool {
		if !t.written {
			continue
		}
		checked++
		if len(t.pending) > 0 {
			uncertain++
		}
		got, err := c.priorityOf(ctx, t.shortID)
		if err != nil {
			notes = append(notes, fmt.Sprintf("update %s: read failed: %v", t.shortID, err))
			continue
		}
		if got != t.priority && !slices.Contains(t.pending, got) {
			notes = append(notes, fmt.Sprintf("update %s: priority %s, last acknowledged %s (unacknowledged after it: %v)", t.shortID, got, t.priority, t.pending))
		}
	}
	return len(notes) == 0, checked, uncertain, notes
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
