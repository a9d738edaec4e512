// Command clusterbench measures what it costs to serve subscriptions/listen
// from several instances of one MCP server: N examples/server processes
// joined by a broker (-broker), S listen streams on each, a tools change
// made through the first instance, side by side with one process holding
// N x S streams; on NATS (nats-server, built from the nats-server module)
// and on Redis (Debian's redis-server) in the same run. It reports, per
// instance, the last stream's and the p50 and p99 latencies and the
// server CPU per delivered notification, and the broker's CPU; then the
// faults: a broker restart during a stream of changes (every stream must
// survive, get the resync hint, and receive nothing twice) and one instance
// killed (the others keep serving). It writes OUT/cluster.md and
// OUT/cluster.json. Linux only. Run it from the repository root:
//
//	go run ./bench/cmd/clusterbench [-instances 3] [-streams 5000] [-runs 5] [-brokers nats,redis] [-quick]
//
// redis-server is the one on PATH; nats-server is built from the module.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcplisten/listen/bench/internal/harness"
)

func main() { harness.Main("clusterbench", run) }

func run(ctx context.Context, args []string, log io.Writer) error {
	fs := flag.NewFlagSet("clusterbench", flag.ContinueOnError)
	fs.SetOutput(log)
	cfg := harness.DefaultCluster()
	fs.IntVar(&cfg.Instances, "instances", cfg.Instances, "server processes joined by the broker")
	fs.IntVar(&cfg.Streams, "streams", cfg.Streams, "listen streams per instance")
	fs.IntVar(&cfg.Runs, "runs", cfg.Runs, "rounds: fresh processes for every setup in each")
	fs.IntVar(&cfg.Triggers, "triggers", cfg.Triggers, "measured changes per run")
	brokers := fs.String("brokers", strings.Join(cfg.Brokers, ","), "comma-separated brokers: nats, redis")
	fs.IntVar(&cfg.FaultStreams, "fault-streams", cfg.FaultStreams, "streams per instance in the fault scenarios")
	fs.IntVar(&cfg.FaultChanges, "fault-changes", cfg.FaultChanges, "changes published during the broker restart")
	outDir := fs.String("out-dir", cfg.OutDir, "directory for cluster.md and cluster.json (relative: to the repository root)")
	quick := fs.Bool("quick", false, "smoke test: 50 streams per instance, 1 run, 2 changes, small faults (explicit flags still apply)")
	repo := fs.String("repo", "", "repository root (default: found from the working directory)")
	set, err := harness.ParseArgs(fs, args)
	if err != nil {
		return err
	}
	cfg.Brokers = strings.Split(*brokers, ",")
	if *quick {
		for name, p := range map[string]*int{"streams": &cfg.Streams, "runs": &cfg.Runs, "triggers": &cfg.Triggers,
			"fault-streams": &cfg.FaultStreams, "fault-changes": &cfg.FaultChanges} {
			if !set[name] {
				*p = map[string]int{"streams": 50, "runs": 1, "triggers": 2, "fault-streams": 20, "fault-changes": 15}[name]
			}
		}
		cfg.Settle, cfg.TriggerGap = 300*time.Millisecond, 50*time.Millisecond
	}
	if cfg.RepoRoot, cfg.OutDir, err = harness.Dirs(*repo, *outDir); err != nil {
		return err
	}
	cfg.Command = strings.TrimSpace("go run ./bench/cmd/clusterbench " + strings.Join(args, " "))
	cfg.Log = harness.Logf(log)
	res, err := harness.RunCluster(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "wrote %s and %s (%s)\n", filepath.Join(cfg.OutDir, "cluster.md"), filepath.Join(cfg.OutDir, "cluster.json"),
		res.Finished.Sub(res.Started).Round(time.Second))
	return nil
}
