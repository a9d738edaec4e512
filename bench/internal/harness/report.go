package harness

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// fanAgg aggregates a FanoutSet.
type fanAgg struct {
	N int
	// Full reports that every run opened all N streams and measured its
	// triggers; Note says why not.
	Full bool
	Note string
	// Opened is the fewest streams a run had open.
	Opened int
	// Latencies (ms) over every measured trigger of every run.
	First, P50, P99, Last, Spread, Call Summary
	// CPU time per stream (µs) during a trigger's fan-out, server and
	// benchmark client, and the server's per listen opened.
	ServerCPU, ClientCPU, OpenCPU Summary
	// Per open stream, over runs: RSS (bytes) after Settle and right after
	// opening, goroutines from the SIGQUIT dump and from expvar.
	RSS, RSSOpen, GDump, GVars Summary
	// Go heap and goroutine stacks in use per open stream (bytes, expvar
	// memstats HeapInuse and StackInuse), after the settle and after a
	// forced GC; RSS per stream after a forced GC; goroutines per stream
	// from the pprof goroutine profile.
	Heap, Stack, HeapGC, RSSGC, GPprof Summary
	Threads, OpenRate                  Summary
	// Absolute readings over runs: RSS (bytes) before opening and with the
	// streams open after a settle, and the goroutine dump's total.
	RSSBefore, RSSAfter, GTotal Summary
	Runs                        int
}

func aggregate(set *FanoutSet, idle dump) fanAgg {
	a := fanAgg{N: set.N, Full: len(set.Runs) > 0 && len(set.Errors) == 0, Opened: math.MaxInt, Runs: len(set.Runs)}
	var trig []TriggerStats
	var rss, rssOpen, gd, gv, thr, rate, openCPU, heap, stack, rb, ra, gt, heapGC, rssGC, gp []float64
	for _, r := range set.Runs {
		a.Opened = min(a.Opened, r.Opened)
		if r.Opened < set.N || len(r.Triggers) == 0 {
			a.Full = false
			if r.Opened < set.N && a.Note == "" {
				a.Note = fmt.Sprintf("%s of %s listens accepted, %s refused with 503", commas(r.Opened), commas(set.N), commas(r.Refused))
			}
		}
		trig = append(trig, r.Triggers...)
		if r.Opened > 0 {
			per := func(after, before int64) float64 { return float64(after-before) * 1024 / float64(r.Opened) }
			rss = append(rss, per(r.Settled.RSSKB, r.Before.RSSKB))
			rb = append(rb, float64(r.Before.RSSKB)*1024)
			ra = append(ra, float64(r.Settled.RSSKB)*1024)
			if r.Dump.Total > 0 {
				gt = append(gt, float64(r.Dump.Total))
			}
			rssOpen = append(rssOpen, per(r.Open.RSSKB, r.Before.RSSKB))
			if r.Dump.Total > 0 && idle.Total > 0 {
				gd = append(gd, float64(r.Dump.Total-idle.Total)/float64(r.Opened))
			}
			if r.HasVars && r.VarsSet.Goroutines >= 0 && r.VarsBefore.Goroutines >= 0 {
				gv = append(gv, float64(r.VarsSet.Goroutines-r.VarsBefore.Goroutines)/float64(r.Opened))
			}
			if r.HasGC {
				rssGC = append(rssGC, per(r.AfterGC.RSSKB, r.Before.RSSKB))
				if r.HasVars && r.VarsGC.HeapInuse >= 0 && r.VarsBefore.HeapInuse >= 0 {
					heapGC = append(heapGC, float64(r.VarsGC.HeapInuse-r.VarsBefore.HeapInuse)/float64(r.Opened))
				}
			}
			if r.GoroutinesSet >= 0 && r.GoroutinesBefore >= 0 {
				gp = append(gp, float64(r.GoroutinesSet-r.GoroutinesBefore)/float64(r.Opened))
			}
			if r.HasVars && r.VarsSet.HeapInuse >= 0 && r.VarsBefore.HeapInuse >= 0 {
				heap = append(heap, float64(r.VarsSet.HeapInuse-r.VarsBefore.HeapInuse)/float64(r.Opened))
				stack = append(stack, float64(r.VarsSet.StackInuse-r.VarsBefore.StackInuse)/float64(r.Opened))
			}
			thr = append(thr, float64(r.Settled.Threads))
			rate = append(rate, r.OpenRate)
			openCPU = append(openCPU, float64(r.OpenCPU)/1e3/float64(r.Opened))
		}
	}
	if a.Opened == math.MaxInt {
		a.Opened = 0
	}
	if len(set.Errors) > 0 && a.Note == "" {
		a.Note = set.Errors[0]
	}
	a.First = summarize(millis(trig, func(t TriggerStats) time.Duration { return t.First }))
	a.P50 = summarize(millis(trig, func(t TriggerStats) time.Duration { return t.P50 }))
	a.P99 = summarize(millis(trig, func(t TriggerStats) time.Duration { return t.P99 }))
	a.Last = summarize(millis(trig, func(t TriggerStats) time.Duration { return t.Last }))
	a.Spread = summarize(millis(trig, func(t TriggerStats) time.Duration { return t.Spread() }))
	a.Call = summarize(millis(trig, func(t TriggerStats) time.Duration { return t.Call }))
	perStream := func(d time.Duration) float64 { return float64(d) / 1e3 / float64(set.N) }
	a.ServerCPU = summarize(micros(trig, func(t TriggerStats) float64 { return perStream(t.ServerCPU) }))
	a.ClientCPU = summarize(micros(trig, func(t TriggerStats) float64 { return perStream(t.ClientCPU) }))
	a.OpenCPU = summarize(openCPU)
	a.RSS, a.RSSOpen = summarize(rss), summarize(rssOpen)
	a.Heap, a.Stack = summarize(heap), summarize(stack)
	a.HeapGC, a.RSSGC, a.GPprof = summarize(heapGC), summarize(rssGC), summarize(gp)
	a.RSSBefore, a.RSSAfter, a.GTotal = summarize(rb), summarize(ra), summarize(gt)
	a.GDump, a.GVars = summarize(gd), summarize(gv)
	a.Threads, a.OpenRate = summarize(thr), summarize(rate)
	return a
}

// stallAgg aggregates a StallSet's runs of one mode.
type stallAgg struct {
	Runs          int
	P50, P99, Max float64 // pooled over runs, ms
	RunP99        Summary // per-run p99, ms
	CallMax       float64 // ms
	TotalMedian   float64 // ms
	Fates         []*StalledFate
	TriggerP99Max float64 // worst per-trigger p99, ms
	TriggerP99Med float64 // median per-trigger p99, ms
	// Sent is each run's number of triggers sent; Blocked lists the runs'
	// blocked trigger indexes; Undelivered sums the runs' undelivered
	// notifications.
	Sent        []int
	Blocked     []int
	Undelivered int
	// Within holds each stalled run's median per-trigger p99 after the
	// stalled client's buffers filled ÷ before (+Inf when not delivered);
	// BlockIndexes the runs' block indexes.
	Within       []float64
	BlockIndexes []int
}

// withinMedian is the median of Within (NaN if none).
func (a stallAgg) withinMedian() float64 {
	if len(a.Within) == 0 {
		return math.NaN()
	}
	s := sortedCopy(a.Within)
	return s[len(s)/2]
}

// withinText lists the runs' within-run ratios.
func (a stallAgg) withinText() string {
	if len(a.Within) == 0 {
		return "n/a"
	}
	parts := make([]string, len(a.Within))
	for i, v := range a.Within {
		parts[i] = num(v)
	}
	return fmt.Sprintf("%s (runs: %s)", num(a.withinMedian()), strings.Join(parts, ", "))
}

func aggregateStall(runs []*StallRun) stallAgg {
	a := stallAgg{Runs: len(runs), P50: math.NaN(), P99: math.NaN(), Max: math.NaN()}
	var all, runP99, totals, trigP99 []float64
	undelivered := 0
	for _, r := range runs {
		all = append(all, r.Lags...)
		undelivered += r.Undelivered
		runP99 = append(runP99, lagMillis(r.P99))
		totals = append(totals, ms(r.Total))
		for _, c := range r.Calls {
			a.CallMax = max(a.CallMax, ms(c))
		}
		for _, t := range r.TriggerP99 {
			if t == Never {
				continue // not (fully) delivered: counted in Undelivered
			}
			a.TriggerP99Max = max(a.TriggerP99Max, ms(t))
			trigP99 = append(trigP99, ms(t))
		}
		if r.BlockIndex > 0 && r.BeforeP99 > 0 {
			a.Within = append(a.Within, lagMillis(r.AfterP99)/lagMillis(r.BeforeP99))
			a.BlockIndexes = append(a.BlockIndexes, r.BlockIndex)
		}
		if r.Fate != nil {
			a.Fates = append(a.Fates, r.Fate)
		}
		a.Sent = append(a.Sent, r.Sent)
		if r.BlockedAt >= 0 {
			a.Blocked = append(a.Blocked, r.BlockedAt)
		}
		a.Undelivered += r.Undelivered
	}
	if len(all)+undelivered > 0 {
		a.P50 = lagMillis(lagQuantile(all, undelivered, 0.50))
		a.P99 = lagMillis(lagQuantile(all, undelivered, 0.99))
		a.Max = lagMillis(lagQuantile(all, undelivered, 1))
	}
	a.RunP99 = summarize(runP99)
	a.TriggerP99Med = summarize(trigP99).Median
	a.TotalMedian = summarize(totals).Median
	return a
}

// lagMillis is d in ms, +Inf for Never.
func lagMillis(d time.Duration) float64 {
	if d == Never {
		return math.Inf(1)
	}
	return ms(d)
}

// plural is "1 run" or "3 runs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return commas(n) + " " + noun + "s"
}

func commas(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + commas(-n)
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// num formats with about three significant digits.
func num(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v):
		return "n/a"
	case math.IsInf(v, 1):
		return "∞"
	case a >= 100:
		return commas(int(math.Round(v)))
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// cell formats a summary as "median (min–max)".
func cell(s Summary, scale float64) string {
	if !s.ok() {
		return "n/a"
	}
	if s.N == 1 || s.Min == s.Max {
		return num(s.Median * scale)
	}
	return fmt.Sprintf("%s (%s–%s)", num(s.Median*scale), num(s.Min*scale), num(s.Max*scale))
}

func ratio(ours, theirs float64) string {
	if math.IsNaN(ours) || math.IsNaN(theirs) || theirs == 0 || math.IsInf(ours, 0) || math.IsInf(theirs, 0) {
		return "n/a"
	}
	r := ours / theirs
	if r < 1 && r > 0 {
		return fmt.Sprintf("%.3g (1/%.3g)", r, 1/r)
	}
	return fmt.Sprintf("%.3g", r)
}

func yesNo(ok bool) string {
	if ok {
		return "**yes**"
	}
	return "**no**"
}

// pick returns the aggregate at n, or nil.
func pick(aggs []fanAgg, n int) *fanAgg {
	for i := range aggs {
		if aggs[i].N == n {
			return &aggs[i]
		}
	}
	return nil
}

func renderMarkdown(res *Results) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	cfg := res.Config
	ours, sdk := res.Servers[0], res.Servers[1]
	var oursAgg, sdkAgg []fanAgg
	for i := range ours.Fanout {
		oursAgg = append(oursAgg, aggregate(ours.Fanout[i], ours.Idle))
		sdkAgg = append(sdkAgg, aggregate(sdk.Fanout[i], sdk.Idle))
	}
	oc, os_ := aggregateStall(ours.Stall.Control), aggregateStall(ours.Stall.Stalled)
	sc, ss := aggregateStall(sdk.Stall.Control), aggregateStall(sdk.Stall.Stalled)

	w("# `subscriptions/listen` benchmark: our server vs go-sdk v1.8.0\n\n")
	w("Generated by `bench/cmd/listenbench`; do not edit by hand. Command, run from the repository root:\n\n")
	w("    %s\n\n", res.Command)
	w("Servers built from commit `%s`", res.Commit)
	if len(res.Dirty) > 0 {
		w(" with uncommitted changes to %s", strings.Join(res.Dirty, ", "))
	}
	w(". ")
	w("Run on %s, took %s. Both servers run as their own process on loopback Streamable HTTP (MCP %s); ",
		res.Started.UTC().Format("2006-01-02 15:04 MST"), res.Finished.Sub(res.Started).Round(time.Second), ProtocolVersion)
	w("the clients run in the benchmark process. One server process runs at a time, a fresh one for every run.\n\n")

	w("## Machine\n\n| | |\n|---|---|\n")
	w("| CPU | %s, nproc %d |\n", res.Machine.Model, res.Machine.NProc)
	w("| Memory | %s |\n", res.Machine.MemTotal)
	w("| Go | %s (benchmark and both servers) |\n", res.Machine.GoVersion)
	w("| Kernel | %s |\n", res.Machine.Kernel)
	w("| Load average (1, 5, 15 min) | %s at the start, %s at the end (a shared machine) |\n", res.Machine.LoadStart, res.Machine.LoadEnd)
	w("| RLIMIT_NOFILE | %s (set by the benchmark; the servers inherit it) |\n\n", commas(int(res.Machine.NoFile)))
	if len(res.Load) > 0 {
		w("CPU time per phase (from `/proc/stat` and `getrusage`): the other processes' share is load this benchmark did not cause; the machine has %d cores.\n\n", res.Machine.NProc)
		w("| Phase | Wall time | CPU of the benchmark and its servers | CPU of other processes | Other processes, average cores busy |\n|---|---|---|---|---|\n")
		for _, l := range res.Load {
			w("| %s | %s s | %s s | %s s | %s |\n", l.Phase, num(l.Wall.Seconds()), num(l.Own.Seconds()), num(l.Other.Seconds()),
				num(l.Other.Seconds()/max(l.Wall.Seconds(), 1e-9)))
		}
		w("\n")
	}

	w("## Servers\n\n")
	for _, s := range res.Servers {
		w("- **%s**: `go build %s`, started with `-addr 127.0.0.1:0 -quiet -lifetime 1h", s.Kind.Label, s.Kind.Pkg)
		for _, a := range s.Args {
			w(" %s", a)
		}
		w("`. Flags it offers: %s. A fresh idle process: %s goroutines (SIGQUIT dump), RSS %s MB.\n",
			strings.Join(s.Flags, ", "), commas(s.Idle.Total), num(float64(s.IdleStatus.RSSKB)*1024/1e6))
	}
	w("\n")

	// Goals.
	w("## Goals\n\n| Goal | ours | go-sdk | ours ÷ go-sdk | Target | Met? |\n|---|---|---|---|---|---|\n")
	goalN := slices.Max(cfg.Ns)
	if o, g := pick(oursAgg, goalN), pick(sdkAgg, goalN); o != nil && g != nil {
		if o.Full && g.Full {
			r := o.Last.Median / g.Last.Median
			w("| Fan-out to %s streams, last stream (ms, median) | %s | %s | %s | ≤ 0.1 (10× faster) | %s |\n",
				commas(goalN), num(o.Last.Median), num(g.Last.Median), ratio(o.Last.Median, g.Last.Median), yesNo(r <= 0.1))
			w("| Fan-out to %s streams, last stream, absolute (ms, median) | %s | | | ≤ 40 ms | %s |\n",
				commas(goalN), num(o.Last.Median), yesNo(o.Last.Median <= 40))
		} else {
			w("| Fan-out to %s streams, last stream | %s | %s | n/a | ≤ 0.1 and ≤ 40 ms | **not measurable** |\n",
				commas(goalN), fullOr(o), fullOr(g))
		}
	}
	// Memory: the largest N where both opened every stream.
	memN := 0
	for i := len(oursAgg) - 1; i >= 0; i-- {
		if oursAgg[i].Opened == oursAgg[i].N && sdkAgg[i].Opened == sdkAgg[i].N && oursAgg[i].RSS.ok() && sdkAgg[i].RSS.ok() {
			memN = oursAgg[i].N
			break
		}
	}
	if memN > 0 {
		o, g := pick(oursAgg, memN), pick(sdkAgg, memN)
		w("| RSS per open stream at N = %s (KB, median) | %s | %s | %s | ≤ 0.25 | %s |\n",
			commas(memN), num(o.RSS.Median/1000), num(g.RSS.Median/1000), ratio(o.RSS.Median, g.RSS.Median), yesNo(o.RSS.Median <= 0.25*g.RSS.Median))
		w("| RSS per open stream at N = %s, absolute (KB, median) | %s | | | ≤ 20 KB | %s |\n",
			commas(memN), num(o.RSS.Median/1000), yesNo(o.RSS.Median <= 20000))
		if memN != goalN {
			w("| RSS per open stream at N = %s | %s | %s | n/a | ≤ 0.25 and ≤ 20 KB | **not measurable** |\n",
				commas(goalN), memOr(pick(oursAgg, goalN)), memOr(pick(sdkAgg, goalN)))
		}
	}
	if !math.IsNaN(oc.P99) && !math.IsNaN(os_.P99) {
		ro, rg := os_.P99/oc.P99, math.NaN()
		if !math.IsNaN(sc.P99) && !math.IsNaN(ss.P99) {
			rg = ss.P99 / sc.P99
		}
		w("| Stalled client: healthy streams' p99 lag (pooled over triggers, streams and runs), stalled ÷ control | %s | %s | n/a | ≤ 1.2 | %s |\n",
			num(ro), num(rg), yesNo(ro <= 1.2))
		mo := os_.withinMedian()
		w("| Stalled client, within each stalled run (immune to load changing between runs): median per-trigger p99 after the stalled client's buffers filled ÷ before | %s | %s | n/a | ≤ 1.2 | %s |\n",
			os_.withinText(), ss.withinText(), yesNo(mo <= 1.2))
	}
	w("\n")

	// Main table.
	w("## Results\n\n")
	w("Fan-out cells: median (min–max) over %s × %s (after %s), each run a fresh server process with N streams; ",
		plural(cfg.Runs, "run"), plural(cfg.Triggers, "measured trigger"), plural(cfg.Warmup, "warm-up trigger"))
	w("latency is from just before the `test_trigger_tool_change` call to a stream's `notifications/tools/list_changed`. ")
	w("Memory, goroutine, thread and open-rate cells: median (min–max) over runs. ")
	w("Ratio: ours ÷ go-sdk, medians (below 1: ours is lower).\n\n")
	w("| Metric | N | ours | go-sdk | ours ÷ go-sdk |\n|---|---|---|---|---|\n")
	type row struct {
		name  string
		get   func(*fanAgg) Summary
		scale float64
		full  bool // only meaningful when every stream was open
	}
	rows := []row{
		{"Fan-out latency, first stream (ms)", func(a *fanAgg) Summary { return a.First }, 1, true},
		{"Fan-out latency, p50 (ms)", func(a *fanAgg) Summary { return a.P50 }, 1, true},
		{"Fan-out latency, p99 (ms)", func(a *fanAgg) Summary { return a.P99 }, 1, true},
		{"Fan-out latency, last stream (ms)", func(a *fanAgg) Summary { return a.Last }, 1, true},
		{"Spread first → last stream (ms)", func(a *fanAgg) Summary { return a.Spread }, 1, true},
		{"Trigger tools/call round trip (ms)", func(a *fanAgg) Summary { return a.Call }, 1, true},
		{"Server CPU per stream per trigger (µs)", func(a *fanAgg) Summary { return a.ServerCPU }, 1, true},
		{"Benchmark client CPU per stream per trigger (µs)", func(a *fanAgg) Summary { return a.ClientCPU }, 1, true},
		{"Server RSS before opening (MB)", func(a *fanAgg) Summary { return a.RSSBefore }, 1e-6, false},
		{"Server RSS with the N streams open, after a settle (MB)", func(a *fanAgg) Summary { return a.RSSAfter }, 1e-6, true},
		{"RSS per open stream, after a settle (KB)", func(a *fanAgg) Summary { return a.RSS }, 1.0 / 1000, true},
		{"RSS per open stream, right after the last ack (KB)", func(a *fanAgg) Summary { return a.RSSOpen }, 1.0 / 1000, true},
		{"RSS per open stream, after a forced GC (KB)", func(a *fanAgg) Summary { return a.RSSGC }, 1.0 / 1000, true},
		{"Go heap in use per open stream, after a settle (KB, expvar `memstats.HeapInuse`)", func(a *fanAgg) Summary { return a.Heap }, 1.0 / 1000, true},
		{"Go heap in use per open stream, after a forced GC (KB, expvar `memstats.HeapInuse`)", func(a *fanAgg) Summary { return a.HeapGC }, 1.0 / 1000, true},
		{"Goroutine stacks per open stream, after a settle (KB, expvar `memstats.StackInuse`)", func(a *fanAgg) Summary { return a.Stack }, 1.0 / 1000, true},
		{"Goroutines with the N streams open (SIGQUIT dump; idle process: see below)", func(a *fanAgg) Summary { return a.GTotal }, 1, true},
		{"Goroutines per open stream (SIGQUIT dump)", func(a *fanAgg) Summary { return a.GDump }, 1, true},
		{"Goroutines per open stream (expvar `goroutines`)", func(a *fanAgg) Summary { return a.GVars }, 1, true},
		{"Goroutines per open stream (pprof goroutine profile)", func(a *fanAgg) Summary { return a.GPprof }, 1, true},
		{"OS threads with N streams open", func(a *fanAgg) Summary { return a.Threads }, 1, true},
		{"Open rate, listens acknowledged per second", func(a *fanAgg) Summary { return a.OpenRate }, 1, true},
		{"Server CPU per listen opened (µs)", func(a *fanAgg) Summary { return a.OpenCPU }, 1, true},
	}
	footnote2 := false
	for _, rw := range rows {
		for i := range oursAgg {
			o, g := &oursAgg[i], &sdkAgg[i]
			ocell, gcell := cell(rw.get(o), rw.scale), cell(rw.get(g), rw.scale)
			if rw.full && o.Opened < o.N {
				ocell = "n/a¹"
			}
			if rw.full && g.Opened < g.N {
				gcell = "n/a¹"
			}
			rt := "n/a"
			if ocell != "n/a¹" && gcell != "n/a¹" {
				rt = ratio(rw.get(o).Median, rw.get(g).Median)
			}
			inside := strings.Contains(rw.name, "expvar") || strings.Contains(rw.name, "pprof") || strings.Contains(rw.name, "GC")
			if inside && gcell == "n/a" {
				gcell, footnote2 = "n/a²", true
			}
			if inside && ocell == "n/a" {
				ocell, footnote2 = "n/a²", true
			}
			w("| %s | %s | %s | %s | %s |\n", rw.name, commas(o.N), ocell, gcell, rt)
		}
	}
	// Stalled client rows.
	sRows := []struct {
		name   string
		o, g   float64
		detail string
	}{
		{"Healthy lag p50, control (ms)", oc.P50, sc.P50, ""},
		{"Healthy lag p99, control (ms)", oc.P99, sc.P99, ""},
		{"Healthy lag max, control (ms)", oc.Max, sc.Max, ""},
		{"Healthy lag p50, one stalled client (ms)", os_.P50, ss.P50, ""},
		{"Healthy lag p99, one stalled client (ms)", os_.P99, ss.P99, ""},
		{"Healthy lag max, one stalled client (ms)", os_.Max, ss.Max, ""},
		{"Healthy p99, stalled ÷ control", os_.P99 / oc.P99, ss.P99 / sc.P99, ""},
		{"Median of the per-trigger p99s (fully delivered triggers), control (ms)", oc.TriggerP99Med, sc.TriggerP99Med, ""},
		{"Median of the per-trigger p99s (fully delivered triggers), one stalled client (ms)", os_.TriggerP99Med, ss.TriggerP99Med, ""},
		{"Median per-trigger p99 (fully delivered triggers), stalled ÷ control", os_.TriggerP99Med / oc.TriggerP99Med, ss.TriggerP99Med / sc.TriggerP99Med, ""},
		{"Within each stalled run: median per-trigger p99 after the stalled client's buffers filled ÷ before (median of runs)", os_.withinMedian(), ss.withinMedian(), ""},
		{"Worst single trigger's p99, control (ms)", oc.TriggerP99Max, sc.TriggerP99Max, ""},
		{"Worst fully delivered trigger's p99, one stalled client (ms)", os_.TriggerP99Max, ss.TriggerP99Max, ""},
		{"Slowest trigger call, control (ms)", oc.CallMax, sc.CallMax, ""},
		{"Slowest trigger call, one stalled client (ms)", os_.CallMax, ss.CallMax, ""},
		{"All triggers delivered, control (ms, median run)", oc.TotalMedian, sc.TotalMedian, ""},
		{"All triggers delivered, one stalled client (ms, median run)", os_.TotalMedian, ss.TotalMedian, ""},
	}
	for _, r := range sRows {
		w("| Stalled client: %s | %s | %s | %s | %s |\n", r.name, commas(cfg.StallStreams), num(r.o), num(r.g), ratio(r.o, r.g))
	}
	w("| Stalled client: triggers sent per run (of %d) | %s | %s | %s | |\n",
		cfg.StallTriggers, commas(cfg.StallStreams), sentText(os_, cfg), sentText(ss, cfg))
	w("| Stalled client: healthy notifications never delivered | %s | %s | %s | |\n",
		commas(cfg.StallStreams), commas(os_.Undelivered), commas(ss.Undelivered))
	w("| Stalled client: what happened to the stalled stream | %s | %s | %s | |\n",
		commas(cfg.StallStreams), fates(os_.Fates), fates(ss.Fates))
	w("\n")
	notes := []string{}
	for i := range oursAgg {
		for _, a := range []struct {
			who string
			agg *fanAgg
			set *FanoutSet
		}{{"ours", &oursAgg[i], ours.Fanout[i]}, {"go-sdk", &sdkAgg[i], sdk.Fanout[i]}} {
			if a.agg.Opened < a.agg.N {
				n := fmt.Sprintf("%s at N = %s: %s", a.who, commas(a.agg.N), a.agg.Note)
				if a.who == "ours" && strings.Contains(a.agg.Note, "503") {
					n += " (examples/server leaves `streamhttp.Options.MaxStreams` at its default, `streamhttp.DefaultMaxStreams` = 1,024, and has no flag to raise it)"
				}
				if a.agg.GDump.ok() {
					n += fmt.Sprintf("; with those %s streams open: %s goroutines per stream (dump); fan-out not measured, and RSS per stream not comparable (it holds the garbage of the refused requests)",
						commas(a.agg.Opened), cell(a.agg.GDump, 1))
				}
				notes = append(notes, n+".")
			}
			for _, e := range a.set.Errors {
				notes = append(notes, fmt.Sprintf("%s at N = %s: error: %s.", a.who, commas(a.agg.N), e))
			}
		}
	}
	if len(notes) > 0 {
		w("¹ Not measured:\n\n")
		for _, n := range notes {
			w("- %s\n", n)
		}
		w("\n")
	}
	if footnote2 {
		w("² Not available from that server: ")
	}
	for i, sv := range res.Servers {
		if !footnote2 {
			break
		}
		if i > 0 {
			w("; ")
		}
		var has []string
		if sv.hasVars() {
			has = append(has, "expvar at `/debug/vars`")
		}
		if sv.hasPprof() {
			has = append(has, "net/http/pprof (goroutine profile, forced GC with `/debug/pprof/heap?gc=1`)")
		}
		if len(has) == 0 {
			has = append(has, "neither expvar nor net/http/pprof")
		}
		w("%s serves %s", sv.Kind.Label, strings.Join(has, " and "))
	}
	if footnote2 {
		w(". The SIGQUIT dump rows count every server's goroutines.\n\n")
	}
	for _, s := range res.Servers {
		for _, e := range s.Stall.Errors {
			w("- %s, stalled-client scenario: error: %s\n", s.Kind.Label, e)
		}
	}

	// Goroutine breakdown.
	w("## Goroutines per open stream, by kind (SIGQUIT dump)\n\n")
	w("Groups of goroutines (state, first frame outside the runtime and the standard library's I/O packages, and creator) ")
	w("with at least half as many members as open streams, in the dump taken at the end of the first run at the largest N that every stream opened.\n\n")
	for _, s := range res.Servers {
		set, n := largestFull(s.Fanout)
		if set == nil {
			continue
		}
		d := set.Runs[0].Dump
		w("**%s**, N = %s, %s goroutines in all (%s when idle):\n\n", s.Kind.Label, commas(n), commas(d.Total), commas(s.Idle.Total))
		w("| per stream | state | frame | created by |\n|---|---|---|---|\n")
		for _, g := range d.Groups {
			if g.Count*2 < n {
				break
			}
			w("| %.2f | %s | `%s` | `%s` |\n", float64(g.Count)/float64(n), g.State, g.Frame, g.Created)
		}
		w("\n")
	}

	// CPU profiles.
	var profiled bool
	for _, sv := range res.Servers {
		for _, set := range sv.Fanout {
			for _, r := range set.Runs {
				if r.Profile == nil {
					continue
				}
				if !profiled {
					w("## Server CPU profiles during fan-out\n\n")
					w("Taken through each server's net/http/pprof (`/debug/pprof/profile`) in the first run at the largest N, while the benchmark triggered further fan-outs (after the measured ones, same pacing). `go tool pprof -top -nodecount=25`:\n\n")
					profiled = true
				}
				w("**%s**, N = %s, %d s, %s:\n\n```\n%s```\n\n", sv.Kind.Label, commas(r.N), r.Profile.Seconds, plural(r.Profile.Triggers, "fan-out"), r.Profile.Top)
			}
		}
	}

	// Method.
	w("## Method\n\n")
	w("- **Fan-out.** For each N, each run starts a fresh server, opens N listens (`{\"toolsListChanged\":true}`) over one `http.Transport` (no per-host connection limit), at most %d being opened at once, and waits for every acknowledgement. ", cfg.OpenConcurrency)
	w("Then it calls `test_trigger_tool_change` %d times (%d warm-up), waiting for every stream's `notifications/tools/list_changed` and %v between calls. ", cfg.Warmup+cfg.Triggers, cfg.Warmup, cfg.TriggerGap)
	w("Each stream is read by its own goroutine through a `bufio.Reader`; a notification's arrival time is taken right after its line is read. ")
	w("go-sdk debounces list changes with a server-wide 10 ms trailing timer, so its first-stream latency includes those 10 ms; ours publishes at once.\n")
	w("- **Open rate**: streams acknowledged ÷ time from the first listen request to the last acknowledgement.\n")
	w("- **Memory**: VmRSS from `/proc/PID/status`, %v after the server printed its listening line (before), right after the last acknowledgement, and again %v later (\"after a settle\"), divided by N. ", cfg.Settle, cfg.Settle)
	w("RSS after a settle still holds garbage not yet collected. Where a server serves net/http/pprof, the benchmark also forces a GC (`GET /debug/pprof/heap?gc=1`) before the baseline reading and again with the N streams open (\"after a forced GC\"); a GC does not return freed heap to the OS at once, so the Go heap in use after it (expvar `memstats.HeapInuse`) is the closer measure of live memory. KB = 1,000 bytes.\n")
	w("- **Goroutines**: at the end of each run, with the N streams still open, the benchmark sends the server SIGQUIT (started with `GOTRACEBACK=all`), which makes the Go runtime print every goroutine and exit; ")
	w("the count minus an idle server's count, divided by N, is the per-stream figure (the runtime's own goroutines are in both counts). Ours also publishes `runtime.NumGoroutine()` in expvar (`/debug/vars`, `listen.goroutines`), read before opening and after the settle.\n")
	w("- **Stalled client** (%s per mode, fresh server each): %d streams subscribe to one resource URI of %s bytes (`test://static/` + 'a' × %s) through `resourceSubscriptions`; ",
		plural(cfg.Runs, "run"), cfg.StallStreams, commas(len(stallURI(cfg.StallURIBytes))), commas(cfg.StallURIBytes))
	w("in the stalled mode one of them is a raw TCP connection that sends its listen and never reads (SO_RCVBUF %s), the control mode has the same %d healthy streams and no stalled one. ",
		rcvbuf(cfg.StallRcvBuf), cfg.StallStreams-1)
	w("`trigger_resource_update` with that URI is called up to %d times, one at a time: the next call starts once the previous one returned and every healthy stream got its notification, so a lag is one update's delivery, not a backlog. ", cfg.StallTriggers)
	w("A healthy stream's lag for trigger k is from the start of call k to its k-th `notifications/resources/updated`, pooled over all triggers, streams and runs; a notification that never arrived counts as infinitely late (∞). ")
	w("A call that does not return within %v means the server is stuck: no further trigger is sent, and the healthy streams' notifications of the triggers not sent count as never delivered (the updates were due; the server could not send them). ", cfg.StallCallTimeout)
	w("Within each stalled run, the per-trigger p99s before and after the stalled client's buffers filled (the trigger after the last update it had received, or the blocked one) are compared as well: unlike stalled ÷ control, that ratio does not depend on the machine's load staying the same between runs. ")
	w("The notifications are large so that the stalled client's socket buffers fill: on this kernel the server's send buffer autotunes up to `tcp_wmem`'s maximum (4 MiB) and the client's receive buffer holds about 128 KiB, so %s notifications of %s bytes (%s MB) are needed before a write to the stalled client blocks. ",
		commas(cfg.StallTriggers), commas(len(stallURI(cfg.StallURIBytes))), num(float64(cfg.StallTriggers*len(stallURI(cfg.StallURIBytes)))/1e6))
	w("The server side of the stalled connection is watched in `/proc/net/tcp` until it leaves ESTABLISHED or %v after the last trigger; then the socket is read to see what it got.\n", cfg.StallObserve)
	w("- Raw data: `benchmarks.json` beside this file; chart: `fanout.png`.\n")
	return b.String()
}

// sentText tells how many triggers each run sent and which call blocked.
func sentText(a stallAgg, cfg Config) string {
	if a.Runs == 0 {
		return "n/a"
	}
	parts := make([]string, len(a.Sent))
	for i, n := range a.Sent {
		parts[i] = commas(n)
	}
	s := strings.Join(parts, ", ")
	if len(a.Blocked) == 0 {
		return s + "; every call returned"
	}
	var b []string
	for _, k := range a.Blocked {
		if t := commas(k + 1); !slices.Contains(b, t) {
			b = append(b, t)
		}
	}
	return fmt.Sprintf("%s; in %d of %d runs the call of trigger %s did not return within %v: the server was stuck, later triggers were not sent",
		s, len(a.Blocked), a.Runs, strings.Join(b, " / "), cfg.StallCallTimeout)
}

// blockedOr is v, or ∞ when a trigger call blocked.
func blockedOr(a stallAgg, v float64) string {
	if len(a.Blocked) > 0 {
		return "∞ (blocked)"
	}
	return num(v)
}

func rcvbuf(n int) string {
	if n <= 0 {
		return "kernel default"
	}
	return commas(n)
}

func fullOr(a *fanAgg) string {
	if a == nil {
		return "n/a"
	}
	if a.Full {
		return num(a.Last.Median) + " ms"
	}
	if a.Note != "" {
		return "n/a: " + a.Note
	}
	return "n/a"
}

func (s *ServerResult) hasVars() bool {
	for _, set := range s.Fanout {
		for _, r := range set.Runs {
			if r.HasVars {
				return true
			}
		}
	}
	return false
}

func (s *ServerResult) hasPprof() bool {
	for _, set := range s.Fanout {
		for _, r := range set.Runs {
			if r.HasGC || r.GoroutinesSet >= 0 {
				return true
			}
		}
	}
	return false
}

// memOr is the RSS per stream at a's N, or why it is not measured.
func memOr(a *fanAgg) string {
	if a == nil {
		return "n/a"
	}
	if a.Opened == a.N && a.RSS.ok() {
		return num(a.RSS.Median/1000) + " KB"
	}
	if a.Note != "" {
		return "n/a: " + a.Note
	}
	return "n/a"
}

func largestFull(sets []*FanoutSet) (*FanoutSet, int) {
	for i := len(sets) - 1; i >= 0; i-- {
		s := sets[i]
		if len(s.Runs) > 0 && s.Runs[0].Opened == s.N && s.Runs[0].Dump.Total > 0 {
			return s, s.N
		}
	}
	return nil, 0
}

// fates describes what happened to the stalled streams of the runs.
func fates(fs []*StalledFate) string {
	if len(fs) == 0 {
		return "n/a"
	}
	var cut, open []float64
	var updates, sendQ []float64
	bound := false
	acks, regKnown, reg := 0, 0, 0
	ends := map[string]bool{}
	for _, f := range fs {
		if f.Registered != nil {
			regKnown++
			if *f.Registered {
				reg++
			}
		}
		if f.GotAck {
			acks++
		}
		if f.CutAfter > 0 {
			cut = append(cut, f.CutAfter.Seconds())
			bound = bound || f.CutBeforeWatch
		} else {
			open = append(open, f.Observed.Seconds())
		}
		updates = append(updates, float64(f.Updates))
		sendQ = append(sendQ, float64(f.MaxSendQ)/1e6)
		ends[f.End] = true
	}
	rng := func(v []float64, unit string) string {
		sm := summarize(v)
		f := num
		if unit == "" {
			f = func(x float64) string { return commas(int(x)) }
		}
		if sm.Min == sm.Max {
			return f(sm.Min) + unit
		}
		return f(sm.Min) + "–" + f(sm.Max) + unit
	}
	var parts []string
	if regKnown > 0 {
		parts = append(parts, fmt.Sprintf("counted as open by the server (expvar) before the first trigger in %d of %d runs", reg, regKnown))
	}
	if len(cut) > 0 {
		p := fmt.Sprintf("closed by the server in %d of %d runs, %s after the first trigger", len(cut), len(fs), rng(cut, " s"))
		if bound {
			p += " (at most)"
		}
		parts = append(parts, p)
	}
	if len(open) > 0 {
		parts = append(parts, fmt.Sprintf("still open in %d of %d runs when watching stopped, %s after the first trigger", len(open), len(fs), rng(open, " s")))
	}
	endList := make([]string, 0, len(ends))
	for e := range ends {
		endList = append(endList, e)
	}
	slices.Sort(endList)
	parts = append(parts, fmt.Sprintf("reading it afterwards gave the ack (%d of %d runs) and %s updates, then: %s; up to %s queued in the server's send buffer",
		acks, len(fs), rng(updates, ""), strings.Join(endList, " / "), rng(sendQ, " MB")))
	return strings.Join(parts, "; ")
}
