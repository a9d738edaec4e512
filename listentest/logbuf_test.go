package listentest_test

import (
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/listentest"
)

// A LogBuffer keeps what its Logger writes at its level and above, from
// many goroutines at once.
func TestLogBuffer(t *testing.T) {
	var logs listentest.LogBuffer
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

// AckFor keeps the kinds whose capability is advertised, and the uris only
// with resources.subscribe.
func TestAckFor(t *testing.T) {
	uris := []any{"file:///a"}
	for _, c := range []struct{ caps, want string }{
		{`{}`, `{}`},
		{`{"tools":{"listChanged":true},"prompts":{"listChanged":false},"logging":{}}`, `{"toolsListChanged":true}`},
		{`{"prompts":{"listChanged":true},"resources":{"listChanged":true}}`, `{"promptsListChanged":true,"resourcesListChanged":true}`},
		{`{"resources":{"subscribe":true}}`, `{"resourceSubscriptions":["file:///a"]}`},
		{`{"tools":{"listChanged":"yes"},"resources":true}`, `{}`},
	} {
		var caps map[string]any
		require.NoError(t, json.Unmarshal([]byte(c.caps), &caps))
		got, err := json.Marshal(listentest.AckFor(caps, uris))
		require.NoError(t, err)
		assert.JSONEq(t, c.want, string(got), "%s", c.caps)
	}
}
