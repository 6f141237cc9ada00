package server

import (
	"log/slog"
	"os"
	"runtime/debug"
	"testing"
)

// TestApplyMemoryLimit: the limit becomes the collector's trigger and is
// undone on return; 0 changes nothing.
func TestApplyMemoryLimit(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOGC or GOMEMLIMIT is set: the operator's settings win")
	}
	log := slog.New(slog.DiscardHandler)
	before := debug.SetMemoryLimit(-1) // a negative value reads it
	restore := applyMemoryLimit(200, log)
	limit := debug.SetMemoryLimit(-1)
	percent := debug.SetGCPercent(-1) // returns the setting, which stays -1
	restore()
	if limit != 200<<20 || percent != -1 {
		t.Fatalf("limit %d, GC percent %d; want %d and -1", limit, percent, 200<<20)
	}
	if after := debug.SetMemoryLimit(-1); after != before {
		t.Fatalf("limit after restore %d, want %d", after, before)
	}
	prev := debug.SetGCPercent(100)
	debug.SetGCPercent(prev)
	if prev == -1 {
		t.Fatal("GC percent not restored")
	}
	applyMemoryLimit(0, log)()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Fatalf("0 changed the limit to %d", got)
	}
}
