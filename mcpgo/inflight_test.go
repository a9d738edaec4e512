package mcpgo_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/mcpgo"
	"github.com/mcplisten/listen/stdio"
)

// waitLog is a slog.Handler that tells when a record with its message is
// logged.
type waitLog struct {
	msg  string
	seen chan struct{}
}

func (w waitLog) Enabled(context.Context, slog.Level) bool { return true }
func (w waitLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message == w.msg {
		select {
		case w.seen <- struct{}{}:
		default:
		}
	}
	return nil
}
func (w waitLog) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w waitLog) WithGroup(string) slog.Handler      { return w }

// mcp-go serves every request on a goroutine of its own, reading ahead as
// far as the connection lets it: the connection hands it requests adding up
// to at most MaxLineBytes (as the go-sdk adapter's), so with 250 KiB, two
// tool calls of 100 KiB run and a third is not read until one is answered.
// Before, MaxInFlight (64) requests ran at once whatever their size: 64
// lines of 1 MB raised the server's peak RSS by 40 MiB, against 18 behind
// the go-sdk adapter.
func TestStdioBytesInFlightHoldForMCPGo(t *testing.T) {
	srv := plainServer()
	entered := make(chan struct{}, 8)
	release := make(chan struct{})
	srv.AddTool(mcpTool("slow"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		entered <- struct{}{}
		<-release
		return mcp.NewToolResultText("done"), nil
	})
	waiting := waitLog{msg: "stdio: reading waits for bytes in flight to be answered", seen: make(chan struct{}, 1)}
	x, err := mcpgo.NewStdio(srv, mcpgo.StdioOptions{
		Options: mcpgo.Options{Listen: listen.Options{Logger: slog.New(waiting)}},
		Stdio:   stdio.Options{MaxLineBytes: 250 << 10},
	})
	require.NoError(t, err)
	c := startStdio(t, context.Background(), x)

	sent := make(chan struct{})
	go func() { // the client's writes wait while the connection does not read
		defer close(sent)
		for i := range 3 {
			line := request(fmt.Sprint(i+1), "tools/call", "2026-07-28", map[string]any{
				"name": "slow", "arguments": map[string]any{"pad": strings.Repeat("x", 100<<10)}})
			_, _ = c.in.Write(append(line, '\n'))
		}
	}()
	<-entered
	<-entered
	select {
	case <-entered:
		t.Fatal("a third call of 100 KiB runs beside two, over 250 KiB in flight")
	case <-waiting.seen:
	}
	assert.Equal(t, 2, x.Stats().InFlight)
	close(release)
	<-entered // the third, once one was answered
	for range 3 {
		m := c.out.next()
		require.NotNil(t, m.Result, "%s", m.raw)
	}
	<-sent
	_, err = c.end()
	require.NoError(t, err)
	require.NoError(t, x.Shutdown(context.Background()))
}
