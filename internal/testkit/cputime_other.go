//go:build !unix

package testkit

import "time"

// ProcessCPU is not available here: it returns false.
func ProcessCPU() (time.Duration, bool) { return 0, false }
