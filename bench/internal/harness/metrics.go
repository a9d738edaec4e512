package harness

import (
	"math"
	"slices"
	"strconv"
	"time"
)

// metric is one figure of a fan-out run.
type metric struct {
	// Name is the report's row name, with its unit.
	Name string
	// value is the run's figure in the metric's unit; ok is false when the
	// run has none.
	value func(r *FanoutRun, idle dump) (v float64, ok bool)
	// full: only meaningful for a run that opened every stream and measured
	// its triggers.
	full bool
	// latency: a delivery latency in ms, which for the go-sdk includes its
	// list-change debounce (the report also divides by it less the debounce).
	latency bool
	// inside: read from the server's own expvar or pprof, which not every
	// server has.
	inside bool
	// minDivisor: a ratio's divisor below this is shown as n/a (the
	// floor's zero goroutines per stream).
	minDivisor float64
}

// triggerMedian is the median over a run's measured triggers of f, in ms.
func triggerMedian(f func(TriggerStats) time.Duration) func(*FanoutRun, dump) (float64, bool) {
	return func(r *FanoutRun, _ dump) (float64, bool) {
		if len(r.Triggers) == 0 {
			return 0, false
		}
		return summarize(millis(r.Triggers, f)).Median, true
	}
}

// perStream divides a before/after difference by the streams opened.
func perStream(r *FanoutRun, after, before float64) (float64, bool) {
	if r.Opened == 0 {
		return 0, false
	}
	return (after - before) / float64(r.Opened), true
}

// The fan-out metrics, in the report's order. Latencies are the median over
// the run's measured triggers; CPU per notification is the run's total over
// its measured triggers ÷ the notifications delivered.
var (
	mFirst  = metric{Name: "Fan-out latency, first stream (ms)", value: triggerMedian(func(t TriggerStats) time.Duration { return t.First }), full: true, latency: true}
	mP50    = metric{Name: "Fan-out latency, p50 (ms)", value: triggerMedian(func(t TriggerStats) time.Duration { return t.P50 }), full: true, latency: true}
	mP99    = metric{Name: "Fan-out latency, p99 (ms)", value: triggerMedian(func(t TriggerStats) time.Duration { return t.P99 }), full: true, latency: true}
	mLast   = metric{Name: "Fan-out latency, last stream (ms)", value: triggerMedian(func(t TriggerStats) time.Duration { return t.Last }), full: true, latency: true}
	mSpread = metric{Name: "Spread, first → last stream (ms; no debounce in it)", value: triggerMedian(TriggerStats.Spread), full: true}
	mCall   = metric{Name: "Trigger tools/call round trip (ms)", value: triggerMedian(func(t TriggerStats) time.Duration { return t.Call }), full: true}
	mCPU    = metric{Name: "Server CPU per delivered notification (µs; CPU-time clock, trigger → last delivery)", value: func(r *FanoutRun, _ dump) (float64, bool) {
		var total time.Duration
		for _, t := range r.Triggers {
			total += t.ServerCPU
		}
		if len(r.Triggers) == 0 {
			return 0, false
		}
		return float64(total) / 1e3 / float64(r.N*len(r.Triggers)), true
	}, full: true}
	mStatCPU = metric{Name: "Server CPU per delivered notification (µs; /proc/PID/stat utime+stime over all measured triggers and the gaps between them, 10 ms ticks)", value: func(r *FanoutRun, _ dump) (float64, bool) {
		if r.Delivered == 0 {
			return 0, false
		}
		return float64(r.WindowStatCPU) / 1e3 / float64(r.Delivered), true
	}, full: true}
	mWindowCPU = metric{Name: "same window, CPU-time clock (µs)", value: func(r *FanoutRun, _ dump) (float64, bool) {
		if r.Delivered == 0 {
			return 0, false
		}
		return float64(r.WindowCPU) / 1e3 / float64(r.Delivered), true
	}, full: true}
	mClientCPU = metric{Name: "Benchmark client CPU per delivered notification (µs)", value: func(r *FanoutRun, _ dump) (float64, bool) {
		var total time.Duration
		for _, t := range r.Triggers {
			total += t.ClientCPU
		}
		if len(r.Triggers) == 0 {
			return 0, false
		}
		return float64(total) / 1e3 / float64(r.N*len(r.Triggers)), true
	}, full: true}
	mRSSBefore = metric{Name: "Server RSS before opening (MB)", value: func(r *FanoutRun, _ dump) (float64, bool) {
		return float64(r.Before.RSSKB) * 1024 / 1e6, r.Before.RSSKB > 0
	}}
	mRSSAfter = metric{Name: "Server RSS with the N streams open, after a settle (MB)", value: func(r *FanoutRun, _ dump) (float64, bool) {
		return float64(r.Settled.RSSKB) * 1024 / 1e6, r.Settled.RSSKB > 0
	}, full: true}
	mRSS = metric{Name: "RSS per open stream, after a settle (KB)", value: func(r *FanoutRun, _ dump) (float64, bool) {
		return perStream(r, float64(r.Settled.RSSKB)*1.024, float64(r.Before.RSSKB)*1.024)
	}, full: true}
	mRSSOpen = metric{Name: "RSS per open stream, right after the last ack (KB)", value: func(r *FanoutRun, _ dump) (float64, bool) {
		return perStream(r, float64(r.Open.RSSKB)*1.024, float64(r.Before.RSSKB)*1.024)
	}, full: true}
	mRSSGC = metric{Name: "RSS per open stream, after a forced GC (KB)", value: func(r *FanoutRun, _ dump) (float64, bool) {
		if !r.HasGC {
			return 0, false
		}
		return perStream(r, float64(r.AfterGC.RSSKB)*1.024, float64(r.Before.RSSKB)*1.024)
	}, full: true, inside: true}
	mHeapGC = metric{Name: "Go heap in use per open stream, after a forced GC (KB, expvar `memstats.HeapInuse`)", value: func(r *FanoutRun, _ dump) (float64, bool) {
		if !r.HasGC || !r.HasVars || r.VarsGC.HeapInuse < 0 || r.VarsBefore.HeapInuse < 0 {
			return 0, false
		}
		return perStream(r, float64(r.VarsGC.HeapInuse)/1e3, float64(r.VarsBefore.HeapInuse)/1e3)
	}, full: true, inside: true}
	mStack = metric{Name: "Goroutine stacks per open stream, after a settle (KB, expvar `memstats.StackInuse`)", value: func(r *FanoutRun, _ dump) (float64, bool) {
		if !r.HasVars || r.VarsSet.StackInuse < 0 || r.VarsBefore.StackInuse < 0 {
			return 0, false
		}
		return perStream(r, float64(r.VarsSet.StackInuse)/1e3, float64(r.VarsBefore.StackInuse)/1e3)
	}, full: true, inside: true}
	mGDump = metric{Name: "Goroutines per open stream (SIGQUIT dump, less an idle process's)", value: func(r *FanoutRun, idle dump) (float64, bool) {
		if r.Dump.Total == 0 || idle.Total == 0 {
			return 0, false
		}
		return perStream(r, float64(r.Dump.Total), float64(idle.Total))
	}, full: true, minDivisor: 0.5}
	mGPprof = metric{Name: "Goroutines per open stream (pprof goroutine profile)", value: func(r *FanoutRun, _ dump) (float64, bool) {
		if r.GoroutinesSet < 0 || r.GoroutinesBefore < 0 {
			return 0, false
		}
		return perStream(r, float64(r.GoroutinesSet), float64(r.GoroutinesBefore))
	}, full: true, inside: true, minDivisor: 0.5}
	mThreads = metric{Name: "OS threads with N streams open", value: func(r *FanoutRun, _ dump) (float64, bool) {
		return float64(r.Settled.Threads), r.Settled.Threads > 0
	}, full: true}
	mOpenRate = metric{Name: "Open rate, listens acknowledged per second", value: func(r *FanoutRun, _ dump) (float64, bool) {
		return r.OpenRate, r.OpenRate > 0
	}, full: true}
	mOpenCPU = metric{Name: "Server CPU per listen opened (µs)", value: func(r *FanoutRun, _ dump) (float64, bool) {
		if r.Opened == 0 {
			return 0, false
		}
		return float64(r.OpenCPU) / 1e3 / float64(r.Opened), true
	}, full: true}

	fanoutMetrics = []metric{mFirst, mP50, mP99, mLast, mSpread, mCall, mCPU, mStatCPU, mWindowCPU, mClientCPU,
		mRSSBefore, mRSSAfter, mRSS, mRSSOpen, mRSSGC, mHeapGC, mStack, mGDump, mGPprof, mThreads, mOpenRate, mOpenCPU}
)

// series is one metric of one server at one N: the runs' values, and by
// round for pairing.
type series struct {
	Summary
	byRound map[int]float64
}

// fanAgg is one server's runs at one N.
type fanAgg struct {
	N int
	// Full reports that every run opened all N streams and measured its
	// triggers; Note says why not.
	Full bool
	Note string
	// Opened is the fewest streams a run had open; Runs the runs measured.
	Opened, Runs int
	set          *FanoutSet
	idle         dump
}

func aggregate(set *FanoutSet, idle dump) *fanAgg {
	a := &fanAgg{N: set.N, set: set, idle: idle, Full: len(set.Runs) > 0 && len(set.Errors) == 0, Opened: math.MaxInt, Runs: len(set.Runs)}
	for _, r := range set.Runs {
		a.Opened = min(a.Opened, r.Opened)
		if r.Opened < set.N || len(r.Triggers) == 0 {
			a.Full = false
			if r.Opened < set.N && a.Note == "" {
				a.Note = commas(r.Opened) + " of " + commas(set.N) + " listens accepted, " + commas(r.Refused) + " refused with 503"
			}
		}
	}
	if a.Opened == math.MaxInt {
		a.Opened = 0
	}
	if len(set.Errors) > 0 && a.Note == "" {
		a.Note = set.Errors[0]
	}
	return a
}

// get is metric m over a's runs (only those with every stream open, for a
// full metric), less shift (the debounce, for the go-sdk's latencies).
func (a *fanAgg) get(m metric, shift float64) series {
	s := series{byRound: map[int]float64{}}
	if a == nil {
		s.Summary = summarize(nil)
		return s
	}
	var vs []float64
	for _, r := range a.set.Runs {
		if m.full && (r.Opened < a.N || len(r.Triggers) == 0) {
			continue
		}
		if v, ok := m.value(r, a.idle); ok {
			v -= shift
			vs = append(vs, v)
			s.byRound[r.Round] = v
		}
	}
	s.Summary = summarize(vs)
	return s
}

// paired is the ratio x ÷ y round by round (the runs of one round ran back
// to back): its median, minimum and maximum over the rounds both have (and
// where y is at least minDivisor, if given).
func paired(x, y series, minDivisor ...float64) Summary {
	least := 0.0
	if len(minDivisor) > 0 {
		least = minDivisor[0]
	}
	var rs []float64
	rounds := make([]int, 0, len(x.byRound))
	for r := range x.byRound {
		rounds = append(rounds, r)
	}
	slices.Sort(rounds)
	for _, r := range rounds {
		if yv, ok := y.byRound[r]; ok && yv != 0 && math.Abs(yv) >= least {
			rs = append(rs, x.byRound[r]/yv)
		}
	}
	return summarize(rs)
}

// ratioCell formats a paired ratio as "median [min–max]".
func ratioCell(s Summary) string {
	if !s.ok() || math.IsInf(s.Median, 0) {
		return "n/a"
	}
	if s.N == 1 || s.Min == s.Max {
		return fmtRatio(s.Median)
	}
	return fmtRatio(s.Median) + " [" + fmtRatio(s.Min) + "–" + fmtRatio(s.Max) + "]"
}

// fmtRatio formats a ratio: two decimals from 1 up, three below.
func fmtRatio(v float64) string {
	switch a := math.Abs(v); {
	case a >= 10:
		return num(v)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
}
