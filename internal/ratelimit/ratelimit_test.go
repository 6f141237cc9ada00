package ratelimit_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/internal/ratelimit"
)

// clock is a time that moves only when a test says so.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newLimiter(t *testing.T, cfg ratelimit.Config, opts ...ratelimit.Option) *ratelimit.Limiter {
	t.Helper()
	l, err := ratelimit.New(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if l == nil {
		t.Fatal("New returned no limiter for a limited config")
	}
	return l
}

func TestBucketSpendsRefillsAndReports(t *testing.T) {
	clk := newClock()
	l := newLimiter(t, ratelimit.Config{Limit: ratelimit.Limit{Rate: 2, Burst: 4}}, ratelimit.WithClock(clk.Now))
	tok, ws := uuid.New(), uuid.New()
	for i, want := range []ratelimit.Decision{
		{Allowed: true, Limit: 4, Window: 2 * time.Second, Remaining: 3, Reset: 500 * time.Millisecond},
		{Allowed: true, Limit: 4, Window: 2 * time.Second, Remaining: 2, Reset: time.Second},
		{Allowed: true, Limit: 4, Window: 2 * time.Second, Remaining: 1, Reset: 1500 * time.Millisecond},
		{Allowed: true, Limit: 4, Window: 2 * time.Second, Remaining: 0, Reset: 2 * time.Second},
		// Empty: one token comes in half a second at 2 per second.
		{Allowed: false, Limit: 4, Window: 2 * time.Second, Remaining: 0, Reset: 2 * time.Second, RetryAfter: 500 * time.Millisecond},
	} {
		got, ok := l.Take(tok, ws, 1)
		if !ok || got != want {
			t.Fatalf("take %d: got %+v (limited %v), want %+v", i+1, got, ok, want)
		}
	}
	clk.Advance(250 * time.Millisecond)
	if got, _ := l.Take(tok, ws, 1); got.Allowed || got.RetryAfter != 250*time.Millisecond {
		t.Fatalf("after 250ms: %+v, want refused with 250ms to wait", got)
	}
	clk.Advance(250 * time.Millisecond)
	if got, _ := l.Take(tok, ws, 1); !got.Allowed || got.Remaining != 0 {
		t.Fatalf("after 500ms: %+v, want allowed", got)
	}
	// A refusal spends nothing: 3 tokens are back after 1.5 s, and a
	// request for 4 refused then leaves the 3 for smaller ones.
	clk.Advance(1500 * time.Millisecond)
	if got, _ := l.Take(tok, ws, 4); got.Allowed || got.RetryAfter != 500*time.Millisecond || got.Remaining != 3 {
		t.Fatalf("4 of 3: %+v, want refused, 500ms to wait, 3 left", got)
	}
	if got, _ := l.Take(tok, ws, 3); !got.Allowed || got.Remaining != 0 {
		t.Fatalf("3 of 3: %+v, want allowed", got)
	}
}

func TestCostAboveBurstEmptiesAFullBucket(t *testing.T) {
	clk := newClock()
	l := newLimiter(t, ratelimit.Config{Limit: ratelimit.Limit{Rate: 1, Burst: 5}}, ratelimit.WithClock(clk.Now))
	tok, ws := uuid.New(), uuid.New()
	if got, _ := l.Take(tok, ws, 50); !got.Allowed || got.Remaining != 0 {
		t.Fatalf("cost 50 of a full bucket of 5: %+v, want allowed, emptying it", got)
	}
	if got, _ := l.Take(tok, ws, 50); got.Allowed || got.RetryAfter != 5*time.Second {
		t.Fatalf("cost 50 of an empty bucket: %+v, want refused until it is full (5s)", got)
	}
	// Costs below 1 cost 1.
	clk.Advance(time.Second)
	if got, _ := l.Take(tok, ws, 0); !got.Allowed || got.Remaining != 0 {
		t.Fatalf("cost 0: %+v, want 1 token spent", got)
	}
}

func TestTokensHaveTheirOwnBuckets(t *testing.T) {
	clk := newClock()
	l := newLimiter(t, ratelimit.Config{Limit: ratelimit.Limit{Rate: 1, Burst: 1}}, ratelimit.WithClock(clk.Now))
	ws := uuid.New()
	a, b := uuid.New(), uuid.New()
	if got, _ := l.Take(a, ws, 1); !got.Allowed {
		t.Fatal("a's first request refused")
	}
	if got, _ := l.Take(a, ws, 1); got.Allowed {
		t.Fatal("a's second request allowed over a burst of 1")
	}
	if got, _ := l.Take(b, ws, 1); !got.Allowed {
		t.Fatal("b, of the same workspace, refused for a's spending")
	}
}

func TestWorkspaceOverrides(t *testing.T) {
	clk := newClock()
	big, exempt, other := uuid.New(), uuid.New(), uuid.New()
	l := newLimiter(t, ratelimit.Config{
		Limit:      ratelimit.Limit{Rate: 1, Burst: 2},
		Workspaces: map[uuid.UUID]ratelimit.Limit{big: {Rate: 10, Burst: 20}, exempt: {}},
	}, ratelimit.WithClock(clk.Now))
	if got, ok := l.Take(uuid.New(), other, 1); !ok || got.Limit != 2 {
		t.Fatalf("default workspace: %+v (limited %v), want a bucket of 2", got, ok)
	}
	if got, ok := l.Take(uuid.New(), big, 1); !ok || got.Limit != 20 || got.Remaining != 19 {
		t.Fatalf("overridden workspace: %+v (limited %v), want a bucket of 20", got, ok)
	}
	for range 100 {
		if _, ok := l.Take(uuid.New(), exempt, 1); ok {
			t.Fatal("exempt workspace limited")
		}
	}
	if n := l.Buckets(); n != 2 {
		t.Fatalf("%d buckets, want 2 (none for the exempt workspace)", n)
	}
}

func TestOffIsNoLimiter(t *testing.T) {
	l, err := ratelimit.New(ratelimit.Config{Limit: ratelimit.Limit{Rate: 0, Burst: 5},
		Workspaces: map[uuid.UUID]ratelimit.Limit{uuid.New(): {Rate: 1, Burst: 1}}})
	if err != nil || l != nil {
		t.Fatalf("rate 0: %v, %v; want no limiter (off, overrides included)", l, err)
	}
	if _, ok := l.Take(uuid.New(), uuid.New(), 1); ok {
		t.Fatal("a nil limiter limited")
	}
	if l.Buckets() != 0 {
		t.Fatal("a nil limiter holds buckets")
	}
}

func TestInvalidConfigs(t *testing.T) {
	for name, cfg := range map[string]ratelimit.Config{
		"negative rate":      {Limit: ratelimit.Limit{Rate: -1, Burst: 1}},
		"zero burst":         {Limit: ratelimit.Limit{Rate: 1}},
		"bad workspace":      {Limit: ratelimit.Limit{Rate: 1, Burst: 1}, Workspaces: map[uuid.UUID]ratelimit.Limit{uuid.New(): {Rate: 2, Burst: 0}}},
		"negative workspace": {Limit: ratelimit.Limit{Rate: 1, Burst: 1}, Workspaces: map[uuid.UUID]ratelimit.Limit{uuid.New(): {Rate: -2, Burst: 2}}},
	} {
		if _, err := ratelimit.New(cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := ratelimit.New(ratelimit.Config{Limit: ratelimit.Limit{Rate: 1, Burst: 1}}, ratelimit.WithMaxBuckets(0)); err == nil {
		t.Error("0 buckets: no error")
	}
}

// TestBucketsAreBounded: however many tokens call, the limiter keeps at
// most its maximum of buckets, dropping the least recently used.
func TestBucketsAreBounded(t *testing.T) {
	clk := newClock()
	l := newLimiter(t, ratelimit.Config{Limit: ratelimit.Limit{Rate: 1, Burst: 1}}, ratelimit.WithClock(clk.Now), ratelimit.WithMaxBuckets(3))
	ws := uuid.New()
	active := uuid.New()
	l.Take(active, ws, 1)
	for range 1000 {
		l.Take(uuid.New(), ws, 1)
		if n := l.Buckets(); n > 3 {
			t.Fatalf("%d buckets, more than the bound of 3", n)
		}
	}
	// active's bucket was evicted long ago: it is full again, as it would
	// be after idling.
	if got, _ := l.Take(active, ws, 1); !got.Allowed {
		t.Fatal("an evicted bucket did not start full")
	}
	// The most recently used bucket is kept.
	if got, _ := l.Take(active, ws, 1); got.Allowed {
		t.Fatal("a kept bucket was replaced")
	}
}

// TestConcurrentSpending: many goroutines spending from one bucket at one
// instant get exactly its burst between them (run with -race).
func TestConcurrentSpending(t *testing.T) {
	clk := newClock()
	l := newLimiter(t, ratelimit.Config{Limit: ratelimit.Limit{Rate: 1, Burst: 100}}, ratelimit.WithClock(clk.Now))
	tok, ws := uuid.New(), uuid.New()
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if d, _ := l.Take(tok, ws, 1); d.Allowed {
					allowed.Add(1)
				}
				// Other tokens at the same time, to race the LRU too.
				l.Take(uuid.New(), ws, 1)
			}
		}()
	}
	wg.Wait()
	if n := allowed.Load(); n != 100 {
		t.Fatalf("%d requests allowed, want exactly the burst of 100", n)
	}
}
