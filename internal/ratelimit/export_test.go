package ratelimit

import "github.com/google/uuid"

// WithMaxBuckets bounds the buckets kept (DefaultMaxBuckets otherwise); the
// least recently used bucket is dropped first.
func WithMaxBuckets(n int) Option { return func(l *Limiter) { l.maxBuckets = n } }

// Take spends n tokens from token's bucket in workspace (see bucket.take). ok is false when the
// workspace's tokens are not limited; nothing is spent then.
func (l *Limiter) Take(token, workspace uuid.UUID, n int) (d Decision, ok bool) {
	b := l.bucket(token, workspace)
	if b == nil {
		return Decision{}, false
	}
	return b.take(l.now(), n), true
}
