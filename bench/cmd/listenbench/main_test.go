package main

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestQuick runs the whole pipeline on small numbers: the three servers
// built and started, every scenario, the report and the chart.
func TestQuick(t *testing.T) {
	out := t.TempDir()
	var log bytes.Buffer
	start := time.Now()
	if err := run(context.Background(), []string{"-quick", "-out-dir", out}, &log); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	t.Logf("quick run took %v", time.Since(start).Round(time.Millisecond))

	md, err := os.ReadFile(filepath.Join(out, "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"go run ./bench/cmd/listenbench -quick -out-dir",
		"## Machine", "## Headline", "## Goals", "## Results", "## Stalled client",
		"ours (examples/server)", "floor (bench/cmd/floorserver)", "go-sdk v1.8.0 (bench/cmd/gosdkserver)",
		"| ours | floor | go-sdk | ours ÷ floor | ours ÷ go-sdk | ours ÷ (go-sdk − 10ms) |",
		"Every fan-out figure is the median of **1 run** per server and N",
		"| Fan-out latency, last stream (ms) | 20 |",
		"| RSS per open stream, after a settle (KB) | 20 |",
		"| Server CPU per delivered notification (µs; CPU-time clock, trigger → last delivery) | 20 |",
		"What happened to the stalled stream",
		"-byte notifications (URI of 1,038 bytes)",
	} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("benchmarks.md lacks %q", want)
		}
	}
	// Every fan-out cell of the small run was measured, for every server,
	// with its ratios.
	for _, line := range strings.Split(string(md), "\n") {
		if strings.HasPrefix(line, "| Fan-out latency") && strings.Contains(line, "n/a") {
			t.Errorf("unmeasured fan-out cell: %s", line)
		}
	}
	if strings.Contains(log.String(), "error:") || strings.Contains(log.String(), "problem:") {
		t.Errorf("the run reported problems:\n%s", log.String())
	}

	f, err := os.Open(filepath.Join(out, "fanout.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("fanout.png: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 800 || b.Dy() < 300 {
		t.Errorf("fanout.png is %v", b)
	}
	if _, err := os.Stat(filepath.Join(out, "benchmarks.json")); err != nil {
		t.Error(err)
	}
}

func TestParseInts(t *testing.T) {
	got, err := parseInts("100, 1_000,10000")
	if err != nil || len(got) != 3 || got[1] != 1000 {
		t.Fatalf("parseInts: %v %v", got, err)
	}
	for _, bad := range []string{"", "0", "x", "10,-1"} {
		if _, err := parseInts(bad); err == nil {
			t.Errorf("parseInts(%q) succeeded", bad)
		}
	}
}
