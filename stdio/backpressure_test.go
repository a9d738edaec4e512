package stdio_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/stdio"
)

// flood writes n requests to w, one Write per line, counting the lines w
// took, until a Write fails. It closes done as it returns.
func flood(w io.Writer, n int, written *atomic.Int64, done chan<- struct{}) {
	defer close(done)
	for i := range n {
		if _, err := io.WriteString(w, requestLine(fmt.Sprint(i+1), "tools/list")+"\n"); err != nil {
			return
		}
		written.Add(1)
	}
}

// A client floods requests and never reads its output: the handler calls
// in flight stay at MaxInFlight, and Serve stops reading (the client's
// writes block) instead of taking every request. The write timeout then
// ends Serve.
func TestFloodWithOutputNeverReadIsBounded(t *testing.T) {
	const n = 1000
	for _, max := range []int{0, 1, 4} {
		t.Run(fmt.Sprintf("MaxInFlight=%d", max), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var calls atomic.Int64
				app := stdio.HandlerFunc(func(context.Context, jsonrpc.Message) (json.RawMessage, error) {
					calls.Add(1)
					return json.RawMessage(`{"tools":[]}`), nil
				})
				srv := newServer(t, listentest.NewSource(), options{Options: stdio.Options{Handler: app, MaxInFlight: max, WriteTimeout: time.Hour}})
				inR, inW := io.Pipe()
				outR, outW := io.Pipe() // nobody reads outR
				done := make(chan error, 1)
				go func() { done <- srv.Serve(t.Context(), inR, outW) }()
				var written atomic.Int64
				flooded := make(chan struct{})
				go flood(inW, n, &written, flooded)

				synctest.Wait() // everything is blocked: Serve has stopped reading
				bound := max
				if bound == 0 {
					bound = stdio.DefaultMaxInFlight
				}
				// A call holds its unit until its response is written: one
				// response is being written, bound-1 wait for the writer,
				// the next line waits for a unit, and the client's next
				// Write is pending.
				require.EqualValues(t, bound, calls.Load(), "handler calls started")
				require.EqualValues(t, bound+1, written.Load(), "lines Serve took")

				// The first response's write times out: Serve returns.
				t0 := time.Now()
				err := <-done
				require.ErrorIs(t, err, stdio.ErrWriteTimeout)
				require.Equal(t, time.Hour, time.Since(t0))
				<-flooded // Serve closed its input: the client's Write failed
				require.Less(t, written.Load(), int64(n))
				outR.Close()
			})
		})
	}
}

// The same with a Conn whose peer never reads: MaxInFlight messages are
// queued for it, then Serve stops reading; a peer that reads but never
// answers holds MaxInFlight requests, then Serve stops reading.
func TestConnFloodIsBounded(t *testing.T) {
	const n, max = 200, 8
	for _, reads := range []bool{false, true} {
		t.Run(fmt.Sprintf("peer reads=%v", reads), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(t, listentest.NewSource(), options{Options: stdio.Options{MaxInFlight: max}})
				inR, inW := io.Pipe()
				outR, outW := io.Pipe()
				c := srv.NewConn(inR, outW)
				done := make(chan error, 1)
				go func() { done <- c.Serve(t.Context()) }()
				var got atomic.Int64
				peerDone := make(chan struct{})
				go func() {
					defer close(peerDone)
					if !reads {
						return
					}
					for {
						if _, err := c.ReadMessage(context.Background()); err != nil {
							return
						}
						got.Add(1)
					}
				}()
				var written atomic.Int64
				flooded := make(chan struct{})
				go flood(inW, n, &written, flooded)

				synctest.Wait()
				require.LessOrEqual(t, written.Load(), int64(max+1), "lines Serve took")
				if reads {
					require.EqualValues(t, max, got.Load(), "requests handed to the peer")
				}
				require.NoError(t, inW.Close())
				<-flooded
				require.NoError(t, c.Close())
				require.NoError(t, <-done)
				<-peerDone
				outR.Close()
			})
		})
	}
}

// A client floods requests and never reads its output, and the peer
// answers every request at once: each request holds its unit of MaxInFlight
// until the peer's answer is written, so the peer is handed MaxInFlight
// requests, its answers wait for the writer, and Serve stops reading (the
// client's writes block). The write timeout then ends Serve.
func TestConnFloodWithOutputNeverReadIsBounded(t *testing.T) {
	const n, max = 1000, 8
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(t, listentest.NewSource(), options{Options: stdio.Options{MaxInFlight: max, WriteTimeout: time.Hour}})
		inR, inW := io.Pipe()
		outR, outW := io.Pipe() // nobody reads outR
		c := srv.NewConn(inR, outW)
		done := make(chan error, 1)
		go func() { done <- c.Serve(t.Context()) }()
		var handed atomic.Int64
		peerDone := make(chan struct{})
		go func() {
			defer close(peerDone)
			for {
				m, err := c.ReadMessage(context.Background())
				if err != nil {
					return
				}
				handed.Add(1)
				var req struct {
					ID json.RawMessage `json:"id"`
				}
				_ = json.Unmarshal(m, &req)
				go func() {
					_ = c.WriteMessage(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"tools":[]}}`))
				}()
			}
		}()
		var written atomic.Int64
		flooded := make(chan struct{})
		go flood(inW, n, &written, flooded)

		synctest.Wait() // everything is blocked: Serve has stopped reading
		require.EqualValues(t, max, handed.Load(), "requests handed to the peer")
		require.EqualValues(t, max+1, written.Load(), "lines Serve took")
		require.Equal(t, max, srv.Stats().InFlight)

		err := <-done
		require.ErrorIs(t, err, stdio.ErrWriteTimeout)
		<-flooded
		require.NoError(t, c.Close())
		<-peerDone
		outR.Close()
	})
}

// blockingWriter is a writer Serve cannot interrupt: no deadline, no Close,
// like a blocking standard output with Options.BlockingFiles.
type blockingWriter struct{ w *io.PipeWriter }

func (b blockingWriter) Write(p []byte) (int, error) { return b.w.Write(p) }

// A write that exceeds WriteTimeout ends Serve even when it cannot be
// interrupted: Serve returns an error naming the timeout and saying that the
// Write is still pending; Shutdown waits for that Write.
func TestWriteTimeoutEndsServeWhenTheWriteCannotBeInterrupted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := listentest.NewSource()
		app := newAppHandler()
		srv := newServer(t, src, options{Listen: listen.Options{Capabilities: testCaps}, Options: stdio.Options{Handler: app, WriteTimeout: 2 * time.Second}})
		inR, inW := io.Pipe()
		outR, outW := io.Pipe() // not read until the end
		done := make(chan error, 1)
		go func() { done <- srv.Serve(t.Context(), inR, blockingWriter{outW}) }()

		_, err := io.WriteString(inW, listenLine(`1`, `{"toolsListChanged":true}`)+"\n")
		require.NoError(t, err)
		_, err = io.WriteString(inW, requestLine(`2`, "slow")+"\n")
		require.NoError(t, err)
		<-app.started
		t0 := time.Now()
		err = <-done
		require.Equal(t, 2*time.Second, time.Since(t0))
		require.ErrorIs(t, err, stdio.ErrWriteTimeout)
		require.EqualError(t, err, "stdio: write timed out (after 2s); the Write is still pending: it could not be interrupted (see Serve)")
		c := nextClose(src)
		require.ErrorIs(t, c.reason, listen.ErrDisconnected)
		require.ErrorIs(t, c.reason, stdio.ErrWriteTimeout)
		require.ErrorIs(t, <-app.ctxErr, stdio.ErrWriteTimeout, "handler contexts are cancelled")

		shut := make(chan error, 1)
		go func() { shut <- srv.Shutdown(context.Background()) }()
		synctest.Wait()
		require.Empty(t, shut, "Shutdown waits for the pending Write")
		// The client reads at last: the Write returns, its goroutine ends.
		line, err := readLine(outR)
		require.NoError(t, err)
		requireAck(t, decode(t, line), `1`)
		require.NoError(t, <-shut)
		outR.Close()
		inW.Close()
	})
}

// readLine reads one line from r, byte by byte.
func readLine(r io.Reader) ([]byte, error) {
	var line []byte
	b := make([]byte, 1)
	for {
		if _, err := r.Read(b); err != nil {
			return line, err
		}
		if b[0] == '\n' {
			return line, nil
		}
		line = append(line, b[0])
	}
}

// A write timeout on an interruptible writer leaves nothing behind: the
// error does not say the Write is pending.
func TestWriteTimeoutInterruptsTheWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(t, listentest.NewSource(), options{Options: stdio.Options{Handler: newAppHandler(), WriteTimeout: time.Second}})
		inR, inW := io.Pipe()
		outR, outW := io.Pipe() // never read; Serve closes outW
		done := make(chan error, 1)
		go func() { done <- srv.Serve(t.Context(), inR, outW) }()
		_, err := io.WriteString(inW, requestLine(`1`, "tools/list")+"\n")
		require.NoError(t, err)
		err = <-done
		require.EqualError(t, err, "stdio: write timed out (after 1s)")
		require.False(t, strings.Contains(err.Error(), "pending"))
		require.NoError(t, srv.Shutdown(context.Background()), "nothing left to wait for")
		outR.Close()
		inW.Close()
	})
}
