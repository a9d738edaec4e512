// Package procstat reads a Linux process's memory and CPU time from /proc
// and summarises samples, for bench/cmd/scenarios, which watches a server
// process from outside.
package procstat

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Memory returns the resident set size (VmRSS) and its peak (VmHWM) of
// process pid, in bytes.
func Memory(pid int) (rss, hwm int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("procstat: %s of process %d: %w", k, pid, err)
		}
		if k == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	return rss, hwm, sc.Err()
}

// CPU returns the CPU time that the threads of process pid have run
// (the first field of each /proc/PID/task/TID/schedstat, in nanoseconds).
// A thread that exits while CPU reads is left out.
func CPU(pid int) (time.Duration, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil {
		return 0, err
	}
	if len(tasks) == 0 {
		return 0, fmt.Errorf("procstat: no threads of process %d", pid)
	}
	var total time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the thread exited
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("procstat: %s: %w", t, err)
		}
		total += time.Duration(ns)
	}
	return total, nil
}

// MiB converts bytes to mebibytes.
func MiB(b int64) float64 { return float64(b) / (1 << 20) }

// Median returns the median of v (the mean of the middle two for an even
// count), and 0 for none. v is not changed.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
