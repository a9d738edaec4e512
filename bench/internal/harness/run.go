package harness

import (
	"context"
	"encoding/json"
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
	Servers  []*ServerResult
}

// ServerResult is one server's measurements.
type ServerResult struct {
	Kind Kind
	// Args are the flags it was started with besides -addr, -quiet and
	// -lifetime.
	Args   []string
	Fanout []*FanoutSet
}

// FanoutSet is the fan-out scenario's runs at one N.
type FanoutSet struct {
	N      int
	Runs   []*FanoutRun
	Errors []string `json:",omitempty"`
}

// Machine describes where the benchmark ran.
type Machine struct {
	NProc              int
	Model, MemTotal    string
	GoVersion, Kernel  string
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
	nofile, err := RaiseNoFile(uint64(slices.Max(cfg.Ns) + 1024))
	if err != nil {
		return nil, err
	}
	res.Machine = machine()
	res.Machine.NoFile = nofile
	res.Commit, res.Dirty = gitState(ctx, cfg.RepoRoot)
	kinds := slices.DeleteFunc(slices.Clone(Kinds), func(k Kind) bool {
		return len(cfg.Servers) > 0 && !slices.Contains(cfg.Servers, k.ID)
	})
	if res.Servers, err = Fanouts(ctx, cfg, kinds); err != nil {
		return nil, err
	}
	res.Finished = time.Now()
	res.Machine.LoadEnd = LoadAverage()
	return res, write(cfg.OutDir, "benchmarks", res, renderMarkdown(res))
}

// write writes res as dir/name.json and md as dir/name.md.
func write(dir, name string, res any, md string) error {
	js, err := json.MarshalIndent(res, "", "  ")
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, name+".json"), append(js, '\n'), 0o644)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, name+".md"), []byte(md), 0o644)
	}
	return err
}

// Fanouts builds the servers of kinds and runs the fan-out scenario
// cfg.Runs times per server at each of cfg.Ns, each run on a fresh process.
func Fanouts(ctx context.Context, cfg Config, kinds []Kind) ([]*ServerResult, error) {
	maxN := slices.Max(cfg.Ns)
	tmp, err := os.MkdirTemp("", "listenbench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var bins []*Server
	var out []*ServerResult
	for _, kind := range kinds {
		cfg.logf("building %s", kind.Pkg)
		s, err := Build(ctx, cfg.RepoRoot, tmp, kind, cfg.Bins[kind.ID], maxN, cfg.Args[kind.ID]...)
		if err != nil {
			return nil, err
		}
		bins = append(bins, s)
		out = append(out, &ServerResult{Kind: kind, Args: s.Args()})
	}
	for _, n := range cfg.Ns {
		sets := make([]*FanoutSet, len(bins))
		for i := range bins {
			sets[i] = &FanoutSet{N: n}
			out[i].Fanout = append(out[i].Fanout, sets[i])
		}
		// A discarded first run: the first run at an N pays the machine's one-time
		// costs (the floor in the first slot: 3,546 opens/s, then 6,306/s).
		cfg.logf("warm-up %s N=%d (discarded)", bins[0].kind.ID, n)
		if _, err := bins[0].Fanout(ctx, &cfg, n, -1); err != nil && ctx.Err() == nil {
			cfg.logf("  warm-up error: %v", err)
		}
		for run := range cfg.Runs {
			// The servers take turns, in an order rotated from round to
			// round, so that a change in the machine's background load
			// hits them alike.
			for _, i := range rotation(len(bins), run) {
				cfg.logf("fanout %s N=%d run %d", bins[i].kind.ID, n, run+1)
				r, err := bins[i].Fanout(ctx, &cfg, n, run)
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
	}
	return out, nil
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

func logFanout(cfg *Config, r *FanoutRun) {
	cfg.logf("  opened %d refused %d in %.2fs (%.0f/s); RSS %d → %d KiB; %d goroutines",
		r.Opened, r.Refused, r.OpenSeconds, r.OpenRate, r.Before.RSSKB, r.Settled.RSSKB, r.Goroutines)
	for _, t := range r.Triggers {
		cfg.logf("  trigger: first %.2f p50 %.2f last %.2f ms (call %.2f ms; server CPU %.1f ms)",
			ms(t.First), ms(t.P50), ms(t.Last), ms(t.Call), ms(t.ServerCPU))
	}
	for _, p := range r.Problems {
		cfg.logf("  problem: %s", p)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// RaiseNoFile raises RLIMIT_NOFILE (the server processes inherit it) to at
// least need if it can, and returns the soft limit in force.
func RaiseNoFile(need uint64) (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	if want := max(need, 65536, lim.Cur); lim.Cur < want {
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
	m := Machine{NProc: runtime.NumCPU(), GoVersion: runtime.Version(), LoadStart: LoadAverage()}
	field := func(file, key string) string {
		b, _ := os.ReadFile(file)
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == key {
				return strings.TrimSpace(v)
			}
		}
		return ""
	}
	m.Model = field("/proc/cpuinfo", "model name")
	if kb, err := strconv.ParseFloat(strings.TrimSuffix(field("/proc/meminfo", "MemTotal"), " kB"), 64); err == nil {
		m.MemTotal = fmt.Sprintf("%.1f GiB", kb/(1<<20))
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	return m
}

// LoadAverage returns the first three fields of /proc/loadavg.
func LoadAverage() string {
	b, _ := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}

// FindRepoRoot walks up from dir to the checkout holding go.work and the
// servers.
func FindRepoRoot(dir string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if fileExists(filepath.Join(d, "go.work")) && fileExists(filepath.Join(d, "bench", "cmd", "floorserver", "main.go")) {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no checkout with go.work and bench/cmd/floorserver above %s", dir)
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
	st, _ := exec.CommandContext(ctx, "git", "-C", repo, "status", "--porcelain", "--untracked-files=no").Output()
	var dirty []string
	for line := range strings.SplitSeq(string(st), "\n") {
		if len(line) > 3 {
			dirty = append(dirty, line[3:])
		}
	}
	return strings.TrimSpace(string(out)), dirty
}
