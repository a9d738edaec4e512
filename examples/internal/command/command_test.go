package command_test

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcplisten/listen/examples/internal/command"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A non-loopback bind needs an allow-list of host names (DNS rebinding).
func TestCheckBind(t *testing.T) {
	tests := []struct {
		addr  string
		hosts []string
		ok    bool
	}{
		{"127.0.0.1:8080", nil, true},
		{"[::1]:8080", nil, true},
		{"localhost:8080", nil, true},
		{"0.0.0.0:8080", nil, false},
		{":8080", nil, false},
		{"192.0.2.7:8080", nil, false},
		{"0.0.0.0:8080", []string{"mcp.example.com"}, true},
		{"no-port", nil, false},
	}
	for _, tt := range tests {
		err := command.CheckBind(tt.addr, tt.hosts)
		assert.Equal(t, tt.ok, err == nil, "CheckBind(%q, %v) = %v", tt.addr, tt.hosts, err)
	}
}

// The flags fill HTTPFlags; the lists are split on commas, empty items
// left out.
func TestFlags(t *testing.T) {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	f := command.Flags(fs)
	require.NoError(t, fs.Parse([]string{"-addr", "0.0.0.0:9", "-allowed-hosts", " a, ,b,", "-lifetime", "1m", "-quiet", "-max-streams", "5", "-max-uri-bytes", "65536", "-pprof", "-metrics", "-session-idle", "2m"}))
	assert.Equal(t, &command.HTTPFlags{
		Addr: "0.0.0.0:9", AllowedHosts: " a, ,b,", Lifetime: time.Minute, Quiet: true,
		MaxStreams: 5, MaxURIBytes: 65536, Pprof: true, Metrics: true, SessionIdle: 2 * time.Minute,
	}, f)
	assert.Equal(t, 2*time.Minute, f.Sessions().IdleTimeout)
	assert.Equal(t, []string{"a", "b"}, f.Hosts())
	assert.Nil(t, f.Origins())
	o := f.HTTPOptions(slog.New(slog.NewTextHandler(io.Discard, nil)))
	assert.Equal(t, 5, o.MaxStreams)
	assert.Equal(t, []string{"a", "b"}, o.AllowedHosts)
	assert.NotNil(t, o.OnOpen)
	assert.NotNil(t, o.OnClose)
}

// Serve drains through the handler's Shutdown once its context ends, and
// has stopped the HTTP server when it returns.
func TestServeDrains(t *testing.T) {
	f := command.Flags(flag.NewFlagSet("server", flag.ContinueOnError))
	f.Addr = "127.0.0.1:0"
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	drained := false
	err := f.Serve(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), http.NotFoundHandler(), nil, func(context.Context) error {
		drained = true
		return nil
	})
	require.NoError(t, err)
	assert.True(t, drained)
}
