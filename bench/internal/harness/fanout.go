package harness

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"slices"
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
	// acknowledgement; OpenRate is Opened / OpenSeconds; OpenCPU is the
	// server's CPU time over the same span.
	OpenSeconds, OpenRate float64
	OpenCPU               time.Duration
	// Before is read before opening, Settled with the N streams open after
	// Settle; the goroutines and heap (after a forced GC) at the same two
	// moments, from the server's net/http/pprof.
	Before, Settled              procStatus
	GoroutinesBefore, Goroutines int
	HeapBefore, Heap             int64
	// Triggers holds the measured triggers (warm-up ones excluded).
	Triggers []TriggerStats
	// Problems are notes about things that went wrong.
	Problems []string
}

// TriggerStats are one trigger's delivery latencies over the N streams,
// from just before the trigger call to each stream's notification.
type TriggerStats struct {
	First, P50, P99, Last time.Duration
	// Call is how long the trigger's tools/call took.
	Call time.Duration
	// ServerCPU is the CPU time the server process used from just before
	// the trigger until the last stream had its notification.
	ServerCPU time.Duration
}

// Fanout runs the fan-out scenario once on a fresh process of s: it opens n
// listens, triggers cfg.Warmup + cfg.Triggers tool-list changes and measures
// each one's delivery to every stream; round is recorded in the run.
func (s *Server) Fanout(ctx context.Context, cfg *Config, n, round int) (*FanoutRun, error) {
	p, err := s.start(ctx)
	if err != nil {
		return nil, err
	}
	defer p.kill()
	tr := newTransport()
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	r := &FanoutRun{N: n, Round: round}
	// The baseline RSS is read after the forced GC of the heap reading,
	// the RSS with the streams open before it (as the server runs).
	snapshot := func(gcFirst bool, st *procStatus, g *int, heap *int64) error {
		if err := sleep(ctx, cfg.Settle); err != nil {
			return err
		}
		if gcFirst {
			if *g, *heap, err = p.inside(ctx, client); err != nil {
				return err
			}
		}
		if *st, err = readStatus(p.pid); err != nil || gcFirst {
			return err
		}
		*g, *heap, err = p.inside(ctx, client)
		return err
	}
	if err := snapshot(true, &r.Before, &r.GoroutinesBefore, &r.HeapBefore); err != nil {
		return nil, err
	}

	rounds := cfg.Warmup + cfg.Triggers
	bd := newBoard(msgToolsChanged, rounds, n)
	st := newStreams(ctx, client, p.url(), bd)
	defer st.close()
	runtime.GC() // the opens start from one state of this process's collector
	cpu0 := cpuTime(p.pid)
	opened, refused, elapsed, err := st.openAll(n, cfg.OpenConcurrency, map[string]any{"toolsListChanged": true})
	r.Opened, r.Refused, r.OpenSeconds, r.OpenCPU = opened, refused, elapsed.Seconds(), cpuTime(p.pid)-cpu0
	if elapsed > 0 {
		r.OpenRate = float64(opened) / elapsed.Seconds()
	}
	if err != nil {
		return r, fmt.Errorf("opening %d listens: %w", n, err)
	}
	if err := snapshot(false, &r.Settled, &r.Goroutines, &r.Heap); err != nil {
		return nil, err
	}
	if opened < n {
		// The server refused some streams (capacity): no fan-out to measure.
		r.Problems = append(r.Problems, fmt.Sprintf("only %d of %d listens accepted, %d refused with 503", opened, n, refused))
		return r, nil
	}
	for k := range rounds {
		cpu0 := cpuTime(p.pid)
		t0 := time.Now()
		cctx, cancel := context.WithTimeout(ctx, cfg.DeliveryTimeout)
		err := callTool(cctx, client, p.url(), 1000+k, "test_trigger_tool_change", nil)
		call := time.Since(t0)
		cancel()
		if err != nil {
			return r, fmt.Errorf("trigger %d: %w", k, err)
		}
		if err := bd.wait(ctx, k, cfg.DeliveryTimeout); err != nil {
			return r, err
		}
		ts := triggerStats(t0, bd.at[k], call)
		ts.ServerCPU = cpuTime(p.pid) - cpu0
		if k >= cfg.Warmup {
			r.Triggers = append(r.Triggers, ts)
		}
		if err := sleep(ctx, cfg.TriggerGap); err != nil {
			return r, err
		}
	}
	if x := bd.extra.Load(); x > 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("%d notifications beyond one per trigger", x))
	}
	st.close()
	r.Problems = append(r.Problems, st.unexpected...)
	return r, nil
}

func triggerStats(t0 time.Time, at []int64, call time.Duration) TriggerStats {
	lat := make([]float64, len(at))
	for i, a := range at {
		lat[i] = float64(a - t0.UnixNano())
	}
	slices.Sort(lat)
	return TriggerStats{
		First: time.Duration(lat[0]),
		P50:   time.Duration(quantile(lat, 0.50)),
		P99:   time.Duration(quantile(lat, 0.99)),
		Last:  time.Duration(lat[len(lat)-1]),
		Call:  call,
	}
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
