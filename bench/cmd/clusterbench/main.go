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
	def := harness.DefaultCluster()
	instances := fs.Int("instances", def.Instances, "server processes joined by the broker")
	streams := fs.Int("streams", def.Streams, "listen streams per instance")
	runs := fs.Int("runs", def.Runs, "rounds: fresh processes for every setup in each")
	triggers := fs.Int("triggers", def.Triggers, "measured changes per run")
	warmup := fs.Int("warmup", def.Warmup, "warm-up changes per run, not counted")
	brokers := fs.String("brokers", strings.Join(def.Brokers, ","), "comma-separated brokers: nats, redis")
	faultStreams := fs.Int("fault-streams", def.FaultStreams, "streams per instance in the fault scenarios")
	faultChanges := fs.Int("fault-changes", def.FaultChanges, "changes published during the broker restart")
	outDir := fs.String("out-dir", def.OutDir, "directory for cluster.md and cluster.json (relative: to the repository root)")
	serverBin := fs.String("server-bin", "", "prebuilt examples/server (default: go build it)")
	natsBin := fs.String("nats-bin", "", "prebuilt nats-server (default: go build it from the nats-server module)")
	redisBin := fs.String("redis-bin", "", "redis-server binary (default: the one on PATH)")
	quick := fs.Bool("quick", false, "smoke test: 50 streams per instance, 1 run, small faults")
	repo := fs.String("repo", "", "repository root (default: found from the working directory)")
	set, err := harness.ParseArgs(fs, args)
	if err != nil {
		return err
	}
	cfg := def
	cfg.Instances, cfg.Streams, cfg.Runs = *instances, *streams, *runs
	cfg.Triggers, cfg.Warmup = *triggers, *warmup
	cfg.FaultStreams, cfg.FaultChanges = *faultStreams, *faultChanges
	cfg.Brokers = strings.Split(*brokers, ",")
	if *quick {
		if !set["streams"] {
			cfg.Streams = 50
		}
		if !set["runs"] {
			cfg.Runs = 1
		}
		if !set["triggers"] {
			cfg.Triggers = 2
		}
		if !set["fault-streams"] {
			cfg.FaultStreams = 20
		}
		if !set["fault-changes"] {
			cfg.FaultChanges = 15
		}
		cfg.Settle = 300 * time.Millisecond
		cfg.TriggerGap = 50 * time.Millisecond
	}
	if cfg.RepoRoot, cfg.OutDir, err = harness.Dirs(*repo, *outDir); err != nil {
		return err
	}
	cfg.ServerBin, cfg.NATSBin, cfg.RedisBin = *serverBin, *natsBin, *redisBin
	cfg.Command = "go run ./bench/cmd/clusterbench " + strings.Join(args, " ")
	cfg.Log = func(format string, a ...any) { fmt.Fprintf(log, format+"\n", a...) }

	res, err := harness.RunCluster(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "wrote %s and %s (%s)\n", filepath.Join(cfg.OutDir, "cluster.md"), filepath.Join(cfg.OutDir, "cluster.json"),
		res.Finished.Sub(res.Started).Round(time.Second))
	return nil
}
