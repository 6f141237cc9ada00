package live

import (
	"context"
	"fmt"
	"sync"

	"github.com/procsvc/procsvc/internal/apperr"
)

// flight is one computation shared by everyone who asks for its key while
// it runs or while it is kept; done is closed when val and err are set.
type flight[V any] struct {
	done chan struct{}
	val  V
	err  error
	size int64
}

// flights runs each key's computation once and keeps finished results,
// oldest dropped first, while their sizes add up to at most max bytes. A
// result larger than max is handed to those waiting for it and not kept.
// What a caller holds after get stays valid when it is dropped.
type flights[K comparable, V any] struct {
	max int64

	mu    sync.Mutex
	used  int64
	m     map[K]*flight[V]
	order []K // kept keys, oldest first
}

func newFlights[K comparable, V any](max int64) *flights[K, V] {
	return &flights[K, V]{max: max, m: map[K]*flight[V]{}}
}

// get returns k's result: kept, being computed by another caller (waited
// for, unless ctx ends first), or computed now by compute, which returns
// the result's size in bytes. A failed computation is not kept.
func (c *flights[K, V]) get(ctx context.Context, k K, compute func() (V, int64, error)) (V, error) {
	c.mu.Lock()
	f, found := c.m[k]
	if !found {
		f = &flight[V]{done: make(chan struct{})}
		c.m[k] = f
	}
	c.mu.Unlock()
	if found {
		select {
		case <-f.done:
			return f.val, f.err
		case <-ctx.Done():
			var zero V
			return zero, ctx.Err()
		}
	}
	c.compute(f, compute)
	c.finish(k, f)
	return f.val, f.err
}

// compute runs fn for f; a panic becomes f's error (internal, logged where
// it is presented with its stack-free value), for every caller of get.
func (c *flights[K, V]) compute(f *flight[V], fn func() (V, int64, error)) {
	defer func() {
		if p := recover(); p != nil {
			var zero V
			f.val, f.size = zero, 0
			f.err = &apperr.Error{Code: apperr.Internal, Message: "internal error", Err: fmt.Errorf("panic: %v", p)}
		}
	}()
	f.val, f.size, f.err = fn()
}

func (c *flights[K, V]) finish(k K, f *flight[V]) {
	close(f.done)
	c.mu.Lock()
	defer c.mu.Unlock()
	if f.err != nil || f.size > c.max {
		delete(c.m, k)
		return
	}
	c.used += f.size
	c.order = append(c.order, k)
	for c.used > c.max && len(c.order) > 0 {
		old := c.order[0]
		c.order[0] = *new(K)
		c.order = c.order[1:]
		c.used -= c.m[old].size
		delete(c.m, old)
	}
	if cap(c.order) > 64 && len(c.order) < cap(c.order)/4 {
		c.order = append([]K(nil), c.order...)
	}
}

// bytes returns the size of what c keeps.
func (c *flights[K, V]) bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}
