//go:build unix

package bench_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) this process has used so far:
// with SQLite that includes the database engine, with PostgreSQL only
// procsvc's own work. Unlike ns/op it does not count time spent waiting for
// a core, so it stays meaningful on a busy machine.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
