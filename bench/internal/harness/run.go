package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Results are everything one benchmark run measured.
type Results struct {
	Command string
	// Commit is the checkout's HEAD when the servers were built; Dirty
	// lists its tracked files with uncommitted changes then.
	Commit   string
	Dirty    []string `json:",omitempty"`
	Started  time.Time
	Finished time.Time
	Machine  Machine
	Config   Config
	// Load is the CPU spent per phase, by this benchmark and by the other
	// processes of the machine.
	Load    []PhaseLoad
	Servers []*ServerResult
}

// ServerResult is one server's measurements.
type ServerResult struct {
	Kind Kind
	// Args are the extra flags it was started with (besides -addr, -quiet
	// and -lifetime); Flags are the flags its -h output lists.
	Args, Flags []string
	// Idle is the goroutine dump and status of a fresh, idle process.
	Idle       dump
	IdleStatus procStatus
	IdleErr    string `json:",omitempty"`
	Fanout     []*FanoutSet
	// Stall holds the stalled-client scenario's runs, one set per
	// notification size (Config.StallURIBytes).
	Stall []*StallSet
}

// FanoutSet is the fan-out scenario's runs at one N.
type FanoutSet struct {
	N      int
	Runs   []*FanoutRun
	Errors []string `json:",omitempty"`
}

// StallSet is the stalled-client scenario's runs at one notification size.
type StallSet struct {
	URIBytes         int
	Control, Stalled []*StallRun
	Errors           []string `json:",omitempty"`
}

// Machine describes where the benchmark ran.
type Machine struct {
	NProc              int
	Model              string
	MemTotal           string
	GoVersion          string
	Kernel             string
	LoadStart, LoadEnd string
	NoFile             uint64
}

// Run runs the benchmark and writes the report.
func Run(ctx context.Context, cfg Config) (*Results, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	res := &Results{Command: cfg.Command, Started: time.Now(), Config: cfg}
	res.Config.Log = nil
	// Each process (this one, and each server) holds one descriptor per
	// stream plus a few; the servers inherit the limit.
	nofile, err := raiseNoFile(uint64(cfg.maxN() + 1024))
	if err != nil {
		return nil, err
	}
	res.Machine = machine()
	res.Machine.NoFile = nofile
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "listenbench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	res.Commit, res.Dirty = gitState(ctx, cfg.RepoRoot)
	var bins []*serverBin
	for _, kind := range Kinds {
		cfg.logf("building %s", kind.Pkg)
		b, err := build(ctx, cfg.RepoRoot, tmp, kind, cfg.Bins[kind.ID], cfg.Args[kind.ID])
		if err != nil {
			return nil, err
		}
		// A server with a stream cap flag gets one above every N measured;
		// one with a -pprof flag serves net/http/pprof (goroutine counts,
		// forced GC, CPU profiles).
		if b.has("max-streams") && !hasFlag(b.args, "max-streams") {
			b.args = append(b.args, "-max-streams="+strconv.Itoa(cfg.maxN()+16))
		}
		if b.has("pprof") && !hasFlag(b.args, "pprof") {
			b.args = append(b.args, "-pprof")
		}
		bins = append(bins, b)
		sr := &ServerResult{Kind: kind, Args: b.args, Flags: b.flags}
		res.Servers = append(res.Servers, sr)
	}

	for i, b := range bins {
		sr := res.Servers[i]
		d, s, err := idleDump(ctx, &cfg, b, tmp)
		if err != nil {
			sr.IdleErr = err.Error()
		}
		sr.Idle, sr.IdleStatus = d, s
		cfg.logf("%s idle: %d goroutines, RSS %d KiB", b.kind.ID, d.Total, s.RSSKB)
	}

	// The stalled-client scenario first, while /proc/net/tcp is short.
	for _, size := range cfg.StallURIBytes {
		if cfg.SkipStall {
			break
		}
		phase := snapshotCPU()
		sets := make([]*StallSet, len(bins))
		for i := range bins {
			sets[i] = &StallSet{URIBytes: size}
			res.Servers[i].Stall = append(res.Servers[i].Stall, sets[i])
		}
		for run := range cfg.StallRuns {
			for _, i := range rotation(len(bins), run) {
				b := bins[i]
				for _, stalled := range []bool{false, true} {
					cfg.logf("stall %s URI %d B run %d stalled=%v", b.kind.ID, size, run+1, stalled)
					r, err := stall(ctx, &cfg, b, tmp, stalled, size)
					if ctx.Err() != nil {
						return nil, ctx.Err()
					}
					if err != nil {
						msg := fmt.Sprintf("run %d (stalled=%v): %v", run+1, stalled, err)
						sets[i].Errors = append(sets[i].Errors, msg)
						cfg.logf("  error: %s", msg)
						continue
					}
					r.Round = run
					if stalled {
						sets[i].Stalled = append(sets[i].Stalled, r)
					} else {
						sets[i].Control = append(sets[i].Control, r)
					}
					logStall(&cfg, r)
				}
			}
		}
		res.Load = append(res.Load, phase.since(fmt.Sprintf("stalled client, %s-byte notifications", commas(noteBytes(stallURI(size))))))
	}

	for _, n := range cfg.Ns {
		phase := snapshotCPU()
		sets := make([]*FanoutSet, len(bins))
		for i := range bins {
			sets[i] = &FanoutSet{N: n}
			res.Servers[i].Fanout = append(res.Servers[i].Fanout, sets[i])
		}
		for run := range cfg.Runs {
			// The servers take turns, in an order rotated from round to
			// round, so that a change in the machine's background load
			// hits them alike.
			for _, i := range rotation(len(bins), run) {
				b := bins[i]
				cfg.logf("fanout %s N=%d run %d", b.kind.ID, n, run+1)
				profile := cfg.CPUProfile > 0 && run == 0 && n == slices.Max(cfg.Ns)
				r, err := fanout(ctx, &cfg, b, tmp, n, run, profile)
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				if err != nil {
					msg := fmt.Sprintf("run %d: %v", run+1, err)
					sets[i].Errors = append(sets[i].Errors, msg)
					cfg.logf("  error: %s", msg)
				}
				if r != nil {
					sets[i].Runs = append(sets[i].Runs, r)
					logFanout(&cfg, r)
				}
			}
		}
		res.Load = append(res.Load, phase.since("fan-out, N = "+commas(n)))
	}
	for _, l := range res.Load {
		cfg.logf("load %s: %v wall, own CPU %v, other processes %v", l.Phase, l.Wall.Round(time.Second), l.Own.Round(time.Millisecond), l.Other.Round(time.Millisecond))
	}

	res.Finished = time.Now()
	res.Machine.LoadEnd = loadavg()
	if err := writeOutputs(res); err != nil {
		return res, err
	}
	return res, nil
}

// rotation is the order in which n servers run in round r: 0…n-1 rotated
// left by r.
func rotation(n, r int) []int {
	out := make([]int, n)
	for k := range out {
		out[k] = (k + r) % n
	}
	return out
}

func hasFlag(args []string, name string) bool {
	for _, a := range args {
		a = strings.TrimLeft(a, "-")
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}

func logStall(cfg *Config, r *StallRun) {
	cfg.logf("  %d triggers sent (blocked at %d), healthy lag p50 %s p99 %s max %s, %d undelivered, total %v",
		r.Sent, r.BlockedAt, lagString(r.P50), lagString(r.P99), lagString(r.Max), r.Undelivered, r.Total.Round(time.Millisecond))
	if f := r.Fate; f != nil {
		cfg.logf("  stalled stream: cut after %v (observed %v, state %s), maxSendQ %d, maxRecvQ %d, read: ack=%v updates=%d bytes=%d end=%s",
			f.CutAfter.Round(time.Millisecond), f.Observed.Round(time.Millisecond), f.ServerState, f.MaxSendQ, f.MaxRecvQ, f.GotAck, f.Updates, f.Bytes, f.End)
	}
	for _, p := range r.Problems {
		cfg.logf("  problem: %s", p)
	}
}

func logFanout(cfg *Config, r *FanoutRun) {
	cfg.logf("  opened %d refused %d in %.2fs (%.0f/s); RSS %d → %d → %d KiB; threads %d; dump %d goroutines",
		r.Opened, r.Refused, r.OpenSeconds, r.OpenRate, r.Before.RSSKB, r.Open.RSSKB, r.Settled.RSSKB, r.Settled.Threads, r.Dump.Total)
	for _, t := range r.Triggers {
		cfg.logf("  trigger: first %.2f p50 %.2f p99 %.2f last %.2f ms (call %.2f ms; CPU server %.1f ms, client %.1f ms)",
			ms(t.First), ms(t.P50), ms(t.P99), ms(t.Last), ms(t.Call), ms(t.ServerCPU), ms(t.ClientCPU))
	}
	for _, p := range r.Problems {
		cfg.logf("  problem: %s", p)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func lagString(d time.Duration) string {
	if d == Never {
		return "never"
	}
	return fmt.Sprintf("%.1f ms", ms(d))
}

// raiseNoFile raises RLIMIT_NOFILE (the server processes inherit it) to at
// least need if it can, and returns the soft limit in force.
func raiseNoFile(need uint64) (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	want := max(need, 65536, lim.Cur)
	if lim.Cur < want {
		nl := syscall.Rlimit{Cur: want, Max: max(want, lim.Max)}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &nl); err != nil {
			// Not allowed above the hard limit: take the hard limit.
			nl = syscall.Rlimit{Cur: lim.Max, Max: lim.Max}
			_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &nl)
		}
	}
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	if lim.Cur < need {
		return lim.Cur, fmt.Errorf("RLIMIT_NOFILE is %d, the benchmark needs %d: raise it (ulimit -n)", lim.Cur, need)
	}
	return lim.Cur, nil
}

func machine() Machine {
	m := Machine{NProc: runtime.NumCPU(), GoVersion: runtime.Version(), LoadStart: loadavg()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.Model = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				f := strings.Fields(v)
				if kb, err := strconv.ParseFloat(f[0], 64); err == nil {
					m.MemTotal = fmt.Sprintf("%.1f GiB", kb/(1<<20))
				}
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	return m
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// writeOutputs writes benchmarks.md, benchmarks.json and fanout.png.
func writeOutputs(res *Results) error {
	dir := res.Config.OutDir
	md := renderMarkdown(res)
	if err := os.WriteFile(filepath.Join(dir, "benchmarks.md"), []byte(md), 0o644); err != nil {
		return err
	}
	js, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "benchmarks.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	return errors.Join(writeChart(res, filepath.Join(dir, "fanout.png")))
}

// FindRepoRoot walks up from dir to the checkout holding go.work and the
// three servers.
func FindRepoRoot(dir string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if fileExists(filepath.Join(d, "go.work")) &&
			fileExists(filepath.Join(d, "examples", "server", "main.go")) &&
			fileExists(filepath.Join(d, "bench", "cmd", "gosdkserver", "main.go")) &&
			fileExists(filepath.Join(d, "bench", "cmd", "floorserver", "main.go")) {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no checkout with go.work, examples/server, bench/cmd/gosdkserver and bench/cmd/floorserver above %s", dir)
		}
		d = parent
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// gitState returns the checkout's HEAD and its modified tracked files.
func gitState(ctx context.Context, repo string) (string, []string) {
	out, err := exec.CommandContext(ctx, "git", "-C", repo, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown", nil
	}
	commit := strings.TrimSpace(string(out))
	st, err := exec.CommandContext(ctx, "git", "-C", repo, "status", "--porcelain", "--untracked-files=no").Output()
	if err != nil {
		return commit, nil
	}
	var dirty []string
	for line := range strings.SplitSeq(strings.TrimRight(string(st), "\n"), "\n") {
		if len(line) > 3 {
			dirty = append(dirty, line[3:])
		}
	}
	return commit, dirty
}
