//go:build unix

package natsbridge_test

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) the process has used
// so far, and true: on a shared machine it varies much less than the
// elapsed time.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
