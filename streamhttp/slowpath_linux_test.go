package streamhttp_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/streamhttp"
)

// unixBufListener sets the send buffer of every accepted Unix connection.
type unixBufListener struct {
	net.Listener
	send int
}

func (l unixBufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if uc, ok := c.(*net.UnixConn); ok && err == nil {
		_ = uc.SetWriteBuffer(l.send)
	}
	return c, err
}

// processCPU returns the CPU time the process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSlowPathEntry publishes one tools list change with a 6 KiB
// param to one hub stream on the fast path, over a Unix socket, and waits
// until its client has read it: one op is one event. "plain": the server's
// send buffer (1 MiB) holds the event, which goes out in one write on the
// stream's loop. "full": it holds less (the kernel's minimum, about 4.5
// KiB), so every event fills the socket, leaves the loop for the slow path
// and comes back once the client has read it: what a stream that hovers at
// a full window pays per event.
//
//	go test -run '^$' -bench SlowPathEntry -benchmem -count 5 ./streamhttp
func BenchmarkSlowPathEntry(b *testing.B) {
	pad := strings.Repeat("x", 6<<10)
	for _, c := range []struct {
		name string
		buf  int
	}{{"plain", 1 << 20}, {"full", 1}} {
		b.Run(c.name, func(b *testing.B) {
			hb, err := hub.New(hub.Options{})
			if err != nil {
				b.Fatal(err)
			}
			h := newHandler(b, hb, config{KeepAlive: failsafe, Listen: listen.Options{Capabilities: caps()}})
			if !streamhttp.HasFastPath(h) {
				b.Skip("no fast path")
			}
			sock := filepath.Join(b.TempDir(), "s")
			l, err := net.Listen("unix", sock)
			if err != nil {
				b.Fatal(err)
			}
			ts := httptest.NewUnstartedServer(h)
			ts.Listener = unixBufListener{Listener: l, send: c.buf}
			ts.Start()
			conn, err := net.Dial("unix", sock)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() {
				conn.Close()
				_ = h.Shutdown(b.Context())
				ts.Close()
			})
			body := listenBody(`"bench"`, `{"toolsListChanged":true}`)
			fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"+
				"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"+
				"Mcp-Method: subscriptions/listen\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			br := bufio.NewReaderSize(conn, 1<<20)
			if line, err := br.ReadSlice('\n'); err != nil || !strings.HasPrefix(string(line), "HTTP/1.1 200") {
				b.Fatalf("%q %v", line, err)
			}
			// The rest of the head and the acknowledgement end with an
			// empty line each.
			for blank := 0; blank < 2; {
				line, err := br.ReadSlice('\n')
				if err != nil {
					b.Fatal(err)
				}
				if len(line) <= 2 {
					blank++
				}
			}
			if streamhttp.FastStreams(h) != 1 {
				b.Fatal("not on the fast path")
			}
			event := listen.ToolsListChanged().WithParams(map[string]any{"pad": pad})
			// One event, to learn the size of its frame.
			if _, err := hb.Publish(event); err != nil {
				b.Fatal(err)
			}
			size := 0
			for {
				line, err := br.ReadSlice('\n')
				if err != nil {
					b.Fatal(err)
				}
				size += len(line)
				if len(line) == 1 {
					break
				}
			}
			frame := make([]byte, size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			cpu0 := processCPU(b)
			for b.Loop() {
				if _, err := hb.Publish(event); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(br, frame); err != nil {
					b.Fatal(err)
				}
			}
			// The process's CPU time (server and client) per event: less
			// sensitive than ns/op to what else runs on the machine.
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// A stream that goes to the slow path and back again and again (a client
// that keeps its window nearly full) registers its socket with Go's poller
// once, on its first trip, not once per trip.
func TestSlowPathRegistersOnce(t *testing.T) {
	const rounds = 40
	pad := strings.Repeat("x", 32<<10)
	e := newHubEnv(t, false, hub.Options{MaxBuffer: 2 * rounds}, config{}, 16<<10)
	slow := e.dial(t, `"slow"`, `{"toolsListChanged":true}`, "", 16<<10).open(t)
	// Bursts that each fill the socket, read once published. Two may share
	// a trip (the next burst comes before the slow path lets go): go on
	// until there were four.
	for burst := 0; burst < 40; burst++ {
		for i := range rounds {
			_, err := e.hub.Publish(listen.ToolsListChanged().WithParams(map[string]any{"seq": i, "burst": burst, "pad": pad}))
			require.NoError(t, err)
		}
		for i := range rounds {
			require.True(t, strings.HasSuffix(slow.data(t), fmt.Sprintf(`"seq":%d}}`, i)), "in order")
		}
		if trips, _ := streamhttp.SlowPathTrips(e.h); trips >= 4 {
			break
		}
	}
	trips, registrations := streamhttp.SlowPathTrips(e.h)
	require.GreaterOrEqual(t, trips, uint64(4), "trips to the slow path")
	assert.Equal(t, uint64(1), registrations, "registrations with the poller")
}
