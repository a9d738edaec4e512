package upstream

import (
	"testing"
	"time"
)

// The wait before attempt n: none for the first, then MinBackoff doubling
// up to MaxBackoff, each drawn from its upper half.
func TestBackoff(t *testing.T) {
	l := &listener{opts: listenerConfig{ListenerOptions: ListenerOptions{MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second}}}
	for _, tc := range []struct {
		n        int
		min, max time.Duration
	}{
		{0, 0, 0},
		{1, 50 * time.Millisecond, 100 * time.Millisecond},
		{2, 100 * time.Millisecond, 200 * time.Millisecond},
		{3, 200 * time.Millisecond, 400 * time.Millisecond},
		{4, 400 * time.Millisecond, 800 * time.Millisecond},
		{5, 500 * time.Millisecond, time.Second},
		{60, 500 * time.Millisecond, time.Second},
	} {
		for range 100 {
			if d := l.backoff(tc.n); d < tc.min || d > tc.max {
				t.Fatalf("backoff(%d) = %v, want in [%v, %v]", tc.n, d, tc.min, tc.max)
			}
		}
	}
}
