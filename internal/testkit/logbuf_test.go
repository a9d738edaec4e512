package testkit_test

import (
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/internal/testkit"
)

// A LogBuffer keeps what its Logger writes at its level and above, from
// many goroutines at once.
func TestLogBuffer(t *testing.T) {
	var logs testkit.LogBuffer
	log := logs.Logger(slog.LevelWarn)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			log.Warn("kept")
			log.Info("dropped")
		})
	}
	wg.Wait()
	assert.Equal(t, 8, strings.Count(logs.String(), "msg=kept"))
	assert.NotContains(t, logs.String(), "dropped")
	n, err := logs.Write([]byte("raw\n"))
	require.NoError(t, err)
	assert.Equal(t, 4, n)
	assert.True(t, strings.HasSuffix(logs.String(), "raw\n"))
}
