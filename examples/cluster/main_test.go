package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRun(t *testing.T) {
	var buf lockedBuffer // safe for the program's goroutines
	out = &buf
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if err := run(ctx); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	count := func(s string) int { return strings.Count(got, s+"\n") }
	for _, c := range []string{"A", "B", "C"} {
		if n := count("client " + c + " <- notifications/tools/list_changed"); n != 1 {
			t.Errorf("client %s got the tools change %d times", c, n)
		}
		if n := count("client " + c + ": stream completed"); n != 1 {
			t.Errorf("client %s stream completed %d times", c, n)
		}
	}
	for c, want := range map[string]int{"A": 1, "B": 0, "C": 1} {
		if n := count("client " + c + " <- notifications/resources/updated " + configURI); n != want {
			t.Errorf("client %s got the resource update %d times, want %d", c, n, want)
		}
	}
	if !strings.HasSuffix(got, "nats: server stopped\n") {
		t.Errorf("output does not end with the server's stop:\n%s", got)
	}
	t.Log("\n" + got)
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
