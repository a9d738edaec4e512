package harness

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ClusterConfig is one run of the cross-instance benchmark
// (bench/cmd/clusterbench): Instances examples/server processes joined by
// a broker (-broker), Streams listen streams on each, a tools change made
// through the first instance; side by side with one process holding
// Instances x Streams streams; on NATS and on Redis; and the faults.
type ClusterConfig struct {
	RepoRoot, OutDir string `json:"-"`
	Command          string
	// Instances and Streams (per instance) of the joined setup.
	Instances, Streams int
	// Brokers are the brokers measured: "nats", "redis".
	Brokers []string
	// Runs is the number of rounds; each round runs every setup once
	// (one instance, then each broker, rotated), on fresh processes.
	Runs int
	Pace
	// FaultStreams is the streams per instance of the fault scenarios,
	// FaultChanges the changes published during the broker restart (one
	// resource URI each), FaultGap the time between two of them.
	FaultStreams, FaultChanges int
	FaultGap                   time.Duration
	Log                        func(format string, args ...any) `json:"-"`
}

// DefaultCluster is the benchmark the results in bench/results come from.
func DefaultCluster() ClusterConfig {
	return ClusterConfig{
		OutDir:    "bench/results",
		Instances: 3, Streams: 5000,
		Brokers: []string{"nats", "redis"},
		Runs:    5,
		Pace: Pace{Triggers: 5, Warmup: 1, TriggerGap: 200 * time.Millisecond, OpenConcurrency: 64,
			Settle: 2 * time.Second, DeliveryTimeout: 60 * time.Second},
		FaultStreams: 1000, FaultChanges: 60, FaultGap: 50 * time.Millisecond,
	}
}

func (c *ClusterConfig) logf(format string, args ...any) {
	if c.Log != nil {
		c.Log(format, args...)
	}
}

// ClusterResults are a whole run of the benchmark.
type ClusterResults struct {
	Command           string
	Commit            string
	Dirty             []string `json:",omitempty"`
	Started, Finished time.Time
	Machine           Machine
	Config            ClusterConfig
	Setups            []*ClusterSetup
	Faults            []*FaultResult
	BrokerVersions    map[string]string
	ServerArgs        []string
}

// ClusterSetup is one setup's runs: "one instance" or a broker's name.
type ClusterSetup struct {
	Name   string
	Runs   []*ClusterRun
	Errors []string `json:",omitempty"`
}

// ClusterRun is one run of a setup on fresh processes.
type ClusterRun struct {
	Round int
	// Opened counts the streams opened on each instance.
	Opened []int
	// Triggers are the measured changes.
	Triggers []ClusterTrigger
	Problems []string `json:",omitempty"`
}

// ClusterTrigger is one change: per instance, its streams' latencies from
// just before the tools/call on the first instance, and the CPU time each
// server spent from then to the last delivery; the broker's CPU time.
type ClusterTrigger struct {
	PerInstance []TriggerStats
	All         TriggerStats
	ServerCPU   []time.Duration
	BrokerCPU   time.Duration
}

// broker is a broker process: nats-server or redis-server.
type broker struct {
	kind, bin, dir string
	port           int
	cmd            *exec.Cmd
	exited         chan struct{}
}

// url is what -broker takes.
func (b *broker) url() string {
	return b.kind + "://127.0.0.1:" + strconv.Itoa(b.port)
}

// startBroker starts a broker of kind on a free loopback port.
func startBroker(kind, bin, dir string) (*broker, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	b := &broker{kind: kind, bin: bin, dir: dir, port: port}
	return b, b.start()
}

// start runs the process and waits for its ready line.
func (b *broker) start() error {
	args, ready := []string{"-a", "127.0.0.1", "-p", strconv.Itoa(b.port)}, "Server is ready"
	if b.kind == "redis" {
		ready = "Ready to accept connections"
		args = []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(b.port), "--save", "", "--appendonly", "no",
			"--dir", b.dir, "--logfile", "", "--daemonize", "no"}
	}
	cmd := exec.Command(b.bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout // nats-server logs on stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	b.cmd, b.exited = cmd, make(chan struct{})
	up, exited := make(chan struct{}), b.exited
	go func() { // ends when the process exits (its output closes)
		sc := bufio.NewScanner(out)
		var once sync.Once
		for sc.Scan() {
			if strings.Contains(sc.Text(), ready) {
				once.Do(func() { close(up) })
			}
		}
		_ = cmd.Wait()
		close(exited)
	}()
	select {
	case <-up:
		return nil
	case <-exited:
		return fmt.Errorf("%s exited at start", b.kind)
	case <-time.After(15 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.exited
		return fmt.Errorf("%s not ready within 15s", b.kind)
	}
}

// stop ends the broker with SIGTERM (SIGKILL after 5 s).
func (b *broker) stop() {
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.exited:
	case <-time.After(5 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.exited
	}
}

// RunCluster runs the cross-instance benchmark and writes
// OUT/cluster.md and OUT/cluster.json.
func RunCluster(ctx context.Context, cfg ClusterConfig) (*ClusterResults, error) {
	if cfg.Instances < 2 || cfg.Streams < 1 || cfg.Runs < 1 || cfg.Triggers < 1 {
		return nil, errors.New("need at least 2 instances, 1 stream, 1 run and 1 trigger")
	}
	res := &ClusterResults{Command: cfg.Command, Started: time.Now(), Config: cfg, BrokerVersions: map[string]string{}}
	res.Config.Log = nil
	nofile, err := RaiseNoFile(uint64(cfg.Instances*max(cfg.Streams, cfg.FaultStreams) + 1024))
	if err != nil {
		return nil, err
	}
	res.Machine = machine()
	res.Machine.NoFile = nofile
	res.Commit, res.Dirty = gitState(ctx, cfg.RepoRoot)
	tmp, err := os.MkdirTemp("", "clusterbench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	srv, err := Build(ctx, cfg.RepoRoot, tmp, Ours, "", cfg.Instances*cfg.Streams)
	if err != nil {
		return nil, err
	}
	res.ServerArgs = srv.args
	bins := map[string]string{}
	for _, k := range cfg.Brokers {
		switch k {
		case "nats":
			bins[k] = filepath.Join(tmp, "nats-server")
			cfg.logf("building nats-server")
			cmd := exec.CommandContext(ctx, "go", "build", "-o", bins[k], "github.com/nats-io/nats-server/v2")
			cmd.Dir = filepath.Join(cfg.RepoRoot, "bench")
			if out, err := cmd.CombinedOutput(); err != nil {
				return nil, fmt.Errorf("go build nats-server: %w\n%s", err, out)
			}
		case "redis":
			if bins[k], err = exec.LookPath("redis-server"); err != nil {
				return nil, errors.New("redis-server not found on PATH: install Debian's redis-server package")
			}
		default:
			return nil, fmt.Errorf("unknown broker %q", k)
		}
		out, _ := exec.Command(bins[k], "--version").CombinedOutput()
		res.BrokerVersions[k] = strings.TrimSpace(string(out))
	}

	for _, n := range append([]string{"one instance"}, cfg.Brokers...) {
		res.Setups = append(res.Setups, &ClusterSetup{Name: n})
	}
	for round := range cfg.Runs {
		for _, i := range rotation(len(res.Setups), round) {
			s := res.Setups[i]
			cfg.logf("round %d: %s", round+1, s.Name)
			r, err := clusterRun(ctx, &cfg, srv, s.Name, bins[s.Name], tmp, round)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if err != nil {
				s.Errors = append(s.Errors, err.Error())
				cfg.logf("  %s: %v", s.Name, err)
				continue
			}
			s.Runs = append(s.Runs, r)
			t := r.Triggers[len(r.Triggers)-1]
			cfg.logf("  last stream %.1f ms, p99 %.1f ms; broker CPU %.2f ms", ms(t.All.Last), ms(t.All.P99), ms(t.BrokerCPU))
		}
	}
	for _, k := range cfg.Brokers {
		for _, restart := range []bool{true, false} {
			fr, err := fault(ctx, &cfg, srv, k, bins[k], tmp, restart)
			if err != nil {
				fr.Problems = append(fr.Problems, err.Error())
			}
			cfg.logf("fault %s/%s: %+v", fr.Broker, fr.Scenario, *fr)
			res.Faults = append(res.Faults, fr)
		}
	}
	res.Finished = time.Now()
	res.Machine.LoadEnd = LoadAverage()
	return res, write(cfg.OutDir, "cluster", res, renderCluster(res))
}

// instanceSet is the server processes of one run and their streams.
type instanceSet struct {
	procs   []*process
	streams []*streams
	client  *http.Client
	tr      *http.Transport
}

func (s *instanceSet) close() {
	for _, st := range s.streams {
		st.close()
	}
	for _, p := range s.procs {
		p.terminate(5 * time.Second)
	}
	s.tr.CloseIdleConnections()
}

// startInstances starts n servers (joined to url when not empty).
func startInstances(ctx context.Context, srv *Server, n int, url string) (*instanceSet, error) {
	s := &instanceSet{tr: newTransport()}
	s.client = &http.Client{Transport: s.tr}
	var more []string
	if url != "" {
		more = []string{"-broker", url}
	}
	for range n {
		p, err := srv.start(ctx, more...)
		if err != nil {
			s.close()
			return nil, err
		}
		s.procs = append(s.procs, p)
	}
	return s, nil
}

// clusterRun runs one setup: "one instance" (one process with every
// stream) or a broker (Instances processes joined by it).
func clusterRun(ctx context.Context, cfg *ClusterConfig, srv *Server, setup, brokerBin, tmp string, round int) (*ClusterRun, error) {
	r := &ClusterRun{Round: round}
	n, per, url := 1, cfg.Instances*cfg.Streams, ""
	brokerCPU := func() time.Duration { return 0 }
	if setup != "one instance" {
		br, err := startBroker(setup, brokerBin, tmp)
		if err != nil {
			return nil, err
		}
		defer br.stop()
		n, per, url = cfg.Instances, cfg.Streams, br.url()
		brokerCPU = func() time.Duration { return cpuTime(br.cmd.Process.Pid) }
	}
	set, err := startInstances(ctx, srv, n, url)
	if err != nil {
		return nil, err
	}
	defer set.close()
	rounds := cfg.Warmup + cfg.Triggers
	var boards []*board
	for _, p := range set.procs {
		bd := newBoard(msgToolsChanged, rounds, per)
		st := newStreams(ctx, set.client, p.url(), bd)
		opened, refused, _, err := st.openAll(per, cfg.OpenConcurrency, map[string]any{"toolsListChanged": true})
		boards, set.streams = append(boards, bd), append(set.streams, st)
		r.Opened = append(r.Opened, opened)
		if err != nil || opened < per {
			return r, fmt.Errorf("opened %d of %d listens (%d refused): %v", opened, per, refused, err)
		}
	}
	if err := sleep(ctx, cfg.Settle); err != nil {
		return nil, err
	}
	for k := range rounds {
		cpu0 := make([]time.Duration, n)
		for i, p := range set.procs {
			cpu0[i] = cpuTime(p.pid)
		}
		b0, t0 := brokerCPU(), time.Now()
		cctx, cancel := context.WithTimeout(ctx, cfg.DeliveryTimeout)
		err := callTool(cctx, set.client, set.procs[0].url(), 1000+k, "test_trigger_tool_change", nil)
		call := time.Since(t0)
		cancel()
		if err != nil {
			return r, fmt.Errorf("trigger %d: %w", k, err)
		}
		var all []int64
		var tr ClusterTrigger
		for i, bd := range boards {
			if err := bd.wait(ctx, k, cfg.DeliveryTimeout); err != nil {
				return r, fmt.Errorf("instance %d: %w", i, err)
			}
		}
		for i, bd := range boards {
			tr.PerInstance = append(tr.PerInstance, triggerStats(t0, bd.at[k], call))
			tr.ServerCPU = append(tr.ServerCPU, cpuTime(set.procs[i].pid)-cpu0[i])
			all = append(all, bd.at[k]...)
		}
		tr.All, tr.BrokerCPU = triggerStats(t0, all, call), brokerCPU()-b0
		if k >= cfg.Warmup {
			r.Triggers = append(r.Triggers, tr)
		}
		if err := sleep(ctx, cfg.TriggerGap); err != nil {
			return r, err
		}
	}
	for i, st := range set.streams {
		if x := boards[i].extra.Load(); x > 0 {
			r.Problems = append(r.Problems, fmt.Sprintf("instance %d: %d notifications beyond one per change", i, x))
		}
		r.Problems = append(r.Problems, st.unexpected...)
	}
	return r, nil
}

// FaultResult is one fault scenario on one broker.
type FaultResult struct {
	Broker, Scenario string
	// Streams and Alive count the streams of the instances that were meant
	// to survive, and those still open at the end.
	Streams, Alive int
	// Hinted counts, among them, the streams that received a
	// tools/list_changed (the resync hint) after the broker's restart.
	Hinted int
	// Duplicates counts notifications a stream received twice (a resource
	// URI delivered again as new).
	Duplicates int
	// Changes were made after the fault began; Got is, per instance, the
	// fewest and the most of them one of its streams received.
	Changes int
	Got     [][2]int
	// OutageMS is how long the broker was down (stop to ready again).
	OutageMS float64
	Problems []string `json:",omitempty"`
}

// recorder is a fault scenario's listen: what it received.
type recorder struct {
	mu    sync.Mutex
	uris  map[string]int
	tools []time.Time // arrival of each tools/list_changed
	ended bool
}

// fault runs a fault scenario on a broker of kind with Instances servers
// of FaultStreams recording streams each. restart: the broker restarts
// (stop, start on the same port, empty) in the middle of FaultChanges
// resource updates made through the first instance; every stream must
// survive, get the resync hint, and receive no change twice. Otherwise the
// last instance is killed, and 10 tool changes made through the first two
// must reach every stream of theirs.
func fault(ctx context.Context, cfg *ClusterConfig, srv *Server, kind, bin, tmp string, restart bool) (*FaultResult, error) {
	fr := &FaultResult{Broker: kind, Scenario: "one instance killed", Changes: 10}
	if restart {
		fr.Scenario, fr.Changes = "broker restart", cfg.FaultChanges
	}
	br, err := startBroker(kind, bin, tmp)
	if err != nil {
		return fr, err
	}
	defer func() { br.stop() }()
	set, err := startInstances(ctx, srv, cfg.Instances, br.url())
	if err != nil {
		return fr, err
	}
	defer set.close()
	uris := make([]any, cfg.FaultChanges)
	for i := range uris {
		uris[i] = fmt.Sprintf("test://fault/%d", i)
	}
	recs := make([][]*recorder, len(set.procs))
	for i, p := range set.procs {
		st := &streams{client: set.client, url: p.url(), handler: func(int) func([]byte, int, time.Time) {
			rec := &recorder{uris: map[string]int{}}
			recs[i] = append(recs[i], rec)
			return rec.record
		}}
		st.ctx, st.cancel = context.WithCancel(ctx)
		set.streams = append(set.streams, st)
		filter := map[string]any{"toolsListChanged": true, "resourceSubscriptions": uris}
		// One at a time: recs[i] is in the streams' order.
		if opened, _, _, err := st.openAll(cfg.FaultStreams, 1, filter); err != nil || opened < cfg.FaultStreams {
			return fr, fmt.Errorf("opened %d of %d listens: %v", opened, cfg.FaultStreams, err)
		}
	}
	if err := sleep(ctx, cfg.Settle); err != nil {
		return fr, err
	}
	var stopped time.Time
	if !restart {
		set.procs[len(set.procs)-1].kill()
		set.procs, recs = set.procs[:len(set.procs)-1], recs[:len(recs)-1]
	}
	for k := range fr.Changes {
		if restart && k == fr.Changes/3 {
			stopped = time.Now()
			br.stop()
			if err := br.start(); err != nil {
				return fr, fmt.Errorf("restarting %s: %w", kind, err)
			}
			fr.OutageMS = ms(time.Since(stopped))
		}
		via, tool, args, gap := set.procs[0], "trigger_resource_update", map[string]any{"uri": uris[k]}, cfg.FaultGap
		if !restart {
			// The go-sdk folds list changes made within 10 ms into one.
			via, tool, args, gap = set.procs[k%2], "test_trigger_tool_change", nil, 100*time.Millisecond
		}
		if err := callTool(ctx, set.client, via.url(), 2000+k, tool, args); err != nil {
			fr.Problems = append(fr.Problems, fmt.Sprintf("change %d: %v", k, err))
		}
		if err := sleep(ctx, gap); err != nil {
			return fr, err
		}
	}
	// Let the bridges reconnect and deliver what they hold.
	if err := sleep(ctx, 3*time.Second+cfg.Settle); err != nil {
		return fr, err
	}
	for _, rs := range recs {
		got := [2]int{fr.Changes, 0}
		for _, rec := range rs {
			rec.mu.Lock()
			fr.Streams++
			if !rec.ended {
				fr.Alive++
			}
			n := len(rec.tools)
			if restart {
				n = len(rec.uris)
				if len(rec.tools) > 0 && rec.tools[len(rec.tools)-1].After(stopped) {
					fr.Hinted++
				}
				for _, c := range rec.uris {
					fr.Duplicates += c - 1
				}
			}
			got = [2]int{min(got[0], n), max(got[1], n)}
			rec.mu.Unlock()
		}
		fr.Got = append(fr.Got, got)
	}
	return fr, nil
}

func (r *recorder) record(d []byte, kind int, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch kind {
	case msgToolsChanged:
		r.tools = append(r.tools, at)
	case msgResourceUpdated:
		var m struct {
			Params struct{ URI string } `json:"params"`
		}
		_ = json.Unmarshal(d, &m)
		r.uris[m.Params.URI]++
	case msgEnd:
		r.ended = true
	}
}

// ccell is "median [min–max]" of v.
func ccell(v []float64) string { return Summarize(v).String() }

func renderCluster(res *ClusterResults) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	c, m := res.Config, res.Machine
	total := c.Instances * c.Streams
	w("# Across instances: %d examples/server processes behind %s\n\n", c.Instances, strings.Join(c.Brokers, " and "))
	w("Generated by `%s` at commit %s", res.Command, res.Commit)
	if len(res.Dirty) > 0 {
		w(" (with uncommitted changes to %s)", strings.Join(res.Dirty, ", "))
	}
	w(", %s to %s. Machine: %d cores (%s), %s, %s, %s. Load average at the start: %s; at the end: %s. Brokers: %v. Servers started with `%s`.\n\n",
		res.Started.UTC().Format(time.RFC3339), res.Finished.UTC().Format(time.RFC3339), m.NProc, m.Model, m.MemTotal, m.GoVersion, m.Kernel,
		m.LoadStart, m.LoadEnd, res.BrokerVersions, strings.Join(res.ServerArgs, " "))
	w("## Method\n\n")
	w("Each round starts fresh processes for each setup, in an order rotated from round to round: one `examples/server` with %d listen streams (no broker), then, for each broker, the broker and %d `examples/server -broker URL` processes (A, B, C...) with %d streams each, opened over loopback HTTP/1.1 by this program (`toolsListChanged`). ", total, c.Instances, c.Streams)
	w("A change is `tools/call test_trigger_tool_change` on A: the go-sdk server changes its tool list, its 10 ms debounce passes, the gosdk adapter publishes on A's hub, whose bridge relays it through the broker to the others. ")
	w("Latencies run from just before the tools/call to each stream's `notifications/tools/list_changed`; CPU is each process's CPU-time clock over the same span. ")
	w("%d runs per setup, %d measured changes per run after %d warm-up, %v apart; a run's figure is the median over its changes; cells are median [min–max] over the runs.\n\n", c.Runs, c.Triggers, c.Warmup, c.TriggerGap)
	w("| | setup | last stream (ms) | p50 (ms) | p99 (ms) | server CPU per delivered notification (µs) | broker CPU per change (ms) |\n|---|---|---|---|---|---|---|\n")
	for _, s := range res.Setups {
		rows := map[string][][]float64{} // instance → figures by run
		for _, r := range s.Runs {
			// Instance len(r.Opened) is "all": every stream, every server.
			for i := range len(r.Opened) + 1 {
				var last, p50, p99 []float64
				var cpu, broker time.Duration
				notes, name := 0, "all"
				for _, t := range r.Triggers {
					st := t.All
					if i < len(r.Opened) {
						st, name = t.PerInstance[i], string(rune('A'+i))
						cpu, notes = cpu+t.ServerCPU[i], notes+r.Opened[i]
					} else {
						for k, c := range t.ServerCPU {
							cpu, notes = cpu+c, notes+r.Opened[k]
						}
						broker += t.BrokerCPU
					}
					last, p50, p99 = append(last, ms(st.Last)), append(p50, ms(st.P50)), append(p99, ms(st.P99))
				}
				fig := []float64{Summarize(last).Median, Summarize(p50).Median, Summarize(p99).Median, float64(cpu) / 1e3 / float64(notes)}
				if name == "all" {
					fig = append(fig, ms(broker)/float64(len(r.Triggers)))
				}
				rows[name] = append(rows[name], fig)
			}
		}
		for _, name := range []string{"A", "B", "C", "D", "E", "all"} {
			runs := rows[name]
			if len(runs) == 0 || (name == "A" && s.Name == "one instance") {
				continue
			}
			w("| %s | %s |", s.Name, name)
			for j := range 5 {
				var v []float64
				for _, fig := range runs {
					if j < len(fig) {
						v = append(v, fig[j])
					}
				}
				if len(v) == 0 {
					w(" – |")
				} else {
					w(" %s |", ccell(v))
				}
			}
			w("\n")
		}
		for _, e := range s.Errors {
			w("\n- %s: failed run: %s\n", s.Name, e)
		}
		for _, r := range s.Runs {
			for _, p := range r.Problems {
				w("\n- %s, round %d: %s\n", s.Name, r.Round+1, p)
			}
		}
	}
	w("\n## Faults\n\nOn each broker, %d instances with %d streams each.\n\n", c.Instances, c.FaultStreams)
	w("- **broker restart**: the streams listen for `toolsListChanged` and %d resource URIs; A publishes one `trigger_resource_update` per URI, %v apart; after a third of them the broker is stopped (SIGTERM) and started again on the same port, empty. A stream survives if it is still open at the end; it got the resync hint if a `tools/list_changed` reached it after the stop; a duplicate is a URI it received twice.\n", c.FaultChanges, c.FaultGap)
	w("- **one instance killed**: the last is killed (SIGKILL); then 10 tool changes, alternately through A and B, 100 ms apart. The streams of the others must survive and get every change.\n\n")
	w("| broker | scenario | streams alive | resync hint | duplicates | changes each stream got (min–max per instance) | outage (ms) |\n|---|---|---|---|---|---|---|\n")
	for _, f := range res.Faults {
		var got []string
		for i, g := range f.Got {
			got = append(got, fmt.Sprintf("%c %d–%d", 'A'+i, g[0], g[1]))
		}
		w("| %s | %s | %d / %d | %d | %d | %s of %d | %.0f |\n", f.Broker, f.Scenario, f.Alive, f.Streams, f.Hinted, f.Duplicates, strings.Join(got, ", "), f.Changes, f.OutageMS)
		for _, p := range f.Problems {
			w("\n- %s, %s: %s\n", f.Broker, f.Scenario, p)
		}
	}
	return b.String()
}
