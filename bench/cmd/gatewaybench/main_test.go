package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" { // the client process of TestQuick
		if err := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// TestQuick runs every scenario on small numbers and checks the report
// says every figure holds.
func TestQuick(t *testing.T) {
	var out, log bytes.Buffer
	if err := run([]string{"-n", "60", "-runs", "1", "-burst", "30", "-keepalive", "500ms"}, nil, &out, &log); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	report := out.String()
	t.Log(report)
	for _, want := range []string{"## Upstream streams at rest", "## Fan-out", "reset (proxy cut)", "silent drop (proxy stalled)", "## A burst", "released",
		"Notifications outside their listen's filter over the whole run: 0."} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	// Correctness, not timing: every hint where expected, nothing else.
	for _, row := range []string{"reset (proxy cut)", "silent drop (proxy stalled)"} {
		for _, line := range strings.Split(report, "\n") {
			if strings.HasPrefix(line, "| "+row) && !strings.HasSuffix(line, ": holds | 0 |") {
				t.Errorf("hints not as expected: %s", line)
			}
		}
	}
}
