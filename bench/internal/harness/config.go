// Package harness measures subscriptions/listen (MCP 2026-07-28, SEP-2575)
// over real loopback Streamable HTTP against three server processes: ours
// (examples/server: go-sdk v1.8.0 in front, our streamhttp handler and
// hub.Hub for listen), the floor (bench/cmd/floorserver: the cheapest server
// we know how to write for this exact work) and a plain go-sdk v1.8.0 server
// (bench/cmd/gosdkserver). It builds the three, runs each measurement on a
// fresh process of one of them, interleaving the servers run by run, and
// writes a markdown report, the raw results as JSON and a PNG chart.
//
// It is Linux-only: it reads /proc for memory, CPU time, threads and socket
// states.
package harness

import (
	"fmt"
	"time"
)

// Config is one benchmark run's parameters.
type Config struct {
	// RepoRoot is the checkout holding go.work and the three servers.
	RepoRoot string `json:"-"`
	// OutDir receives benchmarks.md, benchmarks.json and fanout.png.
	OutDir string
	// Command is the command line recorded in the report.
	Command string

	// Ns are the stream counts of the fan-out scenario.
	Ns []int
	// Runs is the number of fresh server processes per server and N. The
	// servers take turns within each round of runs, in an order rotated
	// from round to round.
	Runs int
	// Triggers is the number of measured triggers per run; Warmup triggers
	// run first and are not counted.
	Triggers, Warmup int
	// TriggerGap is the pause after every stream got a trigger's
	// notification, before the next trigger.
	TriggerGap time.Duration
	// OpenConcurrency bounds the listens being opened at once.
	OpenConcurrency int
	// Settle is the pause before each memory reading.
	Settle time.Duration
	// DeliveryTimeout bounds the wait for one trigger's notifications.
	DeliveryTimeout time.Duration
	// Debounce is the go-sdk's list-change debounce (its notificationDelay):
	// the report also gives its latencies less this much.
	Debounce time.Duration

	// Stall* configure the stalled-client scenario.
	StallRuns     int           // fresh processes per server, mode and notification size
	StallStreams  int           // streams in all, the stalled one included
	StallTriggers int           // trigger_resource_update calls, one after the other
	StallURIBytes []int         // lengths of the 'a' padding of the URI: one sub-scenario each
	StallObserve  time.Duration // how long after the last trigger to watch the stalled socket
	// StallCallTimeout is how long a trigger call may take before the
	// server is deemed blocked (no further trigger is sent).
	StallCallTimeout time.Duration
	StallRcvBuf      int // SO_RCVBUF of the stalled socket; 0 = kernel default

	// SkipStall skips the stalled-client scenario.
	SkipStall bool
	// CPUProfile, if positive, is the length of a CPU profile taken of each
	// server (through its net/http/pprof) at the largest N, in the first
	// run, during extra triggers after the measured ones.
	CPUProfile time.Duration

	// Bins maps a server's Kind.ID to a prebuilt binary (else it is built
	// from RepoRoot); Args to extra flags for it.
	Bins map[string]string   `json:",omitempty"`
	Args map[string][]string `json:",omitempty"`

	// Log, if set, receives progress lines.
	Log func(format string, args ...any) `json:"-"`
}

// Default returns the full benchmark's parameters.
func Default() Config {
	return Config{
		OutDir:          "bench/results",
		Ns:              []int{100, 1000, 10000},
		Runs:            5,
		Triggers:        5,
		Warmup:          1,
		TriggerGap:      100 * time.Millisecond,
		OpenConcurrency: 128,
		Settle:          2 * time.Second,
		DeliveryTimeout: 60 * time.Second,
		Debounce:        10 * time.Millisecond,
		StallRuns:       3,
		StallStreams:    100,
		// 100 notifications: 6.5 MB for the stalled client with 64 KiB
		// URIs, more than the loopback socket buffers hold (the server's
		// send buffer autotunes up to tcp_wmem's 4 MiB maximum); and the
		// same with an ordinary URI, which never fills them.
		StallTriggers:    100,
		StallURIBytes:    []int{64 << 10, 6},
		StallObserve:     15 * time.Second,
		StallCallTimeout: 30 * time.Second,
	}
}

// Quick returns a smoke test's parameters: the whole pipeline on small
// numbers, in seconds.
func Quick() Config {
	c := Default()
	c.Ns = []int{20}
	c.Runs = 1
	c.Triggers = 2
	c.Warmup = 1
	c.TriggerGap = 20 * time.Millisecond
	c.Settle = 200 * time.Millisecond
	c.DeliveryTimeout = 10 * time.Second
	c.StallRuns = 1
	c.StallStreams = 10
	c.StallTriggers = 5
	c.StallURIBytes = []int{1 << 10, 6}
	c.StallObserve = 300 * time.Millisecond
	c.StallCallTimeout = 5 * time.Second
	return c
}

func (c *Config) validate() error {
	switch {
	case len(c.Ns) == 0:
		return fmt.Errorf("no stream counts")
	case c.Runs < 1 || c.Triggers < 1 || c.Warmup < 0 || c.StallRuns < 1:
		return fmt.Errorf("runs and triggers must be positive")
	case c.OpenConcurrency < 1:
		return fmt.Errorf("open concurrency must be positive")
	case c.StallStreams < 2 || c.StallTriggers < 1 || len(c.StallURIBytes) == 0:
		return fmt.Errorf("the stalled-client scenario needs at least 2 streams and 1 trigger")
	}
	for _, n := range c.Ns {
		if n < 1 {
			return fmt.Errorf("stream count %d", n)
		}
	}
	return nil
}

func (c *Config) logf(format string, args ...any) {
	if c.Log != nil {
		c.Log(format, args...)
	}
}

func (c *Config) maxN() int {
	m := c.StallStreams
	for _, n := range c.Ns {
		m = max(m, n)
	}
	return m
}
