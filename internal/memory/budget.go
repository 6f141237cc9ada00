// Package memory accounts the bytes a replica holds because a client asked
// for them: a subscriber's queued and replayed events, a workspace's parsed
// documents and persisted queries, a workspace's webhook deliveries in
// flight. Each such surface has one Budget: a share per owner (a
// connection, a workspace) and a ceiling for the replica, both in bytes,
// each with a documented default and a flag (docs/reliability.md, "What a
// client can make a replica hold"). An owner past its share is refused (or
// evicts its own), so that one client never takes another's memory, and
// the ceiling keeps the sum of every owner's share from taking the process.
//
// It imports nothing of procsvc.
package memory

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Budget is a replica's account of the bytes held for owners of type K:
// each owner holds at most Share, all of them together at most Ceiling.
// It is safe for concurrent use.
type Budget[K comparable] struct {
	ceiling, share int64

	mu   sync.Mutex
	used int64
	held map[K]int64

	refused atomic.Int64
}

// NewBudget returns a Budget of ceiling bytes for the replica and share
// bytes per owner. Both must be positive and share at most ceiling.
func NewBudget[K comparable](ceiling, share int64) *Budget[K] {
	if ceiling <= 0 || share <= 0 || share > ceiling {
		panic(fmt.Sprintf("memory: a budget of %d bytes with shares of %d", ceiling, share))
	}
	return &Budget[K]{ceiling: ceiling, share: share, held: map[K]int64{}}
}

// Reserve takes n bytes for owner and reports whether it could. It cannot
// when the owner would pass its share or the replica its ceiling; nothing
// is taken then. An owner that holds nothing may take one reservation
// larger than its share (one event, one document, whatever its size, is
// always deliverable alone), but never past the ceiling.
func (b *Budget[K]) Reserve(owner K, n int64) bool {
	if n < 0 {
		panic("memory: a negative reservation")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	held := b.held[owner]
	if b.used+n > b.ceiling || (held > 0 && held+n > b.share) {
		b.refused.Add(1)
		return false
	}
	b.used += n
	if n > 0 {
		b.held[owner] = held + n
	}
	return true
}

// Release gives back n bytes owner reserved.
func (b *Budget[K]) Release(owner K, n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	held := b.held[owner]
	if n > held {
		panic(fmt.Sprintf("memory: %d bytes released of %d held", n, held))
	}
	b.used -= n
	if held == n {
		delete(b.held, owner)
		return
	}
	b.held[owner] = held - n
}

// Fits reports whether owner could take n more bytes now (Reserve's
// rule, nothing taken): a cache asks before it evicts to make room.
func (b *Budget[K]) Fits(owner K, n int64) (ownerFits, replicaFits bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	held := b.held[owner]
	return held == 0 || held+n <= b.share, b.used+n <= b.ceiling
}

// Held returns the bytes held for every owner together.
func (b *Budget[K]) Held() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// HeldBy returns the bytes held for owner.
func (b *Budget[K]) HeldBy(owner K) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held[owner]
}

// Refused returns how many reservations were refused since the start.
func (b *Budget[K]) Refused() int64 { return b.refused.Load() }

// Ceiling and Share return the budget's bounds.
func (b *Budget[K]) Ceiling() int64 { return b.ceiling }
func (b *Budget[K]) Share() int64   { return b.share }
