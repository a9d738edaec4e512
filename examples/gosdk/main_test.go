package main

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Two go-sdk v1.8.0 clients on one endpoint, one on 2025-11-25 (its session,
// resources/subscribe) and one on 2026-07-28 (a listen): add_note reaches
// both, once.
func TestBothErasGetTheNote(t *testing.T) {
	h, err := newHandler()
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	defer ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	updated := make(chan string, 10)
	var sessions []*mcp.ClientSession
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		client := mcp.NewClient(&mcp.Implementation{Name: version, Version: "0"}, &mcp.ClientOptions{
			ResourceUpdatedHandler: func(context.Context, *mcp.ResourceUpdatedNotificationRequest) { updated <- version },
		})
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL, MaxRetries: -1},
			&mcp.ClientSessionOptions{ProtocolVersion: version})
		require.NoError(t, err)
		defer cs.Close()
		require.NoError(t, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: todoURI}))
		sessions = append(sessions, cs)
	}
	// The 2026-07-28 client's Subscribe returns before its listen is open.
	require.Eventually(t, func() bool { return h.Server().Stats().Active == 1 }, 10*time.Second, 5*time.Millisecond)

	_, err = sessions[0].CallTool(ctx, &mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{"text": "buy milk"}})
	require.NoError(t, err)
	got := map[string]int{}
	for range 2 {
		select {
		case v := <-updated:
			got[v]++
		case <-ctx.Done():
			t.Fatalf("got %v", got)
		}
	}
	require.Equal(t, map[string]int{"2025-11-25": 1, "2026-07-28": 1}, got)
	require.NoError(t, h.Shutdown(ctx))
}
