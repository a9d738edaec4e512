package harness

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	s := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct{ q, want float64 }{{0, 1}, {0.5, 5}, {0.99, 10}, {1, 10}, {0.1, 1}, {0.11, 2}} {
		if got := quantile(s, c.q); got != c.want {
			t.Errorf("quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if got := lagQuantile([]float64{3, 1, 2}, 1, 0.5); got != 2 {
		t.Errorf("lagQuantile p50 = %v", got)
	}
	if got := lagQuantile([]float64{3, 1, 2}, 1, 0.99); got != Never {
		t.Errorf("lagQuantile p99 with an undelivered sample = %v, want Never", got)
	}
	if got := lagMillis(Never); !math.IsInf(got, 1) {
		t.Errorf("lagMillis(Never) = %v", got)
	}
	if got := summarize([]float64{4, 1, 3, 2}); got.Median != 2.5 || got.Min != 1 || got.Max != 4 {
		t.Errorf("summarize = %+v", got)
	}
}

func TestParseDump(t *testing.T) {
	const dump = `SIGQUIT: quit
PC=0x490041 m=0 sigcode=0

goroutine 0 gp=0xc9bc00 m=0 mp=0xc9d1e0 [idle]:
runtime.futex(0xc9d338, 0x80, 0x0, 0x0, 0x0, 0x0)

goroutine 1 gp=0x1 m=nil [select]:
runtime.gopark(0x0)
	/usr/lib/go/src/runtime/proc.go:460 +0xce
main.main()
	/x/main.go:10 +0x1

goroutine 7 gp=0x2 m=nil [IO wait, 3 minutes]:
internal/poll.runtime_pollWait(0x0, 0x72)
	/usr/lib/go/src/runtime/netpoll.go:351 +0x85
net/http.(*connReader).backgroundRead(0xc000)
	/usr/lib/go/src/net/http/server.go:690 +0x37
created by net/http.(*connReader).startBackgroundRead in goroutine 6
	/usr/lib/go/src/net/http/server.go:686 +0xb6

goroutine 8 gp=0x3 m=nil [IO wait]:
internal/poll.runtime_pollWait(0x0, 0x72)
	/usr/lib/go/src/runtime/netpoll.go:351 +0x85
net/http.(*connReader).backgroundRead(0xc001)
	/usr/lib/go/src/net/http/server.go:690 +0x37
created by net/http.(*connReader).startBackgroundRead in goroutine 5
	/usr/lib/go/src/net/http/server.go:686 +0xb6
`
	d, err := parseDump(strings.NewReader(dump))
	if err != nil {
		t.Fatal(err)
	}
	if d.Total != 3 {
		t.Errorf("Total = %d, want 3", d.Total)
	}
	g := d.Groups[0]
	if g.Count != 2 || g.State != "IO wait" || g.Frame != "net/http.(*connReader).backgroundRead" || g.Created != "net/http.(*connReader).startBackgroundRead" {
		t.Errorf("first group = %+v", g)
	}
}

func TestHexAddr(t *testing.T) {
	if got := hexAddr("127.0.0.1:8080"); got != "0100007F:1F90" {
		t.Errorf("hexAddr = %q", got)
	}
}

func TestFormatting(t *testing.T) {
	if got := commas(1234567); got != "1,234,567" {
		t.Errorf("commas = %q", got)
	}
	if got := num(math.Inf(1)); got != "∞" {
		t.Errorf("num(Inf) = %q", got)
	}
	if got := cell(Summary{Median: 12.34, Min: 10, Max: 15, N: 3}, 1); got != "12.3 [10.0–15.0]" {
		t.Errorf("cell = %q", got)
	}
	if got := ratio(1, 10); got != "0.1 (1/10)" {
		t.Errorf("ratio = %q", got)
	}
}

// Every server runs once per round, and takes every position in turn.
func TestRotation(t *testing.T) {
	for _, c := range []struct {
		n, r int
		want []int
	}{
		{3, 0, []int{0, 1, 2}},
		{3, 1, []int{1, 2, 0}},
		{3, 2, []int{2, 0, 1}},
		{3, 3, []int{0, 1, 2}},
		{2, 1, []int{1, 0}},
	} {
		if got := rotation(c.n, c.r); !slices.Equal(got, c.want) {
			t.Errorf("rotation(%d, %d) = %v, want %v", c.n, c.r, got, c.want)
		}
	}
}

// A paired ratio divides within each round, skips rounds one side lacks,
// and summarises over the rounds.
func TestPaired(t *testing.T) {
	x := series{byRound: map[int]float64{0: 10, 1: 12, 2: 30, 3: 5}}
	y := series{byRound: map[int]float64{0: 5, 1: 4, 2: 10}}
	got := paired(x, y)
	if got.N != 3 || got.Median != 3 || got.Min != 2 || got.Max != 3 {
		t.Errorf("paired = %+v, want median 3 [2–3] over 3 rounds", got)
	}
	if got := ratioCell(got); got != "3.00 [2.00–3.00]" {
		t.Errorf("ratioCell = %q", got)
	}
	if got := ratioCell(paired(x, series{byRound: map[int]float64{}})); got != "n/a" {
		t.Errorf("no common round: %q", got)
	}
}

// A metric shifted by the debounce subtracts it from every run's value.
func TestDebounceShift(t *testing.T) {
	set := &FanoutSet{N: 2}
	for round, last := range []time.Duration{15, 25} {
		set.Runs = append(set.Runs, &FanoutRun{N: 2, Opened: 2, Round: round,
			Triggers: []TriggerStats{{Last: last * time.Millisecond}}})
	}
	a := aggregate(set, dump{})
	if got := a.get(mLast, 10); got.Median != 10 || got.Min != 5 || got.Max != 15 || got.byRound[1] != 15 {
		t.Errorf("less 10 ms: %+v", got)
	}
}
