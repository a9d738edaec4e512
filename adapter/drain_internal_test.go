package adapter

import (
	"context"
	"errors"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

// drain returns Serve's result while ctx is live; once ctx ended, ctx's
// cause after the connection drained on its own, or after cut once the
// timeout passed.
func TestDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		served := make(chan error, 1)
		served <- io.EOF
		assert.ErrorIs(t, drain(t.Context(), served, time.Second, func() { t.Error("cut") }), io.EOF)

		cause := errors.New("stop")
		ctx, cancel := context.WithCancelCause(t.Context())
		cancel(cause)
		go func() {
			time.Sleep(500 * time.Millisecond)
			served <- nil
		}()
		start := time.Now()
		assert.ErrorIs(t, drain(ctx, served, time.Second, func() { t.Error("cut") }), cause)
		assert.Equal(t, 500*time.Millisecond, time.Since(start))

		cut := false
		start = time.Now()
		assert.ErrorIs(t, drain(ctx, served, time.Second, func() { cut = true; served <- nil }), cause)
		assert.True(t, cut)
		assert.Equal(t, time.Second, time.Since(start))
	})
}
