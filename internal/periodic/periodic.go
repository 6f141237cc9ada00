// Package periodic runs a background job at once and then at every tick of
// an interval, until it is stopped: the one loop behind the server's
// housekeeping (the idempotency purger, the change log's retention).
package periodic

import (
	"context"
	"time"
)

// Start runs job in a goroutine, now and then every every, until ctx ends
// or stop is called; stop waits for the goroutine to return, so nothing of
// job runs after it. job is passed a context that ends with the loop and
// must return when it does. every must be positive.
func Start(ctx context.Context, every time.Duration, job func(ctx context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			job(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
