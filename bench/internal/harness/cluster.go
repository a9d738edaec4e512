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
	RepoRoot        string `json:"-"` // a path of this machine
	OutDir, Command string
	// Instances and Streams (per instance) of the joined setup.
	Instances, Streams int
	// Brokers are the brokers measured: "nats", "redis".
	Brokers []string
	// Runs is the number of rounds; each round runs every setup once
	// (one instance, then each broker, rotated), on fresh processes.
	Runs int
	// Triggers are measured per run, after Warmup ones.
	Triggers, Warmup int
	TriggerGap       time.Duration
	OpenConcurrency  int
	Settle           time.Duration
	DeliveryTimeout  time.Duration
	// FaultStreams is the streams per instance of the fault scenarios,
	// FaultChanges the changes published during the broker restart (one
	// resource URI each), FaultGap the time between two of them.
	FaultStreams, FaultChanges int
	FaultGap                   time.Duration
	// ServerBin, NATSBin and RedisBin are prebuilt binaries (else built,
	// or, for redis-server, found on PATH).
	ServerBin, NATSBin, RedisBin string
	Log                          func(format string, args ...any) `json:"-"`
}

// DefaultCluster is the benchmark the results in bench/results come from.
func DefaultCluster() ClusterConfig {
	return ClusterConfig{
		OutDir:    "bench/results",
		Instances: 3, Streams: 5000,
		Brokers:  []string{"nats", "redis"},
		Runs:     5,
		Triggers: 5, Warmup: 1,
		TriggerGap:      200 * time.Millisecond,
		OpenConcurrency: 64,
		Settle:          2 * time.Second,
		DeliveryTimeout: 60 * time.Second,
		FaultStreams:    1000, FaultChanges: 60, FaultGap: 50 * time.Millisecond,
	}
}

func (c *ClusterConfig) logf(format string, args ...any) {
	if c.Log != nil {
		c.Log(format, args...)
	}
}

// ClusterResults are a whole run of the benchmark.
type ClusterResults struct {
	Command            string
	Commit             string
	Dirty              []string `json:",omitempty"`
	Started, Finished  time.Time
	Machine            Machine
	Config             ClusterConfig
	Load               []PhaseLoad
	Setups             []*ClusterSetup
	Faults             []*FaultResult
	BrokerVersions     map[string]string
	ServerArgsOneProc  []string
	ServerArgsPerProcs []string
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
	runs           int
}

// url is what -broker takes.
func (b *broker) url() string {
	if b.kind == "nats" {
		return "nats://127.0.0.1:" + strconv.Itoa(b.port)
	}
	return "redis://127.0.0.1:" + strconv.Itoa(b.port)
}

func (b *broker) pid() int { return b.cmd.Process.Pid }

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
	b.runs++
	var args []string
	ready := "Server is ready"
	if b.kind == "nats" {
		args = []string{"-a", "127.0.0.1", "-p", strconv.Itoa(b.port)}
	} else {
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
	up := make(chan struct{})
	exited := b.exited
	// Ends when the process exits (its output closes).
	go func() {
		sc := bufio.NewScanner(out)
		once := sync.Once{}
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
		b.kill()
		return fmt.Errorf("%s not ready within 15s", b.kind)
	}
}

func (b *broker) kill() {
	_ = b.cmd.Process.Kill()
	<-b.exited
}

// stop ends the broker with SIGTERM (SIGKILL after 5 s).
func (b *broker) stop() {
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.exited:
	case <-time.After(5 * time.Second):
		b.kill()
	}
}

// brokerVersion asks a broker binary for its version.
func brokerVersion(kind, bin string) string {
	out, _ := exec.Command(bin, "--version").CombinedOutput()
	return strings.TrimSpace(string(out))
}

// RunCluster runs the cross-instance benchmark and writes
// OUT/cluster.md and OUT/cluster.json.
func RunCluster(ctx context.Context, cfg ClusterConfig) (*ClusterResults, error) {
	if cfg.Instances < 2 || cfg.Streams < 1 || cfg.Runs < 1 || cfg.Triggers < 1 {
		return nil, errors.New("need at least 2 instances, 1 stream, 1 run and 1 trigger")
	}
	res := &ClusterResults{Command: cfg.Command, Started: time.Now(), Config: cfg, BrokerVersions: map[string]string{}}
	res.Config.Log = nil
	nofile, err := raiseNoFile(uint64(cfg.Instances*max(cfg.Streams, cfg.FaultStreams) + 1024))
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

	// The binaries.
	srv, err := build(ctx, cfg.RepoRoot, tmp, Ours, cfg.ServerBin, nil)
	if err != nil {
		return nil, err
	}
	total := cfg.Instances * cfg.Streams
	srv.args = append(srv.args, "-max-streams="+strconv.Itoa(total+16))
	bins := map[string]string{}
	for _, k := range cfg.Brokers {
		switch k {
		case "nats":
			bins[k] = cfg.NATSBin
			if bins[k] == "" {
				bins[k] = filepath.Join(tmp, "nats-server")
				cfg.logf("building nats-server")
				cmd := exec.CommandContext(ctx, "go", "build", "-o", bins[k], "github.com/nats-io/nats-server/v2")
				cmd.Dir = filepath.Join(cfg.RepoRoot, "bench")
				if out, err := cmd.CombinedOutput(); err != nil {
					return nil, fmt.Errorf("go build nats-server: %w\n%s", err, out)
				}
			}
		case "redis":
			bins[k] = cfg.RedisBin
			if bins[k] == "" {
				if bins[k], err = exec.LookPath("redis-server"); err != nil {
					return nil, errors.New("redis-server not found on PATH: install Debian's redis-server package")
				}
			}
		default:
			return nil, fmt.Errorf("unknown broker %q", k)
		}
		res.BrokerVersions[k] = brokerVersion(k, bins[k])
	}
	res.ServerArgsPerProcs = srv.args

	names := append([]string{"one instance"}, cfg.Brokers...)
	for _, n := range names {
		res.Setups = append(res.Setups, &ClusterSetup{Name: n})
	}
	load := snapshotCPU()
	for round := range cfg.Runs {
		for _, i := range rotation(len(names), round) {
			s := res.Setups[i]
			cfg.logf("round %d: %s", round+1, s.Name)
			r, err := clusterRun(ctx, &cfg, srv, s.Name, bins[s.Name], tmp, round)
			if err != nil {
				s.Errors = append(s.Errors, err.Error())
				cfg.logf("  %s: %v", s.Name, err)
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				continue
			}
			s.Runs = append(s.Runs, r)
			logClusterRun(&cfg, r)
		}
	}
	res.Load = append(res.Load, load.since("fan-out runs"))

	load = snapshotCPU()
	for _, k := range cfg.Brokers {
		for _, f := range []func(context.Context, *ClusterConfig, *serverBin, string, string, string) (*FaultResult, error){restartFault, killFault} {
			fr, err := f(ctx, &cfg, srv, k, bins[k], tmp)
			if err != nil {
				fr = &FaultResult{Broker: k, Problems: []string{err.Error()}}
			}
			cfg.logf("fault %s/%s: %s", fr.Broker, fr.Scenario, fr.summary())
			res.Faults = append(res.Faults, fr)
		}
	}
	res.Load = append(res.Load, load.since("faults"))
	res.Finished = time.Now()
	res.Machine.LoadEnd = loadavg()
	if err := writeCluster(res); err != nil {
		return res, err
	}
	return res, nil
}

// instanceSet is the server processes of one run and their streams.
type instanceSet struct {
	procs   []*process
	boards  []*board
	streams []*streams
	client  *http.Client
	tr      *http.Transport
}

func (s *instanceSet) close() {
	for _, st := range s.streams {
		st.close()
	}
	for _, p := range s.procs {
		terminate(p, 5*time.Second)
	}
	s.tr.CloseIdleConnections()
}

// startInstances starts n servers (joined to url when not empty).
func startInstances(ctx context.Context, srv *serverBin, n int, url, tmp string) (*instanceSet, error) {
	s := &instanceSet{tr: newTransport()}
	s.client = &http.Client{Transport: s.tr}
	b := *srv
	b.args = append([]string(nil), srv.args...)
	if url != "" {
		b.args = append(b.args, "-broker", url)
	}
	for range n {
		p, err := start(ctx, &b, tmp)
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
func clusterRun(ctx context.Context, cfg *ClusterConfig, srv *serverBin, setup, brokerBin, tmp string, round int) (*ClusterRun, error) {
	r := &ClusterRun{Round: round}
	n, per := 1, cfg.Instances*cfg.Streams
	var br *broker
	if setup != "one instance" {
		var err error
		if br, err = startBroker(setup, brokerBin, tmp); err != nil {
			return nil, err
		}
		defer br.stop()
		n, per = cfg.Instances, cfg.Streams
	}
	url := ""
	if br != nil {
		url = br.url()
	}
	set, err := startInstances(ctx, srv, n, url, tmp)
	if err != nil {
		return nil, err
	}
	defer set.close()
	rounds := cfg.Warmup + cfg.Triggers
	for _, p := range set.procs {
		bd := newBoard(msgToolsChanged, rounds, per)
		st := newStreams(ctx, set.client, p.url(), bd, 4096)
		opened, refused, _, err := st.openAll(per, cfg.OpenConcurrency, map[string]any{"toolsListChanged": true})
		set.boards, set.streams = append(set.boards, bd), append(set.streams, st)
		r.Opened = append(r.Opened, opened)
		if err != nil || opened < per {
			return r, fmt.Errorf("opened %d of %d listens (%d refused): %v", opened, per, refused, err)
		}
	}
	if err := sleep(ctx, cfg.Settle); err != nil {
		return nil, err
	}
	brokerCPU := func() time.Duration {
		if br == nil {
			return 0
		}
		return cpuTime(br.pid())
	}
	a := set.procs[0]
	for k := range rounds {
		cpu0 := make([]time.Duration, n)
		for i, p := range set.procs {
			cpu0[i] = cpuTime(p.pid)
		}
		b0 := brokerCPU()
		t0 := time.Now()
		cctx, cancel := context.WithTimeout(ctx, cfg.DeliveryTimeout)
		err := callTool(cctx, set.client, a.url(), 1000+k, "test_trigger_tool_change", nil)
		call := time.Since(t0)
		cancel()
		if err != nil {
			return r, fmt.Errorf("trigger %d: %w", k, err)
		}
		var all []int64
		tr := ClusterTrigger{}
		for i, bd := range set.boards {
			if err := bd.wait(ctx, k, cfg.DeliveryTimeout); err != nil {
				return r, fmt.Errorf("instance %d: %w", i, err)
			}
		}
		for i, bd := range set.boards {
			tr.PerInstance = append(tr.PerInstance, triggerStats(t0, bd.at[k], call))
			tr.ServerCPU = append(tr.ServerCPU, cpuTime(set.procs[i].pid)-cpu0[i])
			all = append(all, bd.at[k]...)
		}
		tr.All = triggerStats(t0, all, call)
		tr.BrokerCPU = brokerCPU() - b0
		if k >= cfg.Warmup {
			r.Triggers = append(r.Triggers, tr)
		}
		if err := sleep(ctx, cfg.TriggerGap); err != nil {
			return r, err
		}
	}
	for i, st := range set.streams {
		if x := set.boards[i].extra.Load(); x > 0 {
			r.Problems = append(r.Problems, fmt.Sprintf("instance %d: %d notifications beyond one per change", i, x))
		}
		r.Problems = append(r.Problems, st.unexpected...)
	}
	return r, nil
}

func logClusterRun(cfg *ClusterConfig, r *ClusterRun) {
	if len(r.Triggers) == 0 {
		return
	}
	t := r.Triggers[len(r.Triggers)-1]
	var parts []string
	for i, s := range t.PerInstance {
		parts = append(parts, fmt.Sprintf("#%d last %.1f ms", i, ms(s.Last)))
	}
	cfg.logf("  %s; all p50 %.1f p99 %.1f ms; broker CPU %.2f ms", strings.Join(parts, ", "), ms(t.All.P50), ms(t.All.P99), ms(t.BrokerCPU))
}

// FaultResult is one fault scenario on one broker.
type FaultResult struct {
	Broker, Scenario string
	// Streams and Alive count the streams of the instances that were meant
	// to survive, and those still open at the end.
	Streams, Alive int
	// Hinted counts, among them, the streams that received a
	// tools/list_changed (the resync hint) after the fault.
	Hinted int
	// Duplicates counts notifications a stream received twice (a resource
	// URI delivered again as new).
	Duplicates int
	// Delivered is, per instance, how many of the Changes each of its
	// streams received (the minimum over its streams, then the maximum).
	Changes      int
	DeliveredMin []int
	DeliveredMax []int
	// OutageMS is how long the broker was down (stop to ready again).
	OutageMS           float64
	BridgeStats        []map[string]any `json:",omitempty"`
	Problems           []string         `json:",omitempty"`
	AfterFaultChanges  int
	AfterFaultReceived []int
}

func (f *FaultResult) summary() string {
	return fmt.Sprintf("%d/%d streams alive, %d hinted, %d duplicates, delivered %v..%v of %d; after: %d changes, %v; %v",
		f.Alive, f.Streams, f.Hinted, f.Duplicates, f.DeliveredMin, f.DeliveredMax, f.Changes,
		f.AfterFaultChanges, f.AfterFaultReceived, f.Problems)
}

// faultStream is a listen that records every notification.
type faultStream struct {
	mu     sync.Mutex
	uris   map[string]int
	tools  []time.Time // arrival of each tools/list_changed
	ended  bool
	closed bool
}

// openFault opens n recording streams on p.
func openFault(ctx context.Context, client *http.Client, p *process, n int, filter map[string]any, wg *sync.WaitGroup) ([]*faultStream, error) {
	out := make([]*faultStream, n)
	for i := range n {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url(), strings.NewReader(string(listenBody(i+1, filter))))
		if err != nil {
			return nil, err
		}
		setHeaders(req.Header, "subscriptions/listen", "")
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return nil, fmt.Errorf("listen: HTTP %d", resp.StatusCode)
		}
		lr := newLineReader(resp.Body, 64<<10)
		if _, kind, _, err := lr.nextData(); err != nil || kind != msgAck {
			resp.Body.Close()
			return nil, fmt.Errorf("no acknowledgement: %v", err)
		}
		fs := &faultStream{uris: map[string]int{}}
		out[i] = fs
		wg.Add(1)
		go func() { // ends with the response body (ctx's end, or the server's)
			defer wg.Done()
			defer resp.Body.Close()
			for {
				d, kind, at, err := lr.nextData()
				if err != nil {
					fs.mu.Lock()
					fs.ended = true
					fs.mu.Unlock()
					return
				}
				fs.mu.Lock()
				switch kind {
				case msgToolsChanged:
					fs.tools = append(fs.tools, at)
				case msgResourceUpdated:
					var m struct {
						Params struct {
							URI string `json:"uri"`
						} `json:"params"`
					}
					_ = json.Unmarshal(d, &m)
					fs.uris[m.Params.URI]++
				case msgResult, msgError:
					fs.closed = true
				}
				fs.mu.Unlock()
			}
		}()
	}
	return out, nil
}

// restartFault: the broker restarts (stop, start on the same port) in the
// middle of a stream of changes made through the first instance. Every
// stream must survive, get the resync hint, and receive no change twice.
func restartFault(ctx context.Context, cfg *ClusterConfig, srv *serverBin, kind, bin, tmp string) (*FaultResult, error) {
	fr := &FaultResult{Broker: kind, Scenario: "broker restart", Changes: cfg.FaultChanges}
	br, err := startBroker(kind, bin, tmp)
	if err != nil {
		return nil, err
	}
	defer func() { br.stop() }()
	set, err := startInstances(ctx, srv, cfg.Instances, br.url(), tmp)
	if err != nil {
		return nil, err
	}
	defer set.close()
	uris := make([]any, cfg.FaultChanges)
	for i := range uris {
		uris[i] = fmt.Sprintf("test://fault/%d", i)
	}
	filter := map[string]any{"toolsListChanged": true, "resourceSubscriptions": uris}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	all := make([][]*faultStream, len(set.procs))
	for i, p := range set.procs {
		if all[i], err = openFault(sctx, set.client, p, cfg.FaultStreams, filter, &wg); err != nil {
			return nil, err
		}
	}
	if err := sleep(ctx, cfg.Settle); err != nil {
		return nil, err
	}
	a := set.procs[0]
	var stopped time.Time
	for k := range cfg.FaultChanges {
		if k == cfg.FaultChanges/3 {
			stopped = time.Now()
			br.stop()
			if err := br.start(); err != nil {
				return fr, fmt.Errorf("restarting %s: %w", kind, err)
			}
			fr.OutageMS = ms(time.Since(stopped))
		}
		err := callTool(ctx, set.client, a.url(), 2000+k, "trigger_resource_update", map[string]any{"uri": uris[k]})
		if err != nil {
			fr.Problems = append(fr.Problems, fmt.Sprintf("change %d: %v", k, err))
		}
		if err := sleep(ctx, cfg.FaultGap); err != nil {
			return fr, err
		}
	}
	// Let the bridges reconnect and deliver what they hold.
	if err := sleep(ctx, 3*time.Second+cfg.Settle); err != nil {
		return fr, err
	}
	for i, streams := range all {
		lo, hi := cfg.FaultChanges, 0
		for _, fs := range streams {
			fs.mu.Lock()
			fr.Streams++
			if !fs.ended && !fs.closed {
				fr.Alive++
			}
			for _, at := range fs.tools {
				if at.After(stopped) {
					fr.Hinted++
					break
				}
			}
			for _, c := range fs.uris {
				if c > 1 {
					fr.Duplicates += c - 1
				}
			}
			lo, hi = min(lo, len(fs.uris)), max(hi, len(fs.uris))
			fs.mu.Unlock()
		}
		fr.DeliveredMin, fr.DeliveredMax = append(fr.DeliveredMin, lo), append(fr.DeliveredMax, hi)
		fr.BridgeStats = append(fr.BridgeStats, brokerVars(ctx, set.client, set.procs[i]))
	}
	return fr, nil
}

// killFault: one instance (the last) is killed with SIGKILL; changes made
// through the first instance, then through the second, must keep reaching
// the streams of the others.
func killFault(ctx context.Context, cfg *ClusterConfig, srv *serverBin, kind, bin, tmp string) (*FaultResult, error) {
	fr := &FaultResult{Broker: kind, Scenario: "one instance killed"}
	br, err := startBroker(kind, bin, tmp)
	if err != nil {
		return nil, err
	}
	defer br.stop()
	set, err := startInstances(ctx, srv, cfg.Instances, br.url(), tmp)
	if err != nil {
		return nil, err
	}
	defer set.close()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	filter := map[string]any{"toolsListChanged": true}
	all := make([][]*faultStream, len(set.procs))
	for i, p := range set.procs {
		if all[i], err = openFault(sctx, set.client, p, cfg.FaultStreams, filter, &wg); err != nil {
			return nil, err
		}
	}
	if err := sleep(ctx, cfg.Settle); err != nil {
		return nil, err
	}
	victim := set.procs[len(set.procs)-1]
	victim.kill()
	set.procs = set.procs[:len(set.procs)-1]
	const changes = 10
	fr.AfterFaultChanges = changes
	for k := range changes {
		via := set.procs[k%2]
		if err := callTool(ctx, set.client, via.url(), 3000+k, "test_trigger_tool_change", nil); err != nil {
			fr.Problems = append(fr.Problems, fmt.Sprintf("change %d via instance %d: %v", k, k%2, err))
		}
		// The go-sdk folds list changes made within 10 ms into one.
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return fr, err
		}
	}
	if err := sleep(ctx, cfg.Settle); err != nil {
		return fr, err
	}
	for i, streams := range all[:len(all)-1] {
		lo := changes
		for _, fs := range streams {
			fs.mu.Lock()
			fr.Streams++
			if !fs.ended && !fs.closed {
				fr.Alive++
			}
			lo = min(lo, len(fs.tools))
			fs.mu.Unlock()
		}
		fr.AfterFaultReceived = append(fr.AfterFaultReceived, lo)
		fr.BridgeStats = append(fr.BridgeStats, brokerVars(ctx, set.client, set.procs[i]))
	}
	return fr, nil
}

// brokerVars reads the bridge's counters from /debug/vars.
func brokerVars(ctx context.Context, c *http.Client, p *process) map[string]any {
	body, ok := get(ctx, c, "http://"+p.addr+"/debug/vars")
	if !ok {
		return nil
	}
	var doc struct {
		Broker map[string]any `json:"broker"`
	}
	_ = json.Unmarshal(body, &doc)
	return doc.Broker
}

// writeCluster writes OUT/cluster.md and OUT/cluster.json.
func writeCluster(res *ClusterResults) error {
	out := res.Config.OutDir
	if !filepath.IsAbs(out) {
		out = filepath.Join(res.Config.RepoRoot, out)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "cluster.json"), js, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "cluster.md"), []byte(renderCluster(res)), 0o644)
}

// clusterAgg is one setup's figures per run: per instance and overall.
type clusterAgg struct {
	last, p50, p99, cpu [][]float64 // [instance][run]
	allLast, allP50     []float64   // [run]
	allP99, allCPU      []float64
	brokerPer, share    []float64
}

func aggregateCluster(s *ClusterSetup) *clusterAgg {
	a := &clusterAgg{}
	for _, r := range s.Runs {
		if len(r.Triggers) == 0 {
			continue
		}
		n := len(r.Triggers[0].PerInstance)
		for len(a.last) < n {
			a.last, a.p50, a.p99, a.cpu = append(a.last, nil), append(a.p50, nil), append(a.p99, nil), append(a.cpu, nil)
		}
		var sumServer, sumBroker time.Duration
		var notes int64
		for i := range n {
			var last, p50, p99 []float64
			var cpu time.Duration
			for _, t := range r.Triggers {
				last = append(last, ms(t.PerInstance[i].Last))
				p50 = append(p50, ms(t.PerInstance[i].P50))
				p99 = append(p99, ms(t.PerInstance[i].P99))
				cpu += t.ServerCPU[i]
			}
			a.last[i] = append(a.last[i], summarize(last).Median)
			a.p50[i] = append(a.p50[i], summarize(p50).Median)
			a.p99[i] = append(a.p99[i], summarize(p99).Median)
			delivered := int64(r.Opened[i]) * int64(len(r.Triggers))
			a.cpu[i] = append(a.cpu[i], float64(cpu.Nanoseconds())/1e3/float64(delivered))
			sumServer += cpu
			notes += delivered
		}
		var last, p50, p99 []float64
		for _, t := range r.Triggers {
			last = append(last, ms(t.All.Last))
			p50 = append(p50, ms(t.All.P50))
			p99 = append(p99, ms(t.All.P99))
			sumBroker += t.BrokerCPU
		}
		a.allLast = append(a.allLast, summarize(last).Median)
		a.allP50 = append(a.allP50, summarize(p50).Median)
		a.allP99 = append(a.allP99, summarize(p99).Median)
		a.allCPU = append(a.allCPU, float64(sumServer.Nanoseconds())/1e3/float64(notes))
		a.brokerPer = append(a.brokerPer, float64(sumBroker.Nanoseconds())/1e6/float64(len(r.Triggers)))
		a.share = append(a.share, 100*float64(sumBroker)/float64(sumServer+sumBroker))
	}
	return a
}

// ccell is "median [min–max]" of v with the given precision.
func ccell(v []float64, prec int) string {
	s := summarize(v)
	if !s.ok() {
		return "n/a"
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', prec, 64) }
	return fmt.Sprintf("%s [%s–%s]", f(s.Median), f(s.Min), f(s.Max))
}

func renderCluster(res *ClusterResults) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	c := res.Config
	total := c.Instances * c.Streams
	w("# Across instances: %d examples/server processes behind NATS and Redis\n\n", c.Instances)
	w("Generated by `%s` (bench/cmd/clusterbench) at commit %s", res.Command, res.Commit)
	if len(res.Dirty) > 0 {
		w(" (with uncommitted changes to %s)", strings.Join(res.Dirty, ", "))
	}
	w(", %s to %s.\n\n", res.Started.UTC().Format(time.RFC3339), res.Finished.UTC().Format(time.RFC3339))
	m := res.Machine
	w("Machine: %d cores (%s), %s, %s, %s. Load average at the start: %s; at the end: %s.", m.NProc, m.Model, m.MemTotal, m.GoVersion, m.Kernel, m.LoadStart, m.LoadEnd)
	for _, l := range res.Load {
		w(" %s: %s of wall time, this benchmark's processes %.0f s of CPU, every other process %.0f s.", l.Phase, l.Wall.Round(time.Second), l.Own.Seconds(), l.Other.Seconds())
	}
	w("\n\nBrokers: %s.\n\n", strings.Join(func() []string {
		var out []string
		for _, k := range c.Brokers {
			out = append(out, k+" = `"+res.BrokerVersions[k]+"`")
		}
		return out
	}(), ", "))
	w("## Method\n\n")
	w("Each round starts fresh processes for each setup, in an order rotated from round to round: one `examples/server` with %d listen streams (no broker), then, for each broker, the broker and %d `examples/server -broker URL` processes (A, B, C) with %d streams each, opened over loopback HTTP/1.1 by this program (`toolsListChanged`). ", total, c.Instances, c.Streams)
	w("A change is `tools/call test_trigger_tool_change` on A (the first instance): the go-sdk server changes its tool list, its 10 ms debounce passes, the gosdk adapter publishes on A's hub, whose bridge relays it through the broker to B and C. ")
	w("Latencies run from just before the tools/call to each stream's `notifications/tools/list_changed` line; CPU is each process's CPU-time clock over the same span (the tools/call included, on A). ")
	w("%d runs per setup, %d measured changes per run after %d warm-up, %v apart; a run's figure is the median over its changes, the table gives the median over the runs [min–max].\n\n", c.Runs, c.Triggers, c.Warmup, c.TriggerGap)

	aggs := map[string]*clusterAgg{}
	for _, s := range res.Setups {
		aggs[s.Name] = aggregateCluster(s)
	}
	w("## Per instance\n\n")
	w("| | one instance (%d streams) |", total)
	for _, k := range c.Brokers {
		for i := range c.Instances {
			w(" %s %c |", k, 'A'+i)
		}
	}
	w("\n|---|---|")
	for range c.Brokers {
		for range c.Instances {
			w("---|")
		}
	}
	w("\n")
	row := func(name string, get func(*clusterAgg) [][]float64, prec int) {
		w("| %s |", name)
		one := get(aggs["one instance"])
		if len(one) > 0 {
			w(" %s |", ccell(one[0], prec))
		} else {
			w(" n/a |")
		}
		for _, k := range c.Brokers {
			v := get(aggs[k])
			for i := range c.Instances {
				if i < len(v) {
					w(" %s |", ccell(v[i], prec))
				} else {
					w(" n/a |")
				}
			}
		}
		w("\n")
	}
	row("last stream (ms)", func(a *clusterAgg) [][]float64 { return a.last }, 1)
	row("p50 (ms)", func(a *clusterAgg) [][]float64 { return a.p50 }, 1)
	row("p99 (ms)", func(a *clusterAgg) [][]float64 { return a.p99 }, 1)
	row("server CPU per delivered notification (µs)", func(a *clusterAgg) [][]float64 { return a.cpu }, 2)
	w("\n## Whole setup\n\n| | one instance |")
	for _, k := range c.Brokers {
		w(" %s |", k)
	}
	w("\n|---|---|")
	for range c.Brokers {
		w("---|")
	}
	w("\n")
	row2 := func(name string, get func(*clusterAgg) []float64, prec int, withOne bool) {
		w("| %s |", name)
		if withOne {
			w(" %s |", ccell(get(aggs["one instance"]), prec))
		} else {
			w(" – |")
		}
		for _, k := range c.Brokers {
			w(" %s |", ccell(get(aggs[k]), prec))
		}
		w("\n")
	}
	row2(fmt.Sprintf("last of all %d streams (ms)", total), func(a *clusterAgg) []float64 { return a.allLast }, 1, true)
	row2("p50 over all streams (ms)", func(a *clusterAgg) []float64 { return a.allP50 }, 1, true)
	row2("p99 over all streams (ms)", func(a *clusterAgg) []float64 { return a.allP99 }, 1, true)
	row2("server CPU per delivered notification, all servers (µs)", func(a *clusterAgg) []float64 { return a.allCPU }, 2, true)
	row2("broker CPU per change (ms)", func(a *clusterAgg) []float64 { return a.brokerPer }, 3, false)
	row2("broker's share of the CPU (broker / (servers + broker), %)", func(a *clusterAgg) []float64 { return a.share }, 2, false)
	for _, s := range res.Setups {
		for _, e := range s.Errors {
			w("\n- %s: failed run: %s", s.Name, e)
		}
		for _, r := range s.Runs {
			for _, p := range r.Problems {
				w("\n- %s, round %d: %s", s.Name, r.Round+1, p)
			}
		}
	}
	w("\n\n## Faults\n\n")
	w("On each broker, %d instances with %d streams each.\n\n", c.Instances, c.FaultStreams)
	w("- **broker restart**: the streams listen for `toolsListChanged` and %d resource URIs; A publishes one `trigger_resource_update` per URI, %v apart; after a third of them the broker is stopped (SIGTERM) and started again on the same port, empty. A stream survives if it is still open at the end; it got the resync hint if a `tools/list_changed` reached it after the stop; a duplicate is a URI it received twice.\n", c.FaultChanges, c.FaultGap)
	w("- **one instance killed**: C is killed (SIGKILL); then 10 tool changes, alternately through A and B, 100 ms apart. The streams of A and B must survive and get every change.\n\n")
	w("| broker | scenario | streams alive | resync hint | duplicates | changes each stream got (min–max per instance) | outage (ms) |\n|---|---|---|---|---|---|---|\n")
	for _, f := range res.Faults {
		switch f.Scenario {
		case "broker restart":
			var got []string
			for i := range f.DeliveredMin {
				got = append(got, fmt.Sprintf("%c %d–%d", 'A'+i, f.DeliveredMin[i], f.DeliveredMax[i]))
			}
			w("| %s | %s | %d / %d | %d / %d | %d | %s of %d | %.0f |\n", f.Broker, f.Scenario, f.Alive, f.Streams, f.Hinted, f.Streams, f.Duplicates, strings.Join(got, ", "), f.Changes, f.OutageMS)
		default:
			var got []string
			for i, n := range f.AfterFaultReceived {
				got = append(got, fmt.Sprintf("%c ≥ %d", 'A'+i, n))
			}
			w("| %s | %s | %d / %d | – | – | %s of %d | – |\n", f.Broker, f.Scenario, f.Alive, f.Streams, strings.Join(got, ", "), f.AfterFaultChanges)
		}
		for _, p := range f.Problems {
			w("\n- %s, %s: %s\n", f.Broker, f.Scenario, p)
		}
	}
	w("\nThe bridges' counters at the end of each fault run (from /debug/vars) are in cluster.json (`Faults[].BridgeStats`).\n")
	return b.String()
}

// terminate asks a server to end (SIGTERM: it drains its streams), then
// kills it after grace.
func terminate(p *process, grace time.Duration) {
	if !p.alive() {
		p.kill()
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
	}
	p.kill()
}
