package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestQuick runs the whole pipeline on small numbers: the four servers
// built and started, the fan-out, the report.
func TestQuick(t *testing.T) {
	out := t.TempDir()
	var log bytes.Buffer
	if err := run(context.Background(), []string{"-quick", "-out-dir", out}, &log); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	md, err := os.ReadFile(filepath.Join(out, "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"go run ./bench/cmd/listenbench -quick -out-dir", "## Method", "## N = 20", "## Goals",
		"listen, no SDK (bench/cmd/listenserver)", "ours, behind the go-sdk (examples/server)", "floor (bench/cmd/floorserver)", "go-sdk v1.8.0 (bench/cmd/gosdkserver)",
		"| Measure | listen | ours | floor | go-sdk | listen ÷ floor | ours ÷ floor | ours ÷ go-sdk |",
		"| Server CPU per delivered notification (µs) | ≤ 1.10 × the floor | 20 |",
		"| Fan-out of one tools change, last stream (ms) |",
		"| RSS per idle open stream, after a settle (KB) |",
		"| Server CPU per delivered notification (µs) |",
	} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("benchmarks.md lacks %q", want)
		}
	}
	// Every cell of the small run was measured, for every server.
	for _, line := range strings.Split(string(md), "\n") {
		if strings.HasPrefix(line, "| ") && strings.Contains(line, "n/a") && !strings.Contains(line, "Goroutines") {
			t.Errorf("unmeasured cell: %s", line)
		}
	}
	if strings.Contains(log.String(), "error:") || strings.Contains(log.String(), "problem:") {
		t.Errorf("the run reported problems:\n%s", log.String())
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
