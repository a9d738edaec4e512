//go:build linux

package fastpath_test

import (
	"bufio"
	"io"
	"net"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/spec"
)

// A plain list change the hub offers an idle stream, which its loop writes
// without the Poller, goes whole to the slow path when the socket is full:
// the client gets it after what filled the socket, and the stream goes
// back to its loop for the next one.
func TestOfferedChangeToAFullSocketTakesTheSlowPath(t *testing.T) {
	f, done := newFanout(t)
	h := newHub(t)
	sub := openOnHub(t, h)
	server, client, fill := unixPair(t)
	defer client.Close()

	fs := f.Stream(server, sub, nil, sub)
	require.NotNil(t, fs)
	fs.Run()
	br := bufio.NewReader(client)
	ack, err := br.ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, ack, spec.MethodAcknowledged)
	waitFor(t, "an idle stream", fs.Idle)

	// Fill the socket through another descriptor of it: a stream socket
	// of this family takes nothing more until its peer reads.
	filled := 0
	for _, size := range []int{4096, 1} {
		chunk := make([]byte, size)
		for {
			n, err := syscall.Write(fill, chunk)
			if err == syscall.EAGAIN {
				break
			}
			require.NoError(t, err)
			filled += n
		}
	}
	require.NoError(t, syscall.Close(fill))
	trips, _ := f.Trips()
	require.Zero(t, trips)

	require.Equal(t, 1, h.ToolsListChanged().Matched)
	waitFor(t, "the slow path", func() bool { trips, _ := f.Trips(); return trips == 1 })
	_, err = io.ReadFull(br, make([]byte, filled))
	require.NoError(t, err)
	want := `<{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1}}}>` + "\n"
	got, err := br.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, want, got, "the offered change, whole, after the filler")

	// Back on its loop, the stream takes the next one.
	waitFor(t, "an idle stream", fs.Idle)
	h.ToolsListChanged()
	got, err = br.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, want, got)

	require.NoError(t, client.Close())
	e := <-done
	assert.ErrorIs(t, e.reason, listen.ErrDisconnected)
}

// unixPair returns both ends of a connected Unix stream socket, the
// server's with the smallest send buffer, and a non-blocking descriptor of
// the server's end to fill it through.
func unixPair(t *testing.T) (server, client net.Conn, fill int) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	require.NoError(t, syscall.SetsockoptInt(fds[0], syscall.SOL_SOCKET, syscall.SO_SNDBUF, 1))
	fill, err = syscall.Dup(fds[0])
	require.NoError(t, err)
	require.NoError(t, syscall.SetNonblock(fill, true))
	conn := func(fd int, name string) net.Conn {
		f := os.NewFile(uintptr(fd), name)
		defer f.Close()
		c, err := net.FileConn(f)
		require.NoError(t, err)
		return c
	}
	return conn(fds[0], "server"), conn(fds[1], "client"), fill
}

// waitFor waits until cond holds (what names it); each wait here is for
// another goroutine's next step, so the bound only catches a hang.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		require.True(t, time.Now().Before(deadline), "waited in vain for %s", what)
		runtime.Gosched()
	}
}

// An offered list change whose write fails (not for a full socket: the
// client shut down its reading, so the socket refuses every write with
// EPIPE, and nothing tells the hang-up watcher) ends the stream at once as
// Disconnected with that error, without going to the slow path.
func TestOfferedChangeWhoseWriteFailsEndsTheStream(t *testing.T) {
	f, done := newFanout(t)
	h := newHub(t)
	sub := openOnHub(t, h)
	server, client, fill := unixPair(t)
	require.NoError(t, syscall.Close(fill))
	defer client.Close()

	fs := f.Stream(server, sub, nil, sub)
	require.NotNil(t, fs)
	fs.Run()
	ack, err := bufio.NewReader(client).ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, ack, spec.MethodAcknowledged)
	waitFor(t, "an idle stream", fs.Idle)

	require.NoError(t, client.(*net.UnixConn).CloseRead())
	require.Equal(t, 1, h.ToolsListChanged().Matched)
	e := <-done
	assert.ErrorIs(t, e.reason, listen.ErrDisconnected)
	assert.ErrorIs(t, e.reason, syscall.EPIPE)
	trips, _ := f.Trips()
	assert.Zero(t, trips, "no slow path")
}
