package child_test

import (
	"bufio"
	"io"
	"os/exec"
	"testing"

	"github.com/mcplisten/listen/bench/internal/child"
)

// The child reads its standard input and writes its standard output
// through the pipes; closing In ends it. A missing executable fails Start.
func TestStart(t *testing.T) {
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat")
	}
	p, err := child.Start(cat)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(p.In, "ready\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(p.Out).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Errorf("read %q, %v", line, err)
	}
	_ = p.In.Close()
	if err := p.Cmd.Wait(); err != nil {
		t.Errorf("Wait: %v", err)
	}
	if _, err := child.Start("/nonexistent/server"); err == nil {
		t.Error("Start of a missing executable succeeded")
	}
}
