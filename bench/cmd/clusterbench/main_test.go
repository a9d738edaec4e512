package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestQuick runs the whole benchmark on small numbers: the server and
// nats-server built, redis-server started, every setup, both faults, the
// report. Without redis-server it runs on NATS only.
func TestQuick(t *testing.T) {
	brokers := "nats,redis"
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("MCPLISTEN_REDIS_REQUIRED") == "1" {
			t.Fatal("redis-server not found on PATH")
		}
		t.Log("redis-server not found on PATH (Debian's redis-server package): NATS only")
		brokers = "nats"
	}
	out := t.TempDir()
	var log bytes.Buffer
	if err := run(context.Background(), []string{"-quick", "-brokers", brokers, "-out-dir", out}, &log); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	md, err := os.ReadFile(filepath.Join(out, "cluster.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## Method", "## Faults",
		"| last stream (ms) |", "| server CPU per delivered notification (µs) |",
		"| one instance | all |", "| nats | A |", "| nats | all |",
		"| nats | broker restart | 60 / 60 | 60 | 0 | A 15–15, ",
		"| nats | one instance killed | 40 / 40 | 0 | 0 | A 10–10, B 10–10 of 10 |",
	} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("cluster.md lacks %q\n%s", want, md)
		}
	}
	for _, line := range strings.Split(string(md), "\n") {
		if strings.HasPrefix(line, "| ") && strings.Contains(line, "n/a") {
			t.Errorf("unmeasured cell: %s", line)
		}
		if strings.HasPrefix(line, "- ") && strings.Contains(line, "failed run") {
			t.Errorf("a run failed: %s", line)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "cluster.json")); err != nil {
		t.Error(err)
	}
}
