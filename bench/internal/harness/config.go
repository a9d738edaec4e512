// Package harness measures subscriptions/listen (MCP 2026-07-28, SEP-2575)
// over real loopback Streamable HTTP against server processes: ours
// (examples/server: go-sdk v1.8.0 in front, our streamhttp handler and
// hub.Hub for listen), the floor (bench/cmd/floorserver: the cheapest server
// we know how to write for this exact work) and a plain go-sdk v1.8.0 server
// (bench/cmd/gosdkserver). It builds them, runs each measurement on a fresh
// process of one of them, interleaving the servers run by run, and writes a
// markdown report and the raw results as JSON. The cross-instance benchmark
// (RunCluster) and mcpgobench's fan-out (Build, Server.Fanout) use the same
// parts.
//
// It is Linux-only: it reads /proc for memory and CPU time.
package harness

import (
	"errors"
	"time"
)

// Config is one benchmark run's parameters.
type Config struct {
	// RepoRoot is the checkout holding go.work and the servers.
	RepoRoot string `json:"-"`
	// OutDir receives benchmarks.md and benchmarks.json.
	OutDir string `json:"-"`
	// Command is the command line recorded in the report.
	Command string

	// Ns are the stream counts of the fan-out scenario.
	Ns []int
	// Runs is the number of fresh server processes per server and N. The
	// servers take turns within each round of runs, in an order rotated
	// from round to round.
	Runs int
	Pace

	// Bins maps a server's Kind.ID to a prebuilt binary (else it is built
	// from RepoRoot); Args to extra flags for it.
	Bins map[string]string `json:"-"`
	// Servers are the Kind.IDs to run (empty: every one of Kinds).
	Servers []string            `json:",omitempty"`
	Args    map[string][]string `json:",omitempty"`

	// Log, if set, receives progress lines.
	Log func(format string, args ...any) `json:"-"`
}

// Pace is how a run opens its streams and triggers its changes.
type Pace struct {
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
}

// Default returns the full benchmark's parameters.
func Default() Config {
	return Config{OutDir: "bench/results", Ns: []int{100, 1000, 10000}, Runs: 5, Pace: Pace{
		Triggers: 5, Warmup: 1, TriggerGap: 100 * time.Millisecond, OpenConcurrency: 128,
		Settle: 2 * time.Second, DeliveryTimeout: 60 * time.Second,
	}}
}

func (c *Config) validate() error {
	if len(c.Ns) == 0 || c.Runs < 1 || c.Triggers < 1 || c.Warmup < 0 || c.OpenConcurrency < 1 {
		return errors.New("need a stream count, and positive runs, triggers and open concurrency")
	}
	return nil
}

func (c *Config) logf(format string, args ...any) {
	if c.Log != nil {
		c.Log(format, args...)
	}
}
