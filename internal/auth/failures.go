package auth

import (
	"context"
	"errors"
	"math"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/procsvc/procsvc/internal/apperr"
)

// FailureLimit bounds the failed authentications of one client address: a
// bucket of Burst failures refilled at Rate a second. While an address's
// bucket is empty, its requests that carry a credential are refused
// rate_limited before any lookup. A Rate of 0 turns the limit off.
type FailureLimit struct {
	Rate  float64
	Burst int
}

// DefaultMaxAddresses bounds the client addresses whose failures are
// remembered (some 200 bytes each, so about 13 MiB at most); the least
// recently seen is dropped first. Only addresses with recent failures are
// kept: a bucket full again is dropped at once, as a fresh one is full.
const DefaultMaxAddresses = 1 << 16

// maxWait caps the Retry-After reported, which a tiny rate would overflow.
const maxWait = 365 * 24 * time.Hour

type clientAddressKey struct{}

// WithClientAddress returns ctx carrying the address of the client whose
// request it serves: what Authenticate counts failures against. Without
// one (the CLI, tests) failures are not counted.
func WithClientAddress(ctx context.Context, addr netip.Addr) context.Context {
	return context.WithValue(ctx, clientAddressKey{}, addr)
}

// ClientAddress returns the client address WithClientAddress put in ctx.
func ClientAddress(ctx context.Context) (netip.Addr, bool) {
	addr, ok := ctx.Value(clientAddressKey{}).(netip.Addr)
	return addr, ok && addr.IsValid()
}

// failureKey is the bucket an address counts against: an IPv4 address
// itself, an IPv6 address's /48, the most one site is normally given (so
// rotating through its /64s, more than the buckets kept, earns no fresh
// bucket).
func failureKey(addr netip.Addr) netip.Addr { return AddressKey(addr) }

// AddressKey is the client an address stands for, for per-client bounds:
// an IPv4 address itself, an IPv6 address's /48.
func AddressKey(addr netip.Addr) netip.Addr {
	addr = addr.Unmap().WithZone("")
	if addr.Is6() {
		return netip.PrefixFrom(addr, 48).Masked().Addr()
	}
	return addr
}

// failureLimiter holds the failure buckets of client addresses.
type failureLimiter struct {
	limit FailureLimit

	mu      sync.Mutex
	buckets *simplelru.LRU[netip.Addr, *failureBucket]
}

func newFailureLimiter(limit FailureLimit, maxAddresses int) *failureLimiter {
	if limit.Rate <= 0 || math.IsNaN(limit.Rate) || math.IsInf(limit.Rate, 0) {
		return nil
	}
	buckets, err := simplelru.NewLRU[netip.Addr, *failureBucket](max(maxAddresses, 1), nil)
	if err != nil {
		panic("auth: " + err.Error()) // only for a size below 1
	}
	limit.Burst = max(limit.Burst, 1)
	return &failureLimiter{limit: limit, buckets: buckets}
}

// failureBucket is one address's failures left, as of at.
type failureBucket struct {
	left float64
	at   time.Time
}

// refill brings b up to now and returns what it holds.
func (b *failureBucket) refill(now time.Time, limit FailureLimit) float64 {
	if d := now.Sub(b.at); d > 0 {
		b.left = min(float64(limit.Burst), b.left+d.Seconds()*limit.Rate)
		b.at = now
	}
	return b.left
}

// reserve takes one failure from key's bucket before a credential is
// checked, so that however many requests of one address run at once, at
// most the bucket's worth of them reach the database. A request that
// authenticates gives it back (release). When the bucket is empty it takes
// nothing and returns how long until it holds one failure again.
func (l *failureLimiter) reserve(key netip.Addr, now time.Time) (wait time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, found := l.buckets.Get(key)
	if !found {
		b = &failureBucket{left: float64(l.limit.Burst), at: now}
		l.buckets.Add(key, b)
	}
	if left := b.refill(now, l.limit); left < 1 {
		return time.Duration(math.Ceil(min((1-left)/l.limit.Rate*float64(time.Second), float64(maxWait)))), false
	}
	b.left--
	return 0, true
}

// release gives back a reservation whose request did not fail (it
// authenticated, or the database did not answer), dropping a bucket that is
// then full. now may be the reservation's: the clock is read once.
func (l *failureLimiter) release(key netip.Addr, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, found := l.buckets.Peek(key)
	if !found {
		return // dropped meanwhile: a fresh bucket is full anyway
	}
	if b.refill(now, l.limit)+1 >= float64(l.limit.Burst) {
		l.buckets.Remove(key)
		return
	}
	b.left++
}

func (l *failureLimiter) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buckets.Len()
}

// retryAfter is the cause of a refusal by the failure limit: how long to
// wait, in whole seconds (at least 1), which RetryAfter reads.
type retryAfter int64

func (r retryAfter) Error() string { return "failure limit of the client address" }

func tooManyFailures(wait time.Duration) error {
	seconds := max(int64((wait+time.Second-1)/time.Second), 1)
	return &apperr.Error{Code: apperr.RateLimited, Err: retryAfter(seconds),
		Message: "too many failed authentications from this address; retry in " + strconv.FormatInt(seconds, 10) + " s"}
}

// RetryAfter returns the seconds a client refused by the failure limit of
// its address should wait (for the Retry-After header), and false for any
// other error.
func RetryAfter(err error) (seconds int64, ok bool) {
	var r retryAfter
	if errors.As(err, &r) {
		return int64(r), true
	}
	return 0, false
}
