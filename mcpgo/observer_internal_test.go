package mcpgo

import (
	"context"
	"runtime"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestObserverNeverDrops: concurrent broadcasters against an observer with
// a 4-slot queue and a slow consumer: every broadcast is handled, in each
// broadcaster's order. (A session whose channel merely has a buffer, as
// mcp-go's own have, drops most of them.)
func TestObserverNeverDrops(t *testing.T) {
	const senders, each = 4, 500
	var mu sync.Mutex
	got := make(map[float64][]float64) // sender -> sequence numbers seen
	o := newObserver("test-observer", 4, func(n mcp.JSONRPCNotification) {
		runtime.Gosched()
		mu.Lock()
		defer mu.Unlock()
		s := n.Params.AdditionalFields["sender"].(float64)
		got[s] = append(got[s], n.Params.AdditionalFields["seq"].(float64))
	})
	o.start()
	s := server.NewMCPServer("t", "1")
	require.NoError(t, s.RegisterSession(context.Background(), o))

	var wg sync.WaitGroup
	for i := range senders {
		wg.Go(func() {
			for j := range each {
				s.SendNotificationToAllClients("test/event", map[string]any{"sender": float64(i), "seq": float64(j)})
			}
		})
	}
	wg.Wait()
	o.flush()
	s.UnregisterSession(context.Background(), o.id)
	o.stop()

	for i := range senders {
		require.Len(t, got[float64(i)], each, "sender %d", i)
		for j, seq := range got[float64(i)] {
			assert.Equal(t, float64(j), seq)
		}
	}
	// After stop, a broadcast racing the end does not block: mcp-go's
	// non-blocking send finds room on the channel handed out (a nil or
	// full one would make it drop, or block a blocking sender).
	select {
	case o.NotificationChannel() <- mcp.JSONRPCNotification{}:
	default:
		t.Fatal("the channel NotificationChannel returns after stop has no room")
	}
}
