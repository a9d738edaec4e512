package main

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The /proc readers see this process: a peak RSS and some CPU time.
func TestProcReaders(t *testing.T) {
	if kb, cpu := statusKB(os.Getpid(), "VmHWM"), cpuTime(os.Getpid()); kb <= 0 || cpu <= 0 {
		t.Errorf("VmHWM %d KiB, CPU %v", kb, cpu)
	}
}
