package harness

import (
	"math"
	"strings"
	"testing"
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
	if got := cell(Summary{Median: 12.34, Min: 10, Max: 15, N: 3}, 1); got != "12.3 (10.0–15.0)" {
		t.Errorf("cell = %q", got)
	}
	if got := ratio(1, 10); got != "0.1 (1/10)" {
		t.Errorf("ratio = %q", got)
	}
}
