package mcpgo_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/mcpgo"
)

// TestHTTPBurstIsNotLostSilently: 2,000 back-to-back broadcasts of distinct
// resources/updated to a reading folder listen are delivered whole, in
// order, when the hub's queue can hold them; with the default queue (100,
// drop-oldest), what arrives plus what the hub reports dropped is the
// whole burst. mcp-go alone drops most of it and tells only OnError
// (TestPlainMCPGoHTTPDropsBursts).
func TestHTTPBurstIsNotLostSilently(t *testing.T) {
	const burst = 2000
	for _, c := range []struct {
		name      string
		maxBuffer int
	}{{"queue holds the burst", burst}, {"default queue", 0}} {
		t.Run(c.name, func(t *testing.T) {
			srv := plainServer()
			var overflowed atomic.Int64 // the hub's overflow reports
			hb, err := hub.New(hub.Options{MaxBuffer: c.maxBuffer, OnOverflow: func(i hub.OverflowInfo) { overflowed.Add(int64(i.Dropped)) }})
			require.NoError(t, err)
			h, err := mcpgo.NewHandler(srv, mcpgo.HandlerOptions{Options: mcpgo.Options{Hub: hb, Listen: listen.Options{SubResources: &listen.SubResources{}}}})
			require.NoError(t, err)
			ts := httptest.NewServer(h)
			defer ts.Close()

			s := openListen(t, ts.URL, "1", map[string]any{"resourceSubscriptions": []any{"test://burst/"}})
			for i := range burst {
				updated(srv, fmt.Sprintf("test://burst/%d", i))
			}
			require.NoError(t, h.Shutdown(context.Background())) // what is queued first, then the completion
			var got []string
			for _, m := range s.rest() {
				if m.Method == "notifications/resources/updated" {
					got = append(got, m.Params.URI)
				}
			}
			s.resp.Body.Close()
			assert.Equal(t, uint64(burst), h.Bridge().Stats().ResourceUpdates, "every broadcast reached the hub")
			dropped := int(overflowed.Load())
			assert.Equal(t, burst, len(got)+dropped, "received %d, reported dropped %d", len(got), dropped)
			assert.Equal(t, uint64(dropped), hb.Stats().Dropped)
			if c.maxBuffer >= burst {
				assert.Zero(t, dropped)
			}
			// In order, each once: the newest under drop-oldest.
			for i := 1; i < len(got); i++ {
				var a, b int
				fmt.Sscanf(got[i-1], "test://burst/%d", &a)
				fmt.Sscanf(got[i], "test://burst/%d", &b)
				require.Less(t, a, b, "in order")
			}
			t.Logf("received %d of %d, the hub reported %d dropped", len(got), burst, dropped)
		})
	}
}
