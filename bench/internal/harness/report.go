package harness

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// metric is one figure of a fan-out run that opened every stream and
// measured its triggers.
type metric struct {
	// Name is the report's row name, with its unit.
	Name  string
	value func(r *FanoutRun) float64
	// minDivisor: a ratio's divisor below this is left out (the floor's
	// zero goroutines per stream).
	minDivisor float64
}

// triggerMedian is the median over a run's measured triggers of f, in ms.
func triggerMedian(f func(TriggerStats) time.Duration) func(*FanoutRun) float64 {
	return func(r *FanoutRun) float64 {
		v := make([]float64, len(r.Triggers))
		for i, t := range r.Triggers {
			v[i] = ms(f(t))
		}
		return Summarize(v).Median
	}
}

// The fan-out metrics, in the report's order. Latencies are the median over
// the run's measured triggers; CPU per notification is the run's total over
// its measured triggers ÷ the notifications delivered.
var (
	mLast = metric{Name: "Fan-out of one tools change, last stream (ms)", value: triggerMedian(func(t TriggerStats) time.Duration { return t.Last })}
	mCPU  = metric{Name: "Server CPU per delivered notification (µs)", value: func(r *FanoutRun) float64 {
		var total time.Duration
		for _, t := range r.Triggers {
			total += t.ServerCPU
		}
		return float64(total) / 1e3 / float64(r.N*len(r.Triggers))
	}}
	mRSS = metric{Name: "RSS per idle open stream, after a settle (KB)", value: func(r *FanoutRun) float64 {
		return float64(r.Settled.RSSKB-r.Before.RSSKB) * 1.024 / float64(r.N)
	}}
	mOpen  = metric{Name: "Listens opened per second", value: func(r *FanoutRun) float64 { return r.OpenRate }}
	fanout = []metric{
		mLast,
		{Name: "Spread, first → last stream (ms)", value: triggerMedian(func(t TriggerStats) time.Duration { return t.Last - t.First })},
		{Name: "First stream (ms)", value: triggerMedian(func(t TriggerStats) time.Duration { return t.First })},
		{Name: "p50 stream (ms)", value: triggerMedian(func(t TriggerStats) time.Duration { return t.P50 })},
		mCPU, mRSS,
		{Name: "Go heap in use per open stream, after a forced GC (KB)", value: func(r *FanoutRun) float64 {
			return float64(r.Heap-r.HeapBefore) / 1e3 / float64(r.N)
		}},
		{Name: "Goroutines per open stream", minDivisor: 0.5, value: func(r *FanoutRun) float64 {
			return float64(r.Goroutines-r.GoroutinesBefore) / float64(r.N)
		}},
		{Name: "Trigger `tools/call` round trip (ms)", value: triggerMedian(func(t TriggerStats) time.Duration { return t.Call })},
		mOpen,
		{Name: "Server CPU per listen opened (µs)", value: func(r *FanoutRun) float64 { return float64(r.OpenCPU) / 1e3 / float64(max(r.Opened, 1)) }},
	}
)

// byRound is m over the runs of set that opened every stream and measured
// their triggers, by round.
func byRound(set *FanoutSet, m metric) map[int]float64 {
	out := map[int]float64{}
	for _, r := range set.Runs {
		if r.Opened == set.N && len(r.Triggers) > 0 {
			out[r.Round] = m.value(r)
		}
	}
	return out
}

func values(by map[int]float64) []float64 {
	var v []float64
	for _, x := range by {
		v = append(v, x)
	}
	return v
}

// paired is the ratio x ÷ y round by round (the runs of one round ran back
// to back), over the rounds both have where |y| is at least least.
func paired(x, y map[int]float64, least float64) Summary {
	var rs []float64
	for r, xv := range x {
		if yv, ok := y[r]; ok && yv != 0 && math.Abs(yv) >= least {
			rs = append(rs, xv/yv)
		}
	}
	return Summarize(rs)
}

// Table is the markdown table of the fan-out figures of servers at the
// N of index k: a column per server, then one per pair {i, j} of server
// indexes, the ratio i ÷ j paired by round; cells are median [min–max]
// over the runs that opened every stream.
func Table(servers []*ServerResult, k int, pairs ...[2]int) string {
	var b strings.Builder
	b.WriteString("| Measure |")
	for _, s := range servers {
		b.WriteString(" " + s.Kind.Name + " |")
	}
	for _, p := range pairs {
		fmt.Fprintf(&b, " %s ÷ %s |", servers[p[0]].Kind.Name, servers[p[1]].Kind.Name)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(servers)+len(pairs)) + "\n")
	for _, m := range fanout {
		cols := make([]map[int]float64, len(servers))
		fmt.Fprintf(&b, "| %s |", m.Name)
		for i, s := range servers {
			cols[i] = byRound(s.Fanout[k], m)
			fmt.Fprintf(&b, " %s |", Summarize(values(cols[i])))
		}
		for _, p := range pairs {
			fmt.Fprintf(&b, " %s |", paired(cols[p[0]], cols[p[1]], m.minDivisor))
		}
		b.WriteString("\n")
	}
	for _, s := range servers {
		set := s.Fanout[k]
		for _, e := range set.Errors {
			fmt.Fprintf(&b, "\n- %s: %s", s.Kind.Name, e)
		}
		for _, r := range set.Runs {
			for _, p := range r.Problems {
				fmt.Fprintf(&b, "\n- %s, run %d: %s", s.Kind.Name, r.Round+1, p)
			}
		}
	}
	return b.String() + "\n"
}

func renderMarkdown(res *Results) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	cfg, m := res.Config, res.Machine
	w("# `subscriptions/listen` benchmark: this library alone and behind the go-sdk, the floor and go-sdk v1.8.0\n\n")
	w("Generated by `bench/cmd/listenbench`; do not edit by hand. Command, run from the repository root:\n\n    %s\n\n", res.Command)
	w("Servers built from commit `%s`", res.Commit)
	if len(res.Dirty) > 0 {
		w(" with uncommitted changes to %s", strings.Join(res.Dirty, ", "))
	}
	w(". Run on %s, took %s, on %s (%d cores), %s, %s, %s; load average %s at the start, %s at the end; RLIMIT_NOFILE %s.\n\n",
		res.Started.UTC().Format("2006-01-02 15:04 MST"), res.Finished.Sub(res.Started).Round(time.Second),
		m.Model, m.NProc, m.MemTotal, m.GoVersion, m.Kernel, m.LoadStart, m.LoadEnd, Commas(int(m.NoFile)))
	for _, s := range res.Servers {
		w("- **%s**: `go build %s`, started with `-addr 127.0.0.1:0 -quiet -lifetime 1h %s`.\n", s.Kind.Label, s.Kind.Pkg, strings.Join(s.Args, " "))
	}
	w("\n## Method\n\n")
	w("Each run is a fresh server process, one at a time. It opens N listens (`{\"toolsListChanged\":true}`) over loopback HTTP/1.1, at most %d at once, each read by its own goroutine in this process (which collects its garbage just before, so that no run's opens pay for the previous run's streams); ", cfg.OpenConcurrency)
	w("then it calls `test_trigger_tool_change` %d times (the first %d not counted), each time waiting for every stream's `notifications/tools/list_changed`, then %v. ", cfg.Warmup+cfg.Triggers, cfg.Warmup, cfg.TriggerGap)
	w("Latency runs from just before the trigger call to a stream's notification; a run's latency is the median over its measured triggers. ")
	w("Server CPU is the process's CPU-time clock (all threads, user and system) from just before each trigger to the last delivery, ÷ N. ")
	w("Memory: VmRSS, and from the server's net/http/pprof its goroutines and heap in use after a forced GC, read %v after start and again %v after the last acknowledgement, the difference ÷ N (KB = 1,000 bytes). ", cfg.Settle, cfg.Settle)
	w("The runs go in rounds of one run per server, in an order rotated from round to round, after a discarded warm-up run of the first server at each N (the first run pays the machine's one-time costs); a ratio is taken within each round, then summarised. ")
	w("Cells: median [min–max] over %d runs. Ours' and the go-sdk's latencies include the go-sdk's 10 ms list-change debounce; listen and the floor publish the change when the trigger call comes.\n\n", cfg.Runs)
	idx := func(k Kind) int {
		return slices.IndexFunc(res.Servers, func(s *ServerResult) bool { return s.Kind.ID == k.ID })
	}
	listen, ours, floor, gosdk := idx(Listen), idx(Ours), idx(Floor), idx(GoSDK)
	pairs := slices.DeleteFunc([][2]int{{listen, floor}, {ours, floor}, {ours, gosdk}}, func(p [2]int) bool { return p[0] < 0 || p[1] < 0 })
	for k, n := range cfg.Ns {
		w("## N = %s\n\n%s\n", Commas(n), Table(res.Servers, k, pairs...))
	}
	// The goals, at every N, for listen and ours against the floor.
	w("## Goals\n\n| Goal | Target | N | listen ÷ floor, or listen | Met? | ours ÷ floor, or ours | Met? |\n|---|---|---|---|---|---|---|\n")
	for _, g := range []struct {
		m      metric
		limit  float64
		ratio  bool
		target string
	}{{mLast, 1.10, true, "≤ 1.10 × the floor"}, {mCPU, 1.10, true, "≤ 1.10 × the floor"},
		{mRSS, 2.0, false, "≤ 2.0 KB"}, {mOpen, 0.95, true, "≥ 0.95 × the floor"}} {
		for k, n := range cfg.Ns {
			w("| %s | %s | %s |", g.m.Name, g.target, Commas(n))
			for _, i := range []int{listen, ours} {
				if i < 0 || floor < 0 {
					w(" n/a | |")
					continue
				}
				x, y := byRound(res.Servers[i].Fanout[k], g.m), byRound(res.Servers[floor].Fanout[k], g.m)
				s := Summarize(values(x))
				if g.ratio {
					s = paired(x, y, 0)
				}
				atLeast := g.m.Name == mOpen.Name // the open rate's target is a floor
				met := s.N > 0 && (atLeast && s.Median >= g.limit || !atLeast && s.Median <= g.limit)
				w(" %s | %v |", s, met)
			}
			w("\n")
		}
	}
	return b.String()
}
