package harness

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

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

// cell formats a summary as "median [min–max]".
func cell(s Summary, scale float64) string {
	if !s.ok() {
		return "n/a"
	}
	if s.N == 1 || s.Min == s.Max {
		return num(s.Median * scale)
	}
	return fmt.Sprintf("%s [%s–%s]", num(s.Median*scale), num(s.Min*scale), num(s.Max*scale))
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

func rcvbuf(n int) string {
	if n <= 0 {
		return "kernel default"
	}
	return commas(n)
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
		if f(sm.Min) == f(sm.Max) {
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
