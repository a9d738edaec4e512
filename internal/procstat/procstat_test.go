package procstat_test

import (
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcplisten/listen/internal/procstat"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux")
	}
	rss, hwm, err := procstat.Memory(os.Getpid())
	require.NoError(t, err)
	assert.Positive(t, rss)
	assert.GreaterOrEqual(t, hwm, rss, "the peak is at least the current size")

	_, _, err = procstat.Memory(-1)
	assert.Error(t, err)
}

func TestCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux")
	}
	before, err := procstat.CPU(os.Getpid())
	require.NoError(t, err)
	x := 0
	for i := range 50_000_000 {
		x += i
	}
	after, err := procstat.CPU(os.Getpid())
	require.NoError(t, err)
	assert.Greater(t, after, before, "the loop ran (%d)", x)

	_, err = procstat.CPU(-1)
	assert.Error(t, err)
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
		in := append([]float64(nil), c.in...)
		assert.Equal(t, c.want, procstat.Median(c.in), "%v", c.in)
		assert.Equal(t, in, c.in, "the input is not changed")
	}
	assert.Equal(t, 1.5, procstat.MiB(3<<19))
}
