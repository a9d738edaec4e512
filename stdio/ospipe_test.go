package stdio_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/stdio"
)

// These tests use real file descriptors (os.Pipe), as a server process's
// standard input and output are, and real time. They synchronise on channels
// and pipe reads only.

type osPipes struct {
	inR, inW, outR, outW *os.File
}

func newOSPipes(t *testing.T) *osPipes {
	t.Helper()
	var p osPipes
	var err error
	p.inR, p.inW, err = os.Pipe()
	require.NoError(t, err)
	p.outR, p.outW, err = os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, f := range []*os.File{p.inR, p.inW, p.outR, p.outW} {
			f.Close()
		}
	})
	return &p
}

func readMsg(t *testing.T, r *bufio.Reader) msg {
	t.Helper()
	line, err := r.ReadBytes('\n')
	require.NoError(t, err)
	return decode(t, line[:len(line)-1])
}

func TestOSPipeRoundTrip(t *testing.T) {
	p := newOSPipes(t)
	src := listentest.NewSource()
	srv := newServer(t, src, options{Listen: listen.Options{Capabilities: testCaps}})
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), p.inR, p.outW) }()
	out := bufio.NewReader(p.outR)

	_, err := io.WriteString(p.inW, listenLine(`"os"`, `{"toolsListChanged":true}`)+"\n")
	require.NoError(t, err)
	st := <-src.Opened()
	requireAck(t, readMsg(t, out), `"os"`)
	<-st.Nexts()
	st.Send(listen.ToolsListChanged())
	require.Equal(t, spec.MethodToolsListChanged, readMsg(t, out).method())
	<-st.Nexts()

	require.NoError(t, p.inW.Close())
	require.NoError(t, <-done)
	requireReason(t, nextClose(src), `"os"`, listen.ErrDisconnected)
	require.NoError(t, p.outW.Close())
	rest, err := io.ReadAll(out)
	require.NoError(t, err)
	require.Empty(t, rest)
}

func TestOSPipeShutdownStopsThePendingRead(t *testing.T) {
	p := newOSPipes(t)
	src := listentest.NewSource()
	srv := newServer(t, src, options{Listen: listen.Options{Capabilities: testCaps}})
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), p.inR, p.outW) }()
	out := bufio.NewReader(p.outR)

	_, err := io.WriteString(p.inW, listenLine(`1`, `{"toolsListChanged":true}`)+"\n")
	require.NoError(t, err)
	requireAck(t, readMsg(t, out), `1`)

	// The client keeps its end open: Serve's Read is stopped by a deadline.
	require.NoError(t, srv.Shutdown(context.Background()))
	require.Equal(t, spec.MethodCancelled, readMsg(t, out).method())
	requireCompletion(t, readMsg(t, out), `1`)
	require.ErrorIs(t, <-done, stdio.ErrServerClosed)
	requireReason(t, nextClose(src), `1`, listen.ErrShutdown)
}

func TestOSPipeWriteTimeout(t *testing.T) {
	p := newOSPipes(t)
	big := json.RawMessage(`{"blob":"` + strings.Repeat("x", 1<<20) + `"}`)
	srv := newServer(t, listentest.NewSource(), options{Options: stdio.Options{WriteTimeout: 200 * time.Millisecond, Handler: stdio.HandlerFunc(func(context.Context, jsonrpc.Message) (json.RawMessage, error) {
		return big, nil
	})}})
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), p.inR, p.outW) }()

	// Nobody reads the output: the 1 MiB response fills the pipe and blocks.
	t0 := time.Now()
	_, err := io.WriteString(p.inW, requestLine(`1`, "big")+"\n")
	require.NoError(t, err)
	err = <-done
	require.ErrorIs(t, err, stdio.ErrWriteTimeout)
	require.GreaterOrEqual(t, time.Since(t0), 200*time.Millisecond)
}
