package server

import (
	"log/slog"
	"os"
	"runtime/debug"
)

// applyMemoryLimit makes the heap's soft limit, limitMB, the garbage
// collector's trigger, instead of GOGC's default of collecting whenever the
// heap doubles, and returns a function restoring the previous settings.
//
// Why: a list page allocates a lot of short-lived garbage, and under writes
// the live heap is small (the response cache drops dead versions at once),
// so with GOGC=100 the collector runs continuously and costs more CPU per
// request than the request itself (docs/performance.md, "Under writes", has
// the measurement). Trading memory up to the limit for CPU is the better
// deal for a server; the limit bounds memory either way. An operator's GOGC
// or GOMEMLIMIT wins, and 0 keeps the runtime's defaults.
func applyMemoryLimit(limitMB int, log *slog.Logger) (restore func()) {
	if limitMB <= 0 || os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	prevLimit := debug.SetMemoryLimit(int64(limitMB) << 20)
	prevPercent := debug.SetGCPercent(-1)
	log.Debug("memory limit", "mb", limitMB)
	return func() {
		debug.SetGCPercent(prevPercent)
		debug.SetMemoryLimit(prevLimit)
	}
}
