package events

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/internal/core"
)

// hangGuard bounds waits that only a bug would make long.
const hangGuard = 10 * time.Second

func change(ws uuid.UUID, v int64) Notification {
	return Notification{Change: core.Change{WorkspaceID: ws, Kind: core.ProcedureUpdated, ProcedureID: uuid.New()}, Version: v}
}

func TestHubFanOut(t *testing.T) {
	h := NewHub(HubOptions{})
	ws := uuid.New()
	subs := make([]*Subscription, 100)
	for i := range subs {
		subs[i] = h.Subscribe(ws)
	}
	if got := h.Subscribers(); got != len(subs) {
		t.Fatalf("Subscribers() = %d; want %d", got, len(subs))
	}
	const events = 10
	for v := int64(1); v <= events; v++ {
		h.Publish(change(ws, v))
	}
	for i, s := range subs {
		for v := int64(1); v <= events; v++ {
			e, ok := pending(s)
			if !ok || e.Version != v || e.WorkspaceID != ws {
				t.Fatalf("subscriber %d, event %d = %+v (%v); want version %d", i, v, e, ok, v)
			}
		}
		if e, ok := pending(s); ok {
			t.Fatalf("subscriber %d got an extra event %+v", i, e)
		}
	}
}

// TestHubNumbersEvents: every subscriber of a workspace sees an event
// under the same Seq, and each event (a REFETCH included) gets a new one:
// what graph's live updates read or render for one delivery is shared by
// that key.
func TestHubNumbersEvents(t *testing.T) {
	h := NewHub(HubOptions{})
	a, b := uuid.New(), uuid.New()
	a1, a2, b1 := h.Subscribe(a), h.Subscribe(a), h.Subscribe(b)
	h.Publish(change(a, 1))
	h.Publish(change(b, 1))
	h.Refetch()
	h.Publish(change(a, 2))
	seen := map[uint64]bool{}
	var first []uint64
	for i, s := range []*Subscription{a1, a2} {
		var got []uint64
		for range 3 {
			e, ok := pending(s)
			if !ok || e.Seq == 0 {
				t.Fatalf("subscriber %d: %+v (%v), want a numbered event", i, e, ok)
			}
			got = append(got, e.Seq)
		}
		if i == 0 {
			first = got
		} else if got[0] != first[0] || got[1] != first[1] || got[2] != first[2] {
			t.Fatalf("the subscribers of one workspace saw %v and %v", first, got)
		}
	}
	for _, seq := range first {
		seen[seq] = true
	}
	e, _ := pending(b1)
	r, _ := pending(b1)
	if seen[e.Seq] || !(first[0] < e.Seq && e.Seq < first[1]) || seen[r.Seq] || r.Seq <= e.Seq || !r.Refetch {
		t.Fatalf("workspace a saw %v; b saw %d then a REFETCH %d", first, e.Seq, r.Seq)
	}
}

func TestHubWorkspaceIsolation(t *testing.T) {
	h := NewHub(HubOptions{})
	a, b := uuid.New(), uuid.New()
	subA, subB := h.Subscribe(a), h.Subscribe(b)
	h.Publish(change(a, 1))
	h.Publish(change(uuid.New(), 1)) // nobody watches it
	if e, ok := pending(subA); !ok || e.WorkspaceID != a {
		t.Fatalf("A got %+v (%v); want A's event", e, ok)
	}
	if e, ok := pending(subB); ok {
		t.Fatalf("B got %+v; want nothing", e)
	}
	h.Publish(change(b, 2))
	if e, ok := pending(subB); !ok || e.WorkspaceID != b {
		t.Fatalf("B got %+v (%v); want B's event", e, ok)
	}
	if e, ok := pending(subA); ok {
		t.Fatalf("A got %+v; want nothing", e)
	}
}

// publishNow runs fn (a Publish) and fails t if it does not return.
func publishNow(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { fn(); close(done) }()
	select {
	case <-done:
	case <-time.After(hangGuard):
		t.Fatal("Publish blocked on a stalled subscriber")
	}
}

func TestHubSlowSubscriber(t *testing.T) {
	const buffer = 4
	h := NewHub(HubOptions{Buffer: buffer})
	ws := uuid.New()
	slow, fast := h.Subscribe(ws), h.Subscribe(ws)
	var v int64
	for range buffer {
		v++
		publishNow(t, func() { h.Publish(change(ws, v)) })
	}
	for want := int64(1); want <= buffer; want++ {
		if e, ok := pending(fast); !ok || e.Version != want {
			t.Fatalf("fast got %+v (%v); want version %d", e, ok, want)
		}
	}
	// slow's buffer is full: the next event ends it, and only it.
	for range 3 * buffer {
		v++
		publishNow(t, func() { h.Publish(change(ws, v)) })
		if e, ok := pending(fast); !ok || e.Version != v {
			t.Fatalf("fast got %+v (%v); want version %d", e, ok, v)
		}
	}
	for want := int64(1); want <= buffer; want++ {
		if e, ok := pending(slow); !ok || e.Version != want {
			t.Fatalf("slow's buffered event = %+v (%v); want version %d", e, ok, want)
		}
	}
	if _, ok := <-slow.Events(); ok {
		t.Fatal("slow's channel is still open")
	}
	if !errors.Is(slow.Err(), ErrTooSlow) {
		t.Fatalf("slow.Err() = %v; want ErrTooSlow", slow.Err())
	}
	if fast.Err() != nil {
		t.Fatalf("fast.Err() = %v; want nil", fast.Err())
	}
	if got := h.Subscribers(); got != 1 {
		t.Fatalf("Subscribers() = %d; want 1", got)
	}
}

func TestHubRefetch(t *testing.T) {
	h := NewHub(HubOptions{})
	a, b := uuid.New(), uuid.New()
	subs := map[*Subscription]uuid.UUID{h.Subscribe(a): a, h.Subscribe(a): a, h.Subscribe(b): b}
	h.Refetch()
	for s, ws := range subs {
		e, ok := pending(s)
		if !ok || !e.Refetch || e.WorkspaceID != ws || e.Kind != "" {
			t.Fatalf("got %+v (%v); want a Refetch of %s", e, ok, ws)
		}
	}
}

func TestSubscriptionEnd(t *testing.T) {
	tests := []struct {
		name    string
		end     func(h *Hub, s *Subscription)
		wantErr error
		// othersOpen: the hub and its other subscriptions stay open.
		othersOpen bool
	}{
		{"Close", func(_ *Hub, s *Subscription) { s.Close() }, nil, true},
		{"CloseTwice", func(_ *Hub, s *Subscription) { s.Close(); s.Close() }, nil, true},
		{"HubClose", func(h *Hub, _ *Subscription) { h.Close() }, ErrClosed, false},
		{"HubCloseThenClose", func(h *Hub, s *Subscription) { h.Close(); s.Close() }, ErrClosed, false},
		{"CloseThenHubClose", func(h *Hub, s *Subscription) { s.Close(); h.Close() }, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHub(HubOptions{})
			ws := uuid.New()
			s, other := h.Subscribe(ws), h.Subscribe(ws)
			if s.Err() != nil {
				t.Fatalf("Err() before the end = %v; want nil", s.Err())
			}
			tt.end(h, s)
			if _, ok := <-s.Events(); ok {
				t.Fatal("the channel is still open")
			}
			if !errors.Is(s.Err(), tt.wantErr) || (tt.wantErr == nil && s.Err() != nil) {
				t.Fatalf("Err() = %v; want %v", s.Err(), tt.wantErr)
			}
			h.Publish(change(ws, 1)) // must not panic on the closed channel
			if tt.othersOpen {
				if got := h.Subscribers(); got != 1 {
					t.Fatalf("Subscribers() = %d; want 1", got)
				}
				if e, ok := pending(other); !ok || e.Version != 1 {
					t.Fatalf("the other subscriber got %+v (%v); want the event", e, ok)
				}
			} else if !errors.Is(other.Err(), ErrClosed) || h.Subscribers() != 0 {
				t.Fatalf("after the hub's Close: other.Err() = %v, Subscribers() = %d; want ErrClosed, 0", other.Err(), h.Subscribers())
			}
		})
	}
}

func TestHubClosed(t *testing.T) {
	h := NewHub(HubOptions{})
	h.Close()
	s := h.Subscribe(uuid.New())
	if _, ok := <-s.Events(); ok {
		t.Fatal("a subscription to a closed hub is open")
	}
	if !errors.Is(s.Err(), ErrClosed) {
		t.Fatalf("Err() = %v; want ErrClosed", s.Err())
	}
	h.Publish(change(uuid.New(), 1))
	h.Refetch()
	h.Close()
	if got := h.Subscribers(); got != 0 {
		t.Fatalf("Subscribers() = %d; want 0", got)
	}
}

// TestHubConcurrent subscribes, publishes, reads and closes at once, for
// the race detector, and checks that ended subscriptions leave nothing
// behind.
func TestHubConcurrent(t *testing.T) {
	h := NewHub(HubOptions{Buffer: 8})
	spaces := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	var wg sync.WaitGroup
	for i := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := h.Subscribe(spaces[i%len(spaces)])
			for n := 0; n < 5; n++ {
				if _, ok := <-s.Events(); !ok {
					return // too slow: fine here
				}
			}
			s.Close()
		}()
	}
	stop := make(chan struct{})
	var publishers sync.WaitGroup
	for i := range spaces {
		publishers.Add(1)
		go func() {
			defer publishers.Done()
			for v := int64(1); ; v++ {
				select {
				case <-stop:
					return
				default:
				}
				h.Publish(change(spaces[i], v))
				if v%50 == 0 {
					h.Refetch()
					_ = h.Subscribers()
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	publishers.Wait()
	if got := h.Subscribers(); got != 0 {
		t.Fatalf("Subscribers() = %d; want 0", got)
	}
	h.mu.Lock()
	left := len(h.subs)
	h.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d workspaces still in the hub's map", left)
	}
}

// BenchmarkHubFanOut publishes to 1 000 subscribers of one workspace; the
// subscribers are drained outside the timer.
func BenchmarkHubFanOut(b *testing.B) {
	const subscribers = 1000
	h := NewHub(HubOptions{})
	ws := uuid.New()
	subs := make([]*Subscription, subscribers)
	for i := range subs {
		subs[i] = h.Subscribe(ws)
	}
	e := change(ws, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.Publish(e)
		if (i+1)%DefaultBuffer == 0 {
			b.StopTimer()
			for _, s := range subs {
				for len(s.Events()) > 0 {
					<-s.Events()
				}
			}
			b.StartTimer()
		}
	}
	b.StopTimer()
	if got := h.Subscribers(); got != subscribers {
		b.Fatalf("%d subscribers left; want %d", got, subscribers)
	}
}
