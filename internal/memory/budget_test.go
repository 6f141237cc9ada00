package memory

import (
	"sync"
	"testing"
)

func TestBudget(t *testing.T) {
	t.Run("SharePerOwner", func(t *testing.T) {
		b := NewBudget[string](100, 30)
		if !b.Reserve("a", 20) || !b.Reserve("a", 10) {
			t.Fatal("a's share refused below it")
		}
		if b.Reserve("a", 1) {
			t.Fatal("a passed its share")
		}
		if !b.Reserve("b", 30) {
			t.Fatal("b refused because of a")
		}
		if got := b.HeldBy("a"); got != 30 {
			t.Fatalf("a holds %d, want 30", got)
		}
		if b.Refused() != 1 {
			t.Fatalf("refused %d, want 1", b.Refused())
		}
	})
	t.Run("OneOversizeWhenHoldingNothing", func(t *testing.T) {
		b := NewBudget[string](100, 30)
		if !b.Reserve("a", 80) {
			t.Fatal("one reservation over the share refused to an owner holding nothing")
		}
		if b.Reserve("a", 1) {
			t.Fatal("a second reservation past the share taken")
		}
		if b.Reserve("b", 21) {
			t.Fatal("the ceiling passed")
		}
		if b.Reserve("c", 101) {
			t.Fatal("a reservation over the ceiling taken")
		}
	})
	t.Run("ReleaseGivesBack", func(t *testing.T) {
		b := NewBudget[int](100, 50)
		b.Reserve(1, 50)
		b.Release(1, 20)
		if !b.Reserve(1, 20) {
			t.Fatal("released bytes not given back")
		}
		b.Release(1, 50)
		if b.Held() != 0 || len(b.held) != 0 {
			t.Fatalf("held %d in %d owners after releasing everything", b.Held(), len(b.held))
		}
	})
	t.Run("OverReleasePanics", func(t *testing.T) {
		b := NewBudget[int](100, 50)
		b.Reserve(1, 10)
		defer func() {
			if recover() == nil {
				t.Fatal("releasing more than held did not panic")
			}
		}()
		b.Release(1, 11)
	})
	t.Run("ConcurrentReservationsStopAtTheCeiling", func(t *testing.T) {
		b := NewBudget[int](1000, 1000)
		var wg sync.WaitGroup
		var mu sync.Mutex
		taken := 0
		for i := range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 100 {
					if b.Reserve(i%4, 7) {
						mu.Lock()
						taken += 7
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		if taken > 1000 || b.Held() != int64(taken) {
			t.Fatalf("took %d, held %d, ceiling 1000", taken, b.Held())
		}
	})
}
