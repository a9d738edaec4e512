//go:build unix

package testkit

import (
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time (user and system) the process has used
// so far, and true. Benchmarks report it per operation: on a shared
// machine it varies much less than the elapsed time, which counts the time
// other programs held the cores.
func ProcessCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
