package fastpath_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/internal/fastpath"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// ended is what Options.Done saw of one stream.
type ended struct {
	owner  any
	reason error
}

// newFanout returns a fanout whose frames are "<" message ">\n" and whose
// streams report their end on the returned channel, or skips the test where
// there is no fast path.
func newFanout(t *testing.T) (*fastpath.Fanout, chan ended) {
	t.Helper()
	done := make(chan ended, 1)
	f := fastpath.New(fastpath.Options{
		KeepAlive:       time.Hour,
		WriteTimeout:    10 * time.Second,
		Prefix:          []byte("<"),
		Suffix:          []byte(">\n"),
		KeepAliveFrame:  []byte(".\n"),
		UnexpectedBytes: io.ErrUnexpectedEOF,
		Done: func(owner any, release func()) {
			sub := owner.(*listen.Subscription)
			<-sub.Closed()
			release()
			done <- ended{owner, sub.CloseReason()}
		},
	})
	if f == nil {
		t.Skip("no fast path on this system")
	}
	return f, done
}

// newHub returns a hub that is shut down when the test ends.
func newHub(t *testing.T) *hub.Hub {
	t.Helper()
	h, err := hub.New(hub.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, h.Shutdown(context.Background())) })
	return h
}

// openOnHub opens a listen for tools list changes on h.
func openOnHub(t *testing.T, h *hub.Hub) *listen.Subscription {
	t.Helper()
	req := &listen.Request{
		ID:              jsonrpc.IntID(1),
		ProtocolVersion: spec.ProtocolVersion,
		Notifications:   listen.Filter{spec.KeyToolsListChanged: true},
		Transport:       listen.Transport{Kind: "test"},
	}
	sub, err := listen.Open(context.Background(), h, req, &listen.Options{Capabilities: listen.Capabilities{ToolsListChanged: true}})
	require.NoError(t, err)
	return sub
}

// socketPair returns both ends of a loopback TCP connection.
func socketPair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	server, err = ln.Accept()
	require.NoError(t, err)
	return server, client
}

// A stream on the fanout writes the head, the acknowledgement and each
// notification in the transport's frames, and ends when its client hangs
// up: Done gets its owner once the subscription is closed, and Wait
// returns once the fanout's goroutines are gone.
func TestStreamServesUntilTheClientLeaves(t *testing.T) {
	f, done := newFanout(t)
	h := newHub(t)
	sub := openOnHub(t, h)
	server, client := socketPair(t)
	defer client.Close()

	head := []byte("head\n")
	fs := f.Stream(server, sub, &head, sub)
	require.NotNil(t, fs)
	fs.Run()
	br := bufio.NewReader(client)
	line := func() string {
		s, err := br.ReadString('\n')
		require.NoError(t, err)
		return s
	}
	assert.Equal(t, "head\n", line())
	assert.Contains(t, line(), spec.MethodAcknowledged)
	h.ToolsListChanged()
	got := line()
	assert.True(t, strings.HasPrefix(got, "<") && strings.HasSuffix(got, ">\n"), "framed: %q", got)
	assert.Contains(t, got, spec.MethodToolsListChanged)
	assert.Equal(t, 1, f.Count())

	require.NoError(t, client.Close())
	e := <-done
	assert.Same(t, sub, e.owner)
	assert.ErrorIs(t, e.reason, listen.ErrDisconnected)
	assert.ErrorIs(t, e.reason, io.EOF)
	assert.ErrorIs(t, fs.Cause(), io.EOF, "the hang-up is the stream's cause")
	require.NoError(t, f.Wait(context.Background()))
	assert.Equal(t, 0, f.Count())
}

// Cancel ends a stream by its cause, as Serve ends one by its context's:
// a drain writes the completion before the close.
func TestCancelWithShutdownCompletes(t *testing.T) {
	f, done := newFanout(t)
	h := newHub(t)
	sub := openOnHub(t, h)
	server, client := socketPair(t)
	defer client.Close()

	fs := f.Stream(server, sub, nil, sub)
	require.NotNil(t, fs)
	fs.Cancel(listen.ErrShutdown) // before Run: kept until the stream runs
	fs.Run()
	e := <-done
	assert.ErrorIs(t, e.reason, listen.ErrShutdown)
	all, err := io.ReadAll(client)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(all), "\n"), "\n")
	require.Len(t, lines, 2)
	assert.Contains(t, lines[0], spec.MethodAcknowledged)
	assert.Contains(t, lines[1], `"result"`)
	require.NoError(t, f.Wait(context.Background()))
}

// A connection that is not a socket, or a subscription whose stream blocks,
// is not taken: Stream returns nil, having registered nothing, and the
// caller serves it otherwise.
func TestStreamDeclines(t *testing.T) {
	f, _ := newFanout(t)
	sub := openOnHub(t, newHub(t))
	defer sub.Close(nil)
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	assert.Nil(t, f.Stream(a, sub, nil, nil), "not a socket")

	blocking, err := listen.Open(context.Background(), blockingSource{}, &listen.Request{
		ID: jsonrpc.IntID(2), ProtocolVersion: spec.ProtocolVersion, Notifications: listen.Filter{},
	}, nil)
	require.NoError(t, err)
	defer blocking.Close(nil)
	server, client := socketPair(t)
	defer server.Close()
	defer client.Close()
	assert.Nil(t, f.Stream(server, blocking, nil, nil), "a stream that blocks")
	assert.Equal(t, 0, f.Count())
}

// blockingSource opens streams whose Next blocks until Close: not a
// listen.NotifyStream.
type blockingSource struct{}

type blockingStream struct{ closed chan struct{} }

func (blockingSource) Open(_ context.Context, _ *listen.Request, supported listen.Filter) (listen.Filter, listen.Stream, error) {
	return supported, &blockingStream{closed: make(chan struct{})}, nil
}

func (s *blockingStream) Next() (listen.Event, error) {
	<-s.closed
	return listen.Event{}, listen.ErrClosed
}

func (s *blockingStream) Close(error) { close(s.closed) }
