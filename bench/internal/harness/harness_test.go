package harness

import (
	"bufio"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestQuantile(t *testing.T) {
	s := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct{ q, want float64 }{{0, 1}, {0.5, 5}, {0.99, 10}, {1, 10}, {0.1, 1}, {0.11, 2}} {
		if got := quantile(s, c.q); got != c.want {
			t.Errorf("quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if got := Summarize([]float64{4, 1, 3, 2}); got.Median != 2.5 || got.Min != 1 || got.Max != 4 {
		t.Errorf("Summarize = %+v", got)
	}
}

func TestFormatting(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Commas(1234567), "1,234,567"},
		{Commas(-1234), "-1,234"},
		{Num(12.345), "12.3"},
		{Num(0.01234), "0.012"},
		{Summarize([]float64{12.34, 10, 15}).String(), "12.3 [10.0–15.0]"},
		{Summarize(nil).String(), "n/a"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
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
		{3, 3, []int{0, 1, 2}},
		{2, 1, []int{1, 0}},
	} {
		if got := rotation(c.n, c.r); !slices.Equal(got, c.want) {
			t.Errorf("rotation(%d, %d) = %v, want %v", c.n, c.r, got, c.want)
		}
	}
}

// A paired ratio divides within each round, skips rounds one side lacks
// or whose divisor is below the least, and summarises over the rounds.
func TestPaired(t *testing.T) {
	x := map[int]float64{0: 10, 1: 12, 2: 30, 3: 5}
	y := map[int]float64{0: 5, 1: 4, 2: 10, 3: 0.1}
	if got := paired(x, y, 0.5); got.String() != "3.00 [2.00–3.00]" {
		t.Errorf("paired = %v, want 3 [2–3] over 3 rounds", got)
	}
	if got := paired(x, map[int]float64{}, 0); got.String() != "n/a" {
		t.Errorf("no common round: %v", got)
	}
}

// A board counts a stream's k-th watched notification in round k, and
// the rest as extra; SSE data lines are classified from their first bytes
// however long they are.
func TestBoardAndStream(t *testing.T) {
	sse := ": keep-alive\n\ndata: {\"method\":\"notifications/tools/list_changed\",\"params\":{\"x\":\"" +
		strings.Repeat("a", 10000) + "\"}}\n\ndata: {\"method\":\"notifications/tools/list_changed\"}\n\n" +
		"data: {\"method\":\"notifications/resources/updated\"}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"
	br := bufio.NewReaderSize(strings.NewReader(sse), 4096)
	b := newBoard(msgToolsChanged, 1, 1)
	read := b.reader(0)
	var kinds []int
	for {
		d, kind, at, err := nextData(br)
		if err != nil {
			break
		}
		kinds = append(kinds, kind)
		read(d, kind, at)
	}
	if want := []int{msgToolsChanged, msgToolsChanged, msgResourceUpdated, msgEnd}; !slices.Equal(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	if err := b.wait(t.Context(), 0, time.Second); err != nil || b.extra.Load() != 1 {
		t.Errorf("round 0: %v; extra %d, want 1", err, b.extra.Load())
	}
}

// Dirs keeps an absolute -out-dir, joins a relative one to the root, and
// finds the root from the working directory when -repo is empty.
func TestDirs(t *testing.T) {
	abs := t.TempDir()
	root, out, err := Dirs("/repo", abs)
	if err != nil || root != "/repo" || out != abs {
		t.Errorf("Dirs(/repo, %s) = %s, %s, %v", abs, root, out, err)
	}
	if _, out, _ := Dirs("/repo", "bench/results"); out != filepath.Join("/repo", "bench/results") {
		t.Errorf("relative out-dir: %s", out)
	}
	root, out, err = Dirs("", "r")
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := FindRepoRoot("."); root != want || out != filepath.Join(want, "r") {
		t.Errorf("Dirs(\"\", r) = %s, %s; want the root %s", root, out, want)
	}
}
