package middleware_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/middleware"
)

type valueKey struct{}

// TestWithoutDeadline: a request context whose deadline has passed comes
// back, through WithoutDeadline, with its values, no deadline, not done;
// it still ends with the request's own context, and with its cancel. No
// test waits: the deadline given has already passed.
func TestWithoutDeadline(t *testing.T) {
	base, cancelBase := context.WithCancel(context.WithValue(context.Background(), valueKey{}, "base"))
	defer cancelBase()
	timed, cancelTimed := middleware.WithDeadline(base, -time.Second)
	defer cancelTimed()
	inner := context.WithValue(timed, valueKey{}, "inner")
	if !errors.Is(inner.Err(), context.DeadlineExceeded) {
		t.Fatalf("the deadline did not apply: %v", inner.Err())
	}
	lifted, cancel := middleware.WithoutDeadline(inner)
	if _, ok := lifted.Deadline(); ok || lifted.Err() != nil || context.Cause(lifted) != nil {
		t.Fatalf("still bounded: deadline %v, err %v, cause %v", ok, lifted.Err(), context.Cause(lifted))
	}
	if got := lifted.Value(valueKey{}); got != "inner" {
		t.Fatalf("value %v, want the innermost", got)
	}
	derived, cancelDerived := context.WithCancel(lifted)
	defer cancelDerived()
	cancelBase()
	<-derived.Done()
	if !errors.Is(lifted.Err(), context.Canceled) {
		t.Fatalf("the request's end did not end it: %v", lifted.Err())
	}
	cancel()

	// Without WithDeadline, only a cancel of its own is added.
	plain, cancelPlain := middleware.WithoutDeadline(context.Background())
	cancelPlain()
	if !errors.Is(plain.Err(), context.Canceled) {
		t.Fatalf("cancel did not end it: %v", plain.Err())
	}
}
