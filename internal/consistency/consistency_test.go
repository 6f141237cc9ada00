package consistency

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestRecentRemembersWithinTheWindow(t *testing.T) {
	now := time.Unix(1000, 0)
	r := NewRecent(10 * time.Second)
	r.now = func() time.Time { return now }
	tok := uuid.New()
	r.Wrote(tok, 7)
	r.Wrote(tok, 5) // an older write finishing late keeps the newer
	if got := r.Min(tok); got != 7 {
		t.Fatalf("Min = %d; want 7", got)
	}
	if got := r.Min(uuid.New()); got != 0 {
		t.Fatalf("Min of another token = %d; want 0", got)
	}
	now = now.Add(11 * time.Second)
	if got := r.Min(tok); got != 0 {
		t.Fatalf("Min after the window = %d; want 0", got)
	}
	off := NewRecent(0)
	off.Wrote(tok, 9)
	if got := off.Min(tok); got != 0 {
		t.Fatalf("Min with no window = %d; want 0", got)
	}
}

func TestRecentIsBounded(t *testing.T) {
	r := NewRecent(time.Hour)
	first := uuid.New()
	r.Wrote(first, 1)
	for i := 0; i < RecentTokens; i++ {
		r.Wrote(uuid.New(), 2)
	}
	if r.byTok.Len() != RecentTokens {
		t.Fatalf("remembers %d tokens; want the bound %d", r.byTok.Len(), RecentTokens)
	}
	if got := r.Min(first); got != 0 {
		t.Fatalf("the least recent token is still remembered (%d)", got)
	}
}

func TestWroteKeepsTheNewestVersion(t *testing.T) {
	ctx, w := WithWritten(context.Background())
	Wrote(ctx, 41)
	Wrote(ctx, 42)
	Wrote(ctx, 40) // an earlier write's commit hook running late
	if got := Committed(ctx); got != 42 || w.Version() != 42 {
		t.Fatalf("Committed = %d, Version = %d; want 42", got, w.Version())
	}
	// Outside a request with a Written, a write reports nowhere.
	Wrote(context.Background(), 7)
	if got := Committed(context.Background()); got != 0 {
		t.Fatalf("Committed outside a request = %d; want 0", got)
	}
}

func TestRouteToStandbyMarksTheRequest(t *testing.T) {
	if RoutableToStandby(context.Background()) {
		t.Fatal("an unmarked request is routable to a standby")
	}
	if !RoutableToStandby(RouteToStandby(context.Background())) {
		t.Fatal("a request marked RouteToStandby is not routable to a standby")
	}
}
