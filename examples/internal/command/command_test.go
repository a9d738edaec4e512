package command_test

import (
	"bufio"
	"context"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
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
	require.NoError(t, fs.Parse([]string{"-addr", "0.0.0.0:9", "-allowed-hosts", " a, ,b,", "-lifetime", "1m", "-quiet", "-max-streams", "5", "-max-uri-bytes", "65536", "-pprof", "-metrics", "-session-idle", "2m", "-drain", "20s"}))
	assert.Equal(t, &command.HTTPFlags{
		Addr: "0.0.0.0:9", AllowedHosts: " a, ,b,", Lifetime: time.Minute, Quiet: true,
		MaxStreams: 5, MaxURIBytes: 65536, Pprof: true, Metrics: true, SessionIdle: 2 * time.Minute,
		Drain: 20 * time.Second,
	}, f)
	assert.Equal(t, 2*time.Minute, f.Sessions().IdleTimeout)
	assert.Equal(t, []string{"a", "b"}, f.Hosts())
	assert.Nil(t, f.Origins())
	o := f.HTTPOptions()
	assert.Equal(t, []string{"a", "b"}, o.AllowedHosts)
	lo := f.ListenOptions(slog.New(slog.NewTextHandler(io.Discard, nil)))
	assert.Equal(t, 5, lo.MaxStreams)
	assert.Equal(t, 65536, lo.MaxURIBytes)
	assert.Equal(t, 20*time.Second, lo.DrainWindow)
	assert.NotNil(t, lo.OnOpen)
	assert.NotNil(t, lo.OnClose)
}

// The drain gets -drain plus a margin, enough that the library keeps the
// whole window (it shortens it to 90% of the time Shutdown is given).
func TestDrainDeadline(t *testing.T) {
	for _, drain := range []time.Duration{0, time.Second, 20 * time.Second, 45 * time.Second, 10 * time.Minute} {
		f := &command.HTTPFlags{Drain: drain}
		d := f.DrainDeadline()
		assert.GreaterOrEqual(t, d, drain+command.DrainTimeout, "-drain %v", drain)
		assert.GreaterOrEqual(t, d*9/10, drain, "-drain %v: the window is not cut", drain)
	}
}

// Serve answers /readyz 200 until its context ends, then drains through
// the handler's Shutdown, /readyz answering 503 meanwhile, and has stopped
// the HTTP server when it returns.
func TestServeDrains(t *testing.T) {
	f := command.Flags(flag.NewFlagSet("server", flag.ContinueOnError))
	f.Addr = "127.0.0.1:0"
	// Serve prints its address on standard output.
	r, w, err := os.Pipe()
	require.NoError(t, err)
	stdout := os.Stdout
	os.Stdout = w
	t.Cleanup(func() { os.Stdout = stdout; r.Close(); w.Close() })

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	ready := func(url string) int {
		resp, err := client.Get(url)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	var readyz string
	drained := make(chan int, 1)
	served := make(chan error, 1)
	go func() {
		served <- f.Serve(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), http.NotFoundHandler(), nil, func(context.Context) error {
			drained <- ready(readyz)
			return nil
		})
	}()
	line, err := bufio.NewReader(r).ReadString('\n')
	require.NoError(t, err)
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on http://")
	require.True(t, ok, line)
	readyz = "http://" + strings.TrimSuffix(addr, "/mcp") + "/readyz"
	assert.Equal(t, http.StatusOK, ready(readyz))

	cancel()
	assert.Equal(t, http.StatusServiceUnavailable, <-drained, "not ready while draining")
	require.NoError(t, <-served)
}
