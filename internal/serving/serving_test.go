package serving_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/mcplisten/listen/internal/serving"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Calls enter until Close; Wait returns when the last one left, or with
// ctx's error before.
func TestGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g serving.Group
		assert.True(t, g.Enter())
		assert.True(t, g.Enter())
		g.Close()
		g.Close()
		assert.False(t, g.Enter(), "no call enters once closed")

		ctx, cancel := context.WithCancel(t.Context())
		waited := make(chan error, 1)
		go func() { waited <- g.Wait(ctx) }()
		g.Leave()
		synctest.Wait()
		select {
		case err := <-waited:
			t.Fatalf("Wait returned %v with a call under way", err)
		default:
		}
		cancel()
		assert.ErrorIs(t, <-waited, context.Canceled)

		g.Leave()
		assert.NoError(t, g.Wait(t.Context()))
	})
}

// Drain returns Serve's result while ctx is live; once ctx ended, ctx's
// cause after the connection drained on its own, or after cut once the
// timeout passed.
func TestDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		served := make(chan error, 1)
		served <- io.EOF
		assert.ErrorIs(t, serving.Drain(t.Context(), served, time.Second, func() { t.Error("cut") }), io.EOF)

		cause := errors.New("stop")
		ctx, cancel := context.WithCancelCause(t.Context())
		cancel(cause)
		go func() {
			time.Sleep(500 * time.Millisecond)
			served <- nil
		}()
		start := time.Now()
		assert.ErrorIs(t, serving.Drain(ctx, served, time.Second, func() { t.Error("cut") }), cause)
		assert.Equal(t, 500*time.Millisecond, time.Since(start))

		cut := false
		start = time.Now()
		assert.ErrorIs(t, serving.Drain(ctx, served, time.Second, func() { cut = true; served <- nil }), cause)
		assert.True(t, cut)
		assert.Equal(t, time.Second, time.Since(start))
	})
}
