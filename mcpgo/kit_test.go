package mcpgo_test

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// logBuffer collects what a logger writes, safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Logger returns a logger writing text records of level and above to l.
func (l *logBuffer) Logger(level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: level}))
}

// ackFor is the notifications filter of the acknowledgement a listen asking
// for every kind (with resourceSubscriptions uris) gets from a server whose
// server/discover advertises caps: each kind whose capability is true.
func ackFor(caps map[string]any, uris []any) map[string]any {
	flag := func(group, name string) bool {
		g, _ := caps[group].(map[string]any)
		b, _ := g[name].(bool)
		return b
	}
	want := map[string]any{}
	for key, c := range map[string][2]string{
		"toolsListChanged":     {"tools", "listChanged"},
		"promptsListChanged":   {"prompts", "listChanged"},
		"resourcesListChanged": {"resources", "listChanged"},
	} {
		if flag(c[0], c[1]) {
			want[key] = true
		}
	}
	if flag("resources", "subscribe") {
		want["resourceSubscriptions"] = uris
	}
	return want
}

// recv returns the next value of c, failing t if c is closed or nothing
// comes within failsafe (so that a missing message fails the test instead
// of hanging it).
func recv[T any](t testing.TB, c <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(failsafe)
	defer timer.Stop()
	select {
	case v, ok := <-c:
		if !ok {
			t.Fatalf("closed while waiting for %s", what)
		}
		return v
	case <-timer.C:
		t.Fatalf("no %s within %v", what, failsafe)
	}
	var zero T
	return zero
}
