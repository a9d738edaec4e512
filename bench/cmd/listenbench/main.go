// Command listenbench measures subscriptions/listen (MCP 2026-07-28,
// SEP-2575) on three servers side by side, over real loopback Streamable
// HTTP: ours (examples/server), the floor (bench/cmd/floorserver, the
// cheapest server we know how to write for this work) and a plain go-sdk
// v1.8.0 server (bench/cmd/gosdkserver). It measures fan-out latency and
// server CPU per delivered notification at N streams, memory and goroutines
// per open stream, the open rate, the trigger call, and the effect of one
// client that stops reading. It builds the servers, runs every measurement
// on a fresh process of one of them (one at a time, the servers taking
// turns in rotated order), and writes OUT/benchmarks.md, OUT/benchmarks.json
// and OUT/fanout.png. Linux only. Run it from the repository root:
//
//	go run ./bench/cmd/listenbench [-n 100,1000,10000] [-runs 5] [-triggers 5] [-out-dir bench/results] [-quick]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/mcplisten/listen/bench/internal/harness"
)

func main() { harness.Main("listenbench", run) }

// run parses args, runs the benchmark and writes the outputs.
func run(ctx context.Context, args []string, log io.Writer) error {
	fs := flag.NewFlagSet("listenbench", flag.ContinueOnError)
	fs.SetOutput(log)
	def := harness.Default()
	ns := fs.String("n", joinInts(def.Ns), "comma-separated stream counts of the fan-out scenario")
	runs := fs.Int("runs", def.Runs, "fresh server processes per server and N (rounds of the fan-out scenario)")
	stallRuns := fs.Int("stall-runs", def.StallRuns, "fresh server processes per server, mode and notification size in the stalled-client scenario")
	debounce := fs.Duration("debounce", def.Debounce, "the go-sdk's list-change debounce, taken off its latencies in the \"less debounce\" figures")
	triggers := fs.Int("triggers", def.Triggers, "measured triggers per fan-out run")
	warmup := fs.Int("warmup", def.Warmup, "warm-up triggers per fan-out run, not counted")
	outDir := fs.String("out-dir", def.OutDir, "directory for benchmarks.md, benchmarks.json and fanout.png (relative: to the repository root)")
	quick := fs.Bool("quick", false, "smoke test: N=20, 1 run, small stalled-client scenarios (explicit flags still apply)")
	conc := fs.Int("open-concurrency", def.OpenConcurrency, "listens being opened at once")
	settle := fs.Duration("settle", def.Settle, "pause before each memory reading")
	gap := fs.Duration("trigger-gap", def.TriggerGap, "pause between triggers, after full delivery")
	stallStreams := fs.Int("stall-streams", def.StallStreams, "streams in the stalled-client scenario, the stalled one included")
	stallTriggers := fs.Int("stall-triggers", def.StallTriggers, "trigger_resource_update calls in the stalled-client scenario")
	stallURI := fs.String("stall-uri-bytes", joinInts(def.StallURIBytes), "comma-separated paddings of the watched resource URI, one stalled-client scenario each (large ones fill socket buffers)")
	stallObserve := fs.Duration("stall-observe", def.StallObserve, "how long to watch the stalled socket after the last trigger")
	stallRcvBuf := fs.Int("stall-rcvbuf", def.StallRcvBuf, "SO_RCVBUF of the stalled client's socket (0: kernel default)")
	bins, extra := map[string]*string{}, map[string]*string{}
	for _, k := range harness.Kinds {
		bins[k.ID] = fs.String(k.ID+"-bin", "", "prebuilt "+k.Pkg+" binary (default: go build it)")
		extra[k.ID] = fs.String(k.ID+"-args", "", "extra flags for "+k.Name+", space-separated")
	}
	skipStall := fs.Bool("skip-stall", false, "skip the stalled-client scenario")
	cpuProfile := fs.Duration("cpuprofile", 0, "if positive, profile each server's CPU this long (net/http/pprof) at the largest N, during extra triggers, and add the top functions to the report")
	repo := fs.String("repo", "", "repository root (default: found from the working directory)")
	set, err := harness.ParseArgs(fs, args)
	if err != nil {
		return err
	}

	cfg := def
	if *quick {
		cfg = harness.Quick()
	}
	if set["n"] || !*quick {
		if cfg.Ns, err = parseInts(*ns); err != nil {
			return fmt.Errorf("-n: %w", err)
		}
	}
	if set["stall-uri-bytes"] {
		if cfg.StallURIBytes, err = parseInts(*stallURI); err != nil {
			return fmt.Errorf("-stall-uri-bytes: %w", err)
		}
	}
	apply := func(name string, dst *int, v int) {
		if set[name] {
			*dst = v
		}
	}
	apply("runs", &cfg.Runs, *runs)
	apply("stall-runs", &cfg.StallRuns, *stallRuns)
	apply("triggers", &cfg.Triggers, *triggers)
	apply("warmup", &cfg.Warmup, *warmup)
	apply("open-concurrency", &cfg.OpenConcurrency, *conc)
	apply("stall-streams", &cfg.StallStreams, *stallStreams)
	apply("stall-triggers", &cfg.StallTriggers, *stallTriggers)
	apply("stall-rcvbuf", &cfg.StallRcvBuf, *stallRcvBuf)
	applyDur := func(name string, dst *time.Duration, v time.Duration) {
		if set[name] {
			*dst = v
		}
	}
	applyDur("settle", &cfg.Settle, *settle)
	applyDur("trigger-gap", &cfg.TriggerGap, *gap)
	applyDur("stall-observe", &cfg.StallObserve, *stallObserve)
	applyDur("debounce", &cfg.Debounce, *debounce)
	cfg.SkipStall = *skipStall
	cfg.CPUProfile = *cpuProfile
	cfg.Bins, cfg.Args = map[string]string{}, map[string][]string{}
	for _, k := range harness.Kinds {
		if *bins[k.ID] != "" {
			cfg.Bins[k.ID] = *bins[k.ID]
		}
		if a := strings.Fields(*extra[k.ID]); len(a) > 0 {
			cfg.Args[k.ID] = a
		}
	}
	if cfg.RepoRoot, cfg.OutDir, err = harness.Dirs(*repo, *outDir); err != nil {
		return err
	}
	cfg.Command = "go run ./bench/cmd/listenbench"
	if len(args) > 0 {
		cfg.Command += " " + strings.Join(args, " ")
	}
	cfg.Log = harness.Logf(log)

	res, err := harness.Run(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "wrote %s/benchmarks.md, benchmarks.json and fanout.png in %v\n",
		cfg.OutDir, res.Finished.Sub(res.Started).Round(time.Second))
	return nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		f = strings.ReplaceAll(strings.TrimSpace(f), "_", "")
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad stream count %q", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("no stream count")
	}
	return out, nil
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}
