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

// TestSmall runs both measurements on small numbers: the delay of every
// kind, the two mcp-go servers built and started for a fan-out to 20
// streams, and the report.
func TestSmall(t *testing.T) {
	out := t.TempDir()
	var log bytes.Buffer
	if err := run(context.Background(), []string{"-n", "20", "-runs", "1", "-triggers", "2", "-changes", "10", "-gosdk=false", "-out-dir", out}, &log); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	md, err := os.ReadFile(filepath.Join(out, "mcpgo.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## Delay from the mcp-go call to the notification read by an HTTP client",
		"| mcpgo: AddTool/DeleteTools |", "| mcpgo: SendNotificationToAllClients(resources/updated) |",
		"| plain mcp-go: AddTool/DeleteTools |",
		"## Fan-out to 20 streams", "| Measure | mcpgo | mcp-go | mcpgo ÷ mcp-go |",
		"| Fan-out of one tools change, last stream (ms) |", "| Server CPU per delivered notification (µs) |",
	} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("mcpgo.md lacks %q", want)
		}
	}
	for _, line := range strings.Split(string(md), "\n") {
		if strings.HasPrefix(line, "| Fan-out of") && strings.Contains(line, "n/a") {
			t.Errorf("unmeasured cell: %s", line)
		}
	}
	if strings.Contains(string(md), "\n- mcp") {
		t.Errorf("the run reported problems:\n%s", md)
	}
}

// A positional argument is refused before anything runs.
func TestPositionalArgumentRefused(t *testing.T) {
	var log bytes.Buffer
	err := run(context.Background(), []string{"-runs", "1", "10000"}, &log)
	if err == nil || !strings.Contains(err.Error(), "unexpected arguments") {
		t.Fatalf("run with a positional argument: %v, want unexpected arguments", err)
	}
}
