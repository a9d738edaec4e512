package testkit

import (
	"testing"
	"time"
)

// Recv returns the next value from c, the way a test waits for something
// that should come: it fails t (t.Fatal, so call it on the test's
// goroutine) if c is closed, or if nothing comes within d, so that a
// missing message fails the test instead of hanging it.
func Recv[T any](t testing.TB, c <-chan T, d time.Duration) T {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case v, ok := <-c:
		if !ok {
			t.Fatal("testkit.Recv: the channel was closed")
		}
		return v
	case <-timer.C:
		t.Fatalf("testkit.Recv: nothing within %v", d)
		var zero T
		return zero
	}
}
