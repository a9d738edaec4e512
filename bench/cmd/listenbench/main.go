// Command listenbench measures subscriptions/listen (MCP 2026-07-28,
// SEP-2575) on four servers side by side, over real loopback Streamable
// HTTP: this library alone (bench/cmd/listenserver: a hub, listen.NewServer
// and streamhttp), this library behind the go-sdk (examples/server, "ours"),
// the floor (bench/cmd/floorserver, the cheapest server we know how to write
// for this work) and a plain go-sdk v1.8.0 server (bench/cmd/gosdkserver). It measures fan-out latency and
// server CPU per delivered notification at N streams, memory and goroutines
// per open stream, the open rate and the trigger call. It builds the
// servers, runs every measurement on a fresh process of one of them (one at
// a time, the servers taking turns in rotated order), and writes
// OUT/benchmarks.md and OUT/benchmarks.json. Linux only. Run it from the
// repository root:
//
//	go run ./bench/cmd/listenbench [-n 100,1000,10000] [-runs 5] [-triggers 5] [-servers listen,floor] [-out-dir bench/results] [-quick]
//
// -listen-bin, -ours-bin, -floor-bin and -gosdk-bin take prebuilt servers (another
// commit's, say); -ours-args and the like add flags to a server.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
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
	cfg := harness.Default()
	ns := fs.String("n", "100,1000,10000", "comma-separated stream counts")
	fs.IntVar(&cfg.Runs, "runs", cfg.Runs, "fresh server processes per server and N (rounds)")
	fs.IntVar(&cfg.Triggers, "triggers", cfg.Triggers, "measured triggers per run")
	fs.IntVar(&cfg.OpenConcurrency, "open-concurrency", cfg.OpenConcurrency, "listens being opened at once")
	fs.DurationVar(&cfg.Settle, "settle", cfg.Settle, "pause before each memory reading")
	outDir := fs.String("out-dir", cfg.OutDir, "directory for benchmarks.md and benchmarks.json (relative: to the repository root)")
	quick := fs.Bool("quick", false, "smoke test: N=20, 1 run, 2 triggers (-n still applies)")
	cfg.Bins, cfg.Args = map[string]string{}, map[string][]string{}
	extra := map[string]*string{}
	for _, k := range harness.Kinds {
		fs.Func(k.ID+"-bin", "prebuilt "+k.Pkg+" binary (default: go build it)", func(s string) error { cfg.Bins[k.ID] = s; return nil })
		extra[k.ID] = fs.String(k.ID+"-args", "", "extra flags for "+k.Name+", space-separated")
	}
	fs.Func("servers", "comma-separated servers to run (default: listen,ours,floor,gosdk)", func(s string) error {
		cfg.Servers = strings.Split(s, ",")
		for _, id := range cfg.Servers {
			if !slices.ContainsFunc(harness.Kinds, func(k harness.Kind) bool { return k.ID == id }) {
				return fmt.Errorf("no server %q", id)
			}
		}
		return nil
	})
	repo := fs.String("repo", "", "repository root (default: found from the working directory)")
	set, err := harness.ParseArgs(fs, args)
	if err != nil {
		return err
	}
	if *quick {
		cfg.Ns, cfg.Runs, cfg.Triggers = []int{20}, 1, 2
		cfg.TriggerGap, cfg.Settle, cfg.DeliveryTimeout = 20*time.Millisecond, 200*time.Millisecond, 10*time.Second
	}
	if set["n"] || !*quick {
		if cfg.Ns, err = parseInts(*ns); err != nil {
			return fmt.Errorf("-n: %w", err)
		}
	}
	for id, a := range extra {
		if f := strings.Fields(*a); len(f) > 0 {
			cfg.Args[id] = f
		}
	}
	if cfg.RepoRoot, cfg.OutDir, err = harness.Dirs(*repo, *outDir); err != nil {
		return err
	}
	cfg.Command = strings.TrimSpace("go run ./bench/cmd/listenbench " + strings.Join(args, " "))
	cfg.Log = harness.Logf(log)
	res, err := harness.Run(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "wrote %s/benchmarks.md and benchmarks.json in %v\n", cfg.OutDir, res.Finished.Sub(res.Started).Round(time.Second))
	return nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.ReplaceAll(strings.TrimSpace(f), "_", ""))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad stream count %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}
