package periodic_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/periodic"
)

// TestStartRunsAtOnceThenEveryTickUntilStopped: the job runs before the
// first tick, again at ticks, and never after stop returned.
func TestStartRunsAtOnceThenEveryTickUntilStopped(t *testing.T) {
	var runs atomic.Int32
	first := make(chan struct{})
	stop := periodic.Start(context.Background(), time.Millisecond, func(ctx context.Context) {
		if runs.Add(1) == 1 {
			close(first)
		}
	})
	select {
	case <-first:
	case <-time.After(5 * time.Second):
		t.Fatal("the job did not run at once")
	}
	for deadline := time.Now().Add(5 * time.Second); runs.Load() < 3; {
		if time.Now().After(deadline) {
			t.Fatalf("%d runs after 5s of 1ms ticks; want 3 or more", runs.Load())
		}
		time.Sleep(time.Millisecond)
	}
	stop()
	after := runs.Load()
	time.Sleep(20 * time.Millisecond)
	if n := runs.Load(); n != after {
		t.Fatalf("%d runs after stop returned; want none", n-after)
	}
}

// TestStartEndsWithItsContext: the loop ends when its context does, and
// the job's context ends with it.
func TestStartEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	jobCtx := make(chan context.Context, 1)
	stop := periodic.Start(ctx, time.Hour, func(ctx context.Context) {
		select {
		case jobCtx <- ctx:
		default:
		}
	})
	c := <-jobCtx
	cancel()
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the job's context did not end with the loop's")
	}
	stop() // returns: the goroutine has ended
}
