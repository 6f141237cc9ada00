package defaults_test

import (
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/defaults"
)

func TestPositiveKeepsPositiveValuesOnly(t *testing.T) {
	for _, tt := range []struct{ v, want int }{{0, 7}, {-3, 7}, {1, 1}, {9, 9}} {
		v := tt.v
		defaults.Positive(&v, 7)
		if v != tt.want {
			t.Errorf("Positive(%d, 7) left %d; want %d", tt.v, v, tt.want)
		}
	}
	d := time.Duration(0)
	defaults.Positive(&d, time.Second)
	if d != time.Second {
		t.Errorf("a zero duration became %s; want 1s", d)
	}
}
