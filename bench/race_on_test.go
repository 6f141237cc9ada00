//go:build race

package bench_test

// raceEnabled: the race detector is on, and allocation counts mean nothing.
const raceEnabled = true
