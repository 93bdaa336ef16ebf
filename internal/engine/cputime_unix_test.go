//go:build unix

package engine_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system, all threads) the process
// has used: benchmarks report it per step beside wall time, because on a
// shared machine another tenant's load stretches wall time but much less
// the CPU a step costs.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
