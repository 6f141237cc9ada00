//go:build !unix

package bench_test

import "time"

// processCPU is unavailable here; benchmarks then report no cpu-ns/op.
func processCPU() (time.Duration, bool) { return 0, false }
