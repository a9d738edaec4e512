//go:build linux

package stdio_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/stdio"
)

// These tests use pipes whose descriptors are in blocking mode, as a server
// process's inherited standard input and output are: Go cannot interrupt a
// Read or Write pending on such a descriptor, and its *os.File has no
// deadlines. They use real time; failsafe only turns a hang into a failure.

const failsafe = 30 * time.Second

// blocking returns a blocking, deadline-less *os.File for f's open file
// description, and closes f.
func blocking(t *testing.T, f *os.File) *os.File {
	t.Helper()
	rc, err := f.SyscallConn()
	require.NoError(t, err)
	var fd int
	var derr error
	require.NoError(t, rc.Control(func(s uintptr) { fd, derr = syscall.Dup(int(s)) }))
	require.NoError(t, derr)
	require.NoError(t, syscall.SetNonblock(fd, false))
	require.NoError(t, f.Close())
	nf := os.NewFile(uintptr(fd), f.Name())
	require.ErrorIs(t, nf.SetDeadline(time.Time{}), os.ErrNoDeadline, "the file has no deadlines")
	t.Cleanup(func() { nf.Close() })
	return nf
}

// nonblocking reports whether f's descriptor is in non-blocking mode.
func nonblocking(t *testing.T, f *os.File) bool {
	t.Helper()
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), syscall.F_GETFL, 0)
	require.Zero(t, errno)
	return flags&syscall.O_NONBLOCK != 0
}

func await[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(failsafe):
		t.Fatalf("%s did not happen within %v", what, failsafe)
		panic("unreachable")
	}
}

// A client that stops reading a blocking standard output: the write timeout
// ends Serve. By default the Write is interrupted (Serve writes through a
// non-blocking duplicate) and the descriptor is back in blocking mode
// afterwards; with BlockingFiles the Write stays pending, Serve says so and
// returns anyway, and Shutdown waits for the Write.
func TestBlockingStdoutWriteTimeoutEndsServe(t *testing.T) {
	big := json.RawMessage(`{"blob":"` + strings.Repeat("x", 1<<20) + `"}`)
	app := stdio.HandlerFunc(func(context.Context, jsonrpc.Message) (json.RawMessage, error) { return big, nil })
	for _, blockingFiles := range []bool{false, true} {
		name := "default"
		if blockingFiles {
			name = "BlockingFiles"
		}
		t.Run(name, func(t *testing.T) {
			p := newOSPipes(t)
			out := blocking(t, p.outW)
			srv := newServer(t, listentest.NewSource(), options{Options: stdio.Options{Handler: app, WriteTimeout: 100 * time.Millisecond, BlockingFiles: blockingFiles}})
			done := make(chan error, 1)
			go func() { done <- srv.Serve(context.Background(), p.inR, out) }()

			// Nobody reads the output: the 1 MiB response fills the pipe.
			_, err := io.WriteString(p.inW, requestLine(`1`, "big")+"\n")
			require.NoError(t, err)
			err = await(t, done, "the end of Serve")
			require.ErrorIs(t, err, stdio.ErrWriteTimeout)
			if !blockingFiles {
				require.EqualError(t, err, "stdio: write timed out (after 100ms)")
				require.False(t, nonblocking(t, out), "the descriptor is back in blocking mode")
				require.NoError(t, srv.Shutdown(context.Background()))
				return
			}
			require.EqualError(t, err, "stdio: write timed out (after 100ms); the Write is still pending: it could not be interrupted (see Serve)")
			shut := make(chan error, 1)
			go func() { shut <- srv.Shutdown(context.Background()) }()
			// The client reads the output at last: the Write returns.
			_, err = io.CopyN(io.Discard, p.outR, int64(len(big)))
			require.NoError(t, err)
			require.NoError(t, await(t, shut, "the end of Shutdown"))
		})
	}
}

// Shutdown stops a Read pending on a blocking standard input: Serve
// returns, and nothing is left behind.
func TestBlockingStdinShutdownStopsTheRead(t *testing.T) {
	p := newOSPipes(t)
	in := blocking(t, p.inR)
	src := listentest.NewSource()
	srv := newServer(t, src, options{Listen: listen.Options{Capabilities: testCaps}})
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), in, p.outW) }()
	out := bufio.NewReader(p.outR)
	_, err := io.WriteString(p.inW, listenLine(`1`, `{"toolsListChanged":true}`)+"\n")
	require.NoError(t, err)
	requireAck(t, readMsg(t, out), `1`)

	// The client keeps its end open and sends nothing more.
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(context.Background()) }()
	require.Equal(t, spec.MethodCancelled, readMsg(t, out).method())
	requireCompletion(t, readMsg(t, out), `1`)
	require.ErrorIs(t, await(t, done, "the end of Serve"), stdio.ErrServerClosed)
	require.NoError(t, await(t, shut, "the end of Shutdown"))
	requireReason(t, nextClose(src), `1`, listen.ErrShutdown)
	require.False(t, nonblocking(t, in), "the descriptor is back in blocking mode")

	// The input is intact for whoever reads it next.
	_, err = io.WriteString(p.inW, "after\n")
	require.NoError(t, err)
	line, err := bufio.NewReader(in).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "after\n", line)
}
