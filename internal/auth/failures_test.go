package auth

import (
	"context"
	"net/netip"
	"testing"
	"time"
)

// BenchmarkSuccessfulAuthenticationOverhead is what the failure limit and
// the refused secrets add to an authentication that succeeds (the lookup
// aside): the address read from the context, a reservation given back, and
// the refused secrets consulted.
func BenchmarkSuccessfulAuthenticationOverhead(b *testing.B) {
	l := newFailureLimiter(FailureLimit{Rate: 5, Burst: 100}, DefaultMaxAddresses)
	r := newRefusedSecrets(DefaultMaxRefused)
	ctx := WithClientAddress(context.Background(), netip.MustParseAddr("192.0.2.1"))
	var sum [32]byte
	b.ReportAllocs()
	for b.Loop() {
		addr, _ := ClientAddress(ctx)
		key := failureKey(addr)
		now := time.Now()
		if _, ok := l.reserve(key, now); !ok {
			b.Fatal("refused")
		}
		if _, ok := r.reason(sum); ok {
			b.Fatal("refused for good")
		}
		l.release(key, now)
	}
}
