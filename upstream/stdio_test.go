package upstream_test

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/internal/testkit"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/stdio"
	"github.com/mcplisten/listen/upstream"
)

// stdioServer is this library's stdio server on a hub, reached over pipes:
// each Dial serves one new connection, which kill ends from the server's
// side (as a crash would).
type stdioServer struct {
	hub   *hub.Hub
	srv   *stdio.Server
	wg    sync.WaitGroup
	mu    sync.Mutex
	kills []func()
	dials int
}

func newStdioServer(t *testing.T) *stdioServer {
	h, err := hub.New(hub.Options{})
	require.NoError(t, err)
	srv, err := stdio.New(listen.NewServer(h, listen.Options{Capabilities: all}), stdio.Options{})
	require.NoError(t, err)
	s := &stdioServer{hub: h, srv: srv}
	t.Cleanup(func() {
		s.kill()
		s.wg.Wait()
	})
	return s
}

func (s *stdioServer) dial(context.Context) (io.ReadCloser, io.WriteCloser, error) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s.wg.Add(1)
	go func() { // ends when its input is closed
		defer s.wg.Done()
		_ = s.srv.Serve(context.Background(), inR, outW)
		outW.Close()
	}()
	s.mu.Lock()
	s.dials++
	s.kills = append(s.kills, func() { inR.Close(); outW.Close() })
	s.mu.Unlock()
	return outR, inW, nil
}

// kill ends every connection from the server's side.
func (s *stdioServer) kill() {
	s.mu.Lock()
	kills := s.kills
	s.kills = nil
	s.mu.Unlock()
	for _, k := range kills {
		k()
	}
}

// Two listens share one connection, each gets its own messages, and
// closing one cancels it upstream without disturbing the other.
func TestStdioListens(t *testing.T) {
	s := newStdioServer(t)
	tr := &upstream.Stdio{Dial: s.dial}
	defer tr.Close()
	ctx := context.Background()
	tools, err := upstream.Open(ctx, tr, listen.Filter{spec.KeyToolsListChanged: true}, upstream.OpenOptions{})
	require.NoError(t, err)
	defer tools.Close()
	res, err := upstream.Open(ctx, tr, listen.Filter{spec.KeyResourceSubscriptions: []any{"file:///a"}}, upstream.OpenOptions{})
	require.NoError(t, err)
	assert.Equal(t, listen.Filter{spec.KeyResourceSubscriptions: []any{"file:///a"}}, res.Accepted())

	_, err = s.hub.ResourceUpdated("file:///a")
	require.NoError(t, err)
	s.hub.ToolsListChanged()
	n, err := res.Next()
	require.NoError(t, err)
	assert.Equal(t, "file:///a", n.URI)
	n, err = tools.Next()
	require.NoError(t, err)
	assert.Equal(t, spec.MethodToolsListChanged, n.Method)

	res.Close()
	require.Eventually(t, func() bool { return s.hub.Stats().Subscriptions == 1 }, wait, 5*time.Millisecond, "the upstream was told")
	s.hub.ToolsListChanged()
	_, err = tools.Next()
	require.NoError(t, err)
	assert.Equal(t, 1, s.dials)

	sctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	require.NoError(t, s.srv.Shutdown(sctx))
	_, err = tools.Next()
	assert.ErrorIs(t, err, upstream.ErrCompleted)
}

// An upstream whose connection dies is dialled again (a restarted
// process) and listened to again, the gap reported.
func TestStdioRestart(t *testing.T) {
	s := newStdioServer(t)
	tr := &upstream.Stdio{Dial: s.dial}
	defer tr.Close()
	r := newRecorder()
	l := upstream.NewListener(tr, r.options(listen.Filter{spec.KeyToolsListChanged: true}))
	defer l.Close()
	testkit.Recv(t, r.acks, wait)
	s.kill()
	assert.ErrorIs(t, testkit.Recv(t, r.losses, wait), upstream.ErrDropped)
	ack := testkit.Recv(t, r.acks, wait)
	require.NotNil(t, ack.Gap)
	s.hub.ToolsListChanged()
	assert.Equal(t, spec.MethodToolsListChanged, testkit.Recv(t, r.notes, wait).Method)
	assert.Equal(t, 2, s.dials)
}

// A listen whose reader falls behind is dropped once its queue is full;
// what was queued still comes first.
func TestStdioFallsBehind(t *testing.T) {
	s := newStdioServer(t)
	tr := &upstream.Stdio{Dial: s.dial, Buffer: 2}
	defer tr.Close()
	uris := []any{"file:///1", "file:///2", "file:///3"}
	st, err := upstream.Open(context.Background(), tr, listen.Filter{spec.KeyResourceSubscriptions: uris}, upstream.OpenOptions{})
	require.NoError(t, err)
	defer st.Close()
	for _, u := range uris {
		_, err := s.hub.ResourceUpdated(u.(string))
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return s.hub.Stats().Subscriptions == 0 }, wait, 5*time.Millisecond,
		"the listen was cancelled upstream")
	var got []error
	for {
		_, err := st.Next()
		got = append(got, err)
		if err != nil {
			break
		}
	}
	assert.Len(t, got, 3)
	assert.ErrorIs(t, got[2], upstream.ErrDropped)
}
