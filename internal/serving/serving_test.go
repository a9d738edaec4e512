package serving_test

import (
	"context"
	"testing"
	"testing/synctest"

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
