// Package ratelimit is procsvc's per-token rate limit: a token bucket per
// bearer token, refilled at a rate and holding at most a burst, kept in this
// replica's memory. Both faces spend from the same bucket: REST one token
// per request, GraphQL by its operation's cost (see graph's operationCost).
// docs/api.md describes what clients see.
//
// Buckets live in an LRU bounded by a number of buckets, so memory stays
// bounded however many tokens call; a bucket evicted after idling is full
// again anyway. Nothing here is package-level mutable state: every Limiter
// owns its buckets and its clock.
package ratelimit

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/time/rate"
)

// Limit is one bucket's refill rate (tokens per second) and size.
type Limit struct {
	Rate  float64
	Burst int
}

// Unlimited reports whether l sets no limit (a rate of 0).
func (l Limit) Unlimited() bool { return l.Rate == 0 }

// Validate reports a rate that is negative or not finite, or a burst below 1
// for a limited rate.
func (l Limit) Validate() error {
	if l.Rate < 0 || math.IsNaN(l.Rate) || math.IsInf(l.Rate, 0) {
		return fmt.Errorf("rate %v must be a finite number ≥ 0", l.Rate)
	}
	if !l.Unlimited() && l.Burst < 1 {
		return fmt.Errorf("burst %d must be at least 1", l.Burst)
	}
	return nil
}

// Config is what a Limiter enforces.
type Config struct {
	// Limit is every token's bucket. A rate of 0 turns rate limiting off
	// altogether, Workspaces included.
	Limit
	// Workspaces overrides Limit for the tokens of a workspace (each token
	// still has its own bucket); a rate of 0 exempts the workspace.
	Workspaces map[uuid.UUID]Limit
}

// DefaultMaxBuckets bounds the buckets a Limiter keeps: some 250 bytes
// each, so about 16 MiB at most.
const DefaultMaxBuckets = 1 << 16

// Limiter holds the buckets of one replica.
type Limiter struct {
	cfg        Config
	now        func() time.Time
	maxBuckets int

	mu      sync.Mutex
	buckets *simplelru.LRU[uuid.UUID, *bucket]
}

// Option configures a Limiter.
type Option func(*Limiter)

// WithClock makes the Limiter read the time from now instead of time.Now
// (tests advance a clock of their own).
func WithClock(now func() time.Time) Option { return func(l *Limiter) { l.now = now } }

// New returns a Limiter enforcing cfg, or nil (no limit: every method and
// middleware of a nil Limiter lets everything through, without headers)
// when cfg's rate is 0.
func New(cfg Config, opts ...Option) (*Limiter, error) {
	var errs []error
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	for ws, lim := range cfg.Workspaces {
		if err := lim.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("workspace %s: %w", ws, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Unlimited() {
		return nil, nil
	}
	l := &Limiter{cfg: cfg, now: time.Now, maxBuckets: DefaultMaxBuckets}
	for _, o := range opts {
		o(l)
	}
	if l.maxBuckets < 1 {
		return nil, fmt.Errorf("max buckets %d must be at least 1", l.maxBuckets)
	}
	buckets, err := simplelru.NewLRU[uuid.UUID, *bucket](l.maxBuckets, nil)
	if err != nil {
		return nil, err
	}
	l.buckets = buckets
	return l, nil
}

// LimitFor returns the limit of workspace's tokens.
func (l *Limiter) LimitFor(workspace uuid.UUID) Limit {
	if l == nil {
		return Limit{}
	}
	if lim, ok := l.cfg.Workspaces[workspace]; ok {
		return lim
	}
	return l.cfg.Limit
}

// Buckets returns how many buckets the Limiter holds.
func (l *Limiter) Buckets() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buckets.Len()
}

// Decision is the outcome of spending from a bucket, and its state after.
type Decision struct {
	Allowed bool
	// Limit is the bucket's size (its burst).
	Limit int
	// Window is how long an empty bucket takes to fill: Limit divided by
	// the rate.
	Window time.Duration
	// Remaining is the whole tokens left.
	Remaining int
	// Reset is how long until the bucket is full again.
	Reset time.Duration
	// RetryAfter, for a refusal, is how long until the bucket holds the
	// tokens asked for.
	RetryAfter time.Duration
}

// bucket returns token's bucket, made on first use, or nil when
// workspace's tokens are not limited.
func (l *Limiter) bucket(token, workspace uuid.UUID) *bucket {
	if l == nil {
		return nil
	}
	lim := l.LimitFor(workspace)
	if lim.Unlimited() {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if b, ok := l.buckets.Get(token); ok {
		return b
	}
	b := &bucket{lim: rate.NewLimiter(rate.Limit(lim.Rate), lim.Burst), rate: lim.Rate, burst: lim.Burst}
	l.buckets.Add(token, b)
	return b
}

// bucket is one token's: rate.Limiter does the arithmetic; mu makes a
// spend and the state reported with it one step.
type bucket struct {
	mu    sync.Mutex
	lim   *rate.Limiter
	rate  float64
	burst int
}

// take spends n tokens: at least 1, at most the burst (a request costing
// more than the bucket holds empties a full bucket rather than never
// passing).
func (b *bucket) take(now time.Time, n int) Decision {
	n = min(max(n, 1), b.burst)
	b.mu.Lock()
	allowed := b.lim.AllowN(now, n)
	tokens := b.lim.TokensAt(now)
	b.mu.Unlock()
	d := Decision{
		Allowed:   allowed,
		Limit:     b.burst,
		Window:    b.duration(float64(b.burst)),
		Remaining: max(int(math.Floor(tokens)), 0),
		Reset:     b.duration(float64(b.burst) - tokens),
	}
	if !allowed {
		d.RetryAfter = b.duration(float64(n) - tokens)
	}
	return d
}

// maxWait caps the durations reported, which a tiny rate would otherwise
// overflow.
const maxWait = 365 * 24 * time.Hour

// duration is how long the bucket takes to gain tokens.
func (b *bucket) duration(tokens float64) time.Duration {
	if tokens <= 0 {
		return 0
	}
	return time.Duration(math.Ceil(math.Min(tokens/b.rate*float64(time.Second), float64(maxWait))))
}
