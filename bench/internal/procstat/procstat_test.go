package procstat_test

import (
	"os"
	"runtime"
	"slices"
	"testing"

	"go.uber.org/goleak"

	"github.com/mcplisten/listen/bench/internal/procstat"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux")
	}
	rss, hwm, err := procstat.Memory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if rss <= 0 || hwm < rss {
		t.Errorf("Memory = %d, %d: want a positive RSS and a peak at least as large", rss, hwm)
	}
	if _, _, err := procstat.Memory(-1); err == nil {
		t.Error("Memory(-1): no error")
	}
}

func TestCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux")
	}
	before, err := procstat.CPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for i := range 50_000_000 {
		x += i
	}
	after, err := procstat.CPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after <= before {
		t.Errorf("CPU did not grow over a loop (%d): %v, then %v", x, before, after)
	}
	if _, err := procstat.CPU(-1); err == nil {
		t.Error("CPU(-1): no error")
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		in := slices.Clone(c.in)
		if got := procstat.Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
		if !slices.Equal(in, c.in) {
			t.Errorf("Median changed its input: %v, was %v", c.in, in)
		}
	}
	if got := procstat.MiB(3 << 19); got != 1.5 {
		t.Errorf("MiB(3<<19) = %v, want 1.5", got)
	}
}
