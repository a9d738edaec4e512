package harness

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"time"
)

// FanoutRun is one fresh server process with N streams.
type FanoutRun struct {
	N int
	// Round is the round of runs this one belongs to: the runs of one
	// round (one per server) ran back to back, and are compared pairwise.
	Round   int
	Opened  int
	Refused int
	// OpenSeconds is from the first listen request to the last
	// acknowledgement; OpenRate is Opened / OpenSeconds.
	OpenSeconds, OpenRate float64
	// OpenCPU is the server's CPU time while the streams were opened.
	OpenCPU time.Duration

	// Memory and threads: before opening, right after the last
	// acknowledgement, and after Settle.
	Before, Open, Settled procStatus
	// Vars are the expvar readings (ours only): before opening and after
	// Settle; HasVars is false when the server has no /debug/vars.
	HasVars             bool
	VarsBefore, VarsSet vars

	// Triggers holds the measured triggers (warm-up ones excluded).
	Triggers []TriggerStats
	// Over the measured triggers as a whole, from just before the first
	// one's call to the last one's last delivery (the gaps between them
	// included): the server's CPU time from /proc/PID/stat (utime+stime,
	// 10 ms ticks) and from its CPU-time clock (ns), and the notifications
	// delivered.
	WindowStatCPU, WindowCPU time.Duration
	Delivered                int64
	// Extra counts list_changed notifications beyond one per trigger.
	Extra int64
	// Dump is the goroutine dump taken at the end, with the N streams open.
	Dump dump
	// GoroutinesBefore and GoroutinesSet are the goroutine profile's totals
	// (net/http/pprof) before opening and after the settle; -1 without pprof.
	GoroutinesBefore, GoroutinesSet int
	// HasGC reports that the server could be made to collect garbage
	// (/debug/pprof/heap?gc=1): Before was then read after a forced GC, and
	// AfterGC and VarsGC after another one with the N streams open.
	HasGC   bool
	AfterGC procStatus
	VarsGC  vars
	// Profile is the server's CPU profile during extra triggers (only the
	// profiled run).
	Profile *CPUProfile `json:",omitempty"`
	// Problems are notes about things that went wrong.
	Problems []string
}

// TriggerStats are one trigger's delivery latencies over the N streams,
// from just before the trigger call to each stream's notification.
type TriggerStats struct {
	First, P50, P99, Last time.Duration
	// Call is how long the trigger's tools/call took.
	Call time.Duration
	// ServerCPU and ClientCPU are the CPU time the server process and this
	// process used from just before the trigger until the last stream had
	// its notification.
	ServerCPU, ClientCPU time.Duration
}

// Spread is the time between the first and the last stream's notification.
func (t TriggerStats) Spread() time.Duration { return t.Last - t.First }

// fanout runs the fan-out scenario once on a fresh process of b; with
// profile, it also takes a CPU profile of the server during extra triggers.
func fanout(ctx context.Context, cfg *Config, b *serverBin, tmp string, n, round int, profile bool) (*FanoutRun, error) {
	p, err := start(ctx, b, tmp)
	if err != nil {
		return nil, err
	}
	defer p.kill()
	tr := newTransport()
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	r := &FanoutRun{N: n, Round: round, GoroutinesBefore: -1, GoroutinesSet: -1}

	// Let the process settle; a forced GC (if the server can) makes the
	// baseline of the after-GC readings.
	if err := sleep(ctx, cfg.Settle); err != nil {
		return nil, err
	}
	r.HasGC = forceGC(ctx, client, p)
	if r.Before, err = readStatus(p.pid); err != nil {
		return nil, err
	}
	r.VarsBefore, r.HasVars = readVars(ctx, client, p)
	r.GoroutinesBefore = pprofGoroutines(ctx, client, p)

	rounds := cfg.Warmup + cfg.Triggers
	extraRounds := 0
	if profile {
		extraRounds = 1000 // at most; only as many as fit in the profile
	}
	bd := newBoard(msgToolsChanged, rounds+extraRounds, n)
	st := newStreams(ctx, client, p.url(), bd, 4096)
	defer st.close()
	oc0 := cpuTime(p.pid)
	opened, refused, elapsed, err := st.openAll(n, cfg.OpenConcurrency, map[string]any{"toolsListChanged": true})
	r.Opened, r.Refused = opened, refused
	r.OpenSeconds = elapsed.Seconds()
	r.OpenCPU = cpuTime(p.pid) - oc0
	if elapsed > 0 {
		r.OpenRate = float64(opened) / elapsed.Seconds()
	}
	if err != nil {
		return r, fmt.Errorf("opening %d listens: %w", n, err)
	}
	if r.Open, err = readStatus(p.pid); err != nil {
		return nil, err
	}
	if err := sleep(ctx, cfg.Settle); err != nil {
		return nil, err
	}
	if r.Settled, err = readStatus(p.pid); err != nil {
		return nil, err
	}
	if r.HasVars {
		r.VarsSet, _ = readVars(ctx, client, p)
	}
	r.GoroutinesSet = pprofGoroutines(ctx, client, p)
	if r.HasGC && forceGC(ctx, client, p) {
		if r.AfterGC, err = readStatus(p.pid); err != nil {
			return nil, err
		}
		if r.HasVars {
			r.VarsGC, _ = readVars(ctx, client, p)
		}
	} else {
		r.HasGC = false
	}
	if opened < n {
		// The server refused some streams (capacity): no fan-out to measure.
		r.Problems = append(r.Problems, fmt.Sprintf("only %d of %d listens accepted, %d refused with 503", opened, n, refused))
		st.closing.Store(true)
		r.Dump, err = p.goroutineDump()
		if err != nil {
			r.Problems = append(r.Problems, "goroutine dump: "+err.Error())
		}
		return r, nil
	}

	self := os.Getpid()
	trigger := func(k int) (TriggerStats, error) {
		sc0, cc0 := cpuTime(p.pid), cpuTime(self)
		t0 := time.Now()
		cctx, cancel := context.WithTimeout(ctx, cfg.DeliveryTimeout)
		err := callTool(cctx, client, p.url(), 1000+k, "test_trigger_tool_change", nil)
		call := time.Since(t0)
		cancel()
		if err != nil {
			return TriggerStats{}, fmt.Errorf("trigger %d: %w", k, err)
		}
		if err := bd.wait(ctx, k, cfg.DeliveryTimeout); err != nil {
			return TriggerStats{}, err
		}
		sc1, cc1 := cpuTime(p.pid), cpuTime(self)
		ts := triggerStats(t0, bd.at[k], call)
		ts.ServerCPU, ts.ClientCPU = sc1-sc0, cc1-cc0
		return ts, nil
	}
	var stat0, clk0 time.Duration
	for k := range rounds {
		if k == cfg.Warmup {
			stat0, clk0 = statCPU(p.pid), cpuTime(p.pid)
		}
		ts, err := trigger(k)
		if err != nil {
			return r, err
		}
		if k >= cfg.Warmup {
			r.Triggers = append(r.Triggers, ts)
			r.Delivered += int64(n)
		}
		if k == rounds-1 {
			r.WindowStatCPU, r.WindowCPU = statCPU(p.pid)-stat0, cpuTime(p.pid)-clk0
		}
		if err := sleep(ctx, cfg.TriggerGap); err != nil {
			return r, err
		}
	}
	if profile {
		if err := r.profile(ctx, cfg, client, p, tmp, rounds, extraRounds, trigger); err != nil {
			r.Problems = append(r.Problems, "CPU profile: "+err.Error())
		}
	}
	r.Extra = bd.extra.Load()
	// The streams are still open: the dump shows what each one costs.
	st.closing.Store(true)
	r.Dump, err = p.goroutineDump()
	if err != nil {
		r.Problems = append(r.Problems, "goroutine dump: "+err.Error())
	}
	st.close()
	r.Problems = append(r.Problems, st.unexpected...)
	return r, nil
}

// profile takes a CPU profile of the server (net/http/pprof) while it
// triggers fan-outs back to back (from round first on), and keeps the
// profile's top functions.
func (r *FanoutRun) profile(ctx context.Context, cfg *Config, client *http.Client, p *process, tmp string,
	first, rounds int, trigger func(int) (TriggerStats, error)) error {
	secs := max(1, int(cfg.CPUProfile.Round(time.Second)/time.Second))
	type result struct {
		body []byte
		err  error
	}
	done := make(chan result, 1)
	// Ends when the profile's request does (done has room for its one
	// result). An early return below does not wait for it: the caller's
	// deferred kill of the server ends the request.
	go func() {
		pctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second+30*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(pctx, http.MethodGet, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", p.addr, secs), nil)
		resp, err := client.Do(req)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, trunc(body))
		}
		done <- result{body: body, err: err}
	}()
	var res result
	got := false
	n := 0
loop:
	for k := first; k < first+rounds; k++ {
		select {
		case res = <-done:
			got = true
			break loop
		default:
		}
		if _, err := trigger(k); err != nil {
			return err
		}
		if err := sleep(ctx, cfg.TriggerGap); err != nil {
			return err
		}
		n++
	}
	if !got {
		res = <-done
	}
	if res.err != nil {
		return res.err
	}
	f, err := os.CreateTemp(tmp, "cpu-*.pprof")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(res.body); err != nil {
		f.Close()
		return err
	}
	f.Close()
	gobin, err := exec.LookPath("go")
	if err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, gobin, "tool", "pprof", "-top", "-nodecount=25", p.bin.path, f.Name()).CombinedOutput()
	if err != nil {
		return fmt.Errorf("go tool pprof: %v: %s", err, out)
	}
	r.Profile = &CPUProfile{Seconds: secs, Triggers: n, Top: string(out)}
	return nil
}

// CPUProfile is a server CPU profile's summary.
type CPUProfile struct {
	// Seconds is the profile's length, Triggers the fan-outs triggered in it.
	Seconds, Triggers int
	// Top is `go tool pprof -top -nodecount=25`.
	Top string
}

func triggerStats(t0 time.Time, at []int64, call time.Duration) TriggerStats {
	lat := make([]float64, len(at))
	base := t0.UnixNano()
	for i, a := range at {
		lat[i] = float64(a - base)
	}
	s := sortedCopy(lat)
	return TriggerStats{
		First: time.Duration(s[0]),
		P50:   time.Duration(quantile(s, 0.50)),
		P99:   time.Duration(quantile(s, 0.99)),
		Last:  time.Duration(s[len(s)-1]),
		Call:  call,
	}
}

// idleDump returns the goroutine dump of an idle, freshly started server.
func idleDump(ctx context.Context, cfg *Config, b *serverBin, tmp string) (dump, procStatus, error) {
	p, err := start(ctx, b, tmp)
	if err != nil {
		return dump{}, procStatus{}, err
	}
	defer p.kill()
	if err := sleep(ctx, cfg.Settle); err != nil {
		return dump{}, procStatus{}, err
	}
	s, err := readStatus(p.pid)
	if err != nil {
		return dump{}, s, err
	}
	d, err := p.goroutineDump()
	return d, s, err
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
