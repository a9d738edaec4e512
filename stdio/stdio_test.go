package stdio_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/stdio"
)

// appHandler is a small application: tools/list answers at once, slow waits
// for release (or its context), and every call is reported on started.
type appHandler struct {
	started chan jsonrpc.Message
	release chan struct{}
	ctxErr  chan error // the cause of slow's context, when it ended first
}

func newAppHandler() *appHandler {
	return &appHandler{started: make(chan jsonrpc.Message, 64), release: make(chan struct{}), ctxErr: make(chan error, 8)}
}

func (a *appHandler) Handle(ctx context.Context, m jsonrpc.Message) (json.RawMessage, error) {
	a.started <- m
	switch m.Method {
	case "tools/list":
		return json.RawMessage(`{"tools":[]}`), nil
	case "slow":
		select {
		case <-a.release:
			return json.RawMessage(`{"slow":true}`), nil
		case <-ctx.Done():
			a.ctxErr <- context.Cause(ctx)
			return nil, ctx.Err()
		}
	case "pretty":
		return json.RawMessage("{\n  \"a\": [\n    1,\n    2\n  ]\n}\n"), nil
	case "empty":
		return nil, nil
	case "notjson":
		return json.RawMessage(`{"a":`), nil
	case "fail":
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "bad tool").WithData(map[string]any{"why": "line\nbreak"})
	case "plainerr":
		return nil, errors.New("secret detail")
	case "panic":
		panic("handler bug")
	}
	return nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "Method not found: "+m.Method)
}

func TestListenAckFirstThenDemand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, t.Context(), nil, &options{Listen: listen.Options{ServerInfo: listen.Implementation{Name: "srv", Version: "1.0"}}})
		h.send(listenLine(`"sub-1"`, `{"toolsListChanged":true,"promptsListChanged":true,"resourceSubscriptions":["file:///a"]}`))
		st := h.opened(`"sub-1"`)

		ack := h.recv()
		requireAck(t, ack, `"sub-1"`)
		var accepted map[string]any
		ack.param("notifications", &accepted)
		require.Equal(t, map[string]any{"toolsListChanged": true, "promptsListChanged": true, "resourceSubscriptions": []any{"file:///a"}}, accepted)
		require.Equal(t, []string{`"sub-1"`}, h.nexts(), "exactly one Next after the acknowledgement")

		st.Send(listen.ToolsListChanged())
		n := h.recv()
		require.Equal(t, spec.MethodToolsListChanged, n.method())
		require.Equal(t, `"sub-1"`, n.subID())
		require.Empty(t, n.id())
		require.Equal(t, []string{`"sub-1"`}, h.nexts(), "exactly one more Next per written event")

		st.Send(listen.ResourceUpdated("file:///a"))
		n = h.recv()
		require.Equal(t, spec.MethodResourceUpdated, n.method())
		var uri string
		n.param("uri", &uri)
		require.Equal(t, "file:///a", uri)
		require.Equal(t, []string{`"sub-1"`}, h.nexts())

		// An event outside the accepted filter is dropped: nothing is
		// written, and the next one is asked for at once.
		st.Send(listen.ResourceUpdated("file:///other"))
		h.quiet()
		require.Equal(t, []string{`"sub-1"`}, h.nexts())

		st.End()
		c := h.recv()
		requireCompletion(t, c, `"sub-1"`)
		require.Contains(t, string(c.raw), `"io.modelcontextprotocol/serverInfo":{"name":"srv","version":"1.0"}`)
		requireReason(t, h.closedReason(), `"sub-1"`, listen.ErrComplete)

		rest, err := h.closeInput()
		require.NoError(t, err)
		require.Empty(t, rest)
	})
}

func TestTwoListensInterleaveKeepingPerIDOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, t.Context(), nil, nil)
		a := h.openListen(`"a"`)
		b := h.openListen(`7`)

		const n = 20
		var wg sync.WaitGroup
		for _, st := range []*listentest.Stream{a, b} {
			wg.Go(func() {
				for i := range n {
					st.Send(listen.ToolsListChanged().WithMetadata(map[string]any{"seq": i}))
				}
			})
		}
		wg.Wait()
		seqs := map[string][]int{}
		for range 2 * n {
			m := h.recv()
			require.Equal(t, spec.MethodToolsListChanged, m.method())
			var meta map[string]any
			m.param("_meta", &meta)
			seqs[m.subID()] = append(seqs[m.subID()], int(meta["seq"].(float64)))
		}
		want := make([]int, n)
		for i := range want {
			want[i] = i
		}
		require.Equal(t, map[string][]int{`"a"`: want, `7`: want}, seqs, "each id's events in order, its id's JSON type kept")

		a.End()
		requireCompletion(t, h.recv(), `"a"`)
		requireReason(t, h.closedReason(), `"a"`, listen.ErrComplete)

		b.Fail(errors.New("feed broke"))
		requireError(t, h.recv(), `7`, jsonrpc.CodeInternalError, core.SourceFailed)
		requireReason(t, h.closedReason(), `7`, listen.ErrFailed)

		rest, err := h.closeInput()
		require.NoError(t, err)
		require.Empty(t, rest)
	})
}

func TestCancelEndsListenSilentlyAndFreesID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		app := newAppHandler()
		h := start(t, t.Context(), nil, &options{Options: stdio.Options{Handler: app}})
		h.openListen(`"x"`)

		h.send(cancelLine(`"x"`, "client done"))
		c := h.closedReason()
		require.Equal(t, `"x"`, c.id)
		require.ErrorIs(t, c.reason, listen.ErrCancelled)
		require.EqualError(t, c.reason, "listen: subscription cancelled: client done")
		require.Equal(t, "cancelled", listen.Classify(c.reason))

		// The id is free at once: a tools/list with it is served, and its
		// response is the only message with that id.
		h.send(requestLine(`"x"`, "tools/list"))
		m := h.recv()
		require.Equal(t, `"x"`, m.id())
		require.JSONEq(t, `{"tools":[]}`, string(m.fields["result"]))
		h.quiet()

		rest, err := h.closeInput()
		require.NoError(t, err)
		require.Empty(t, rest, "no terminal message for a cancelled listen")
	})
}

func TestCancelWhileOpeningWritesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := listentest.NewSource()
		causes := make(chan error, 1)
		src.BeforeOpen = func(ctx context.Context, req *listen.Request) error {
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return context.Cause(ctx)
		}
		h := start(t, t.Context(), src, nil)
		h.send(listenLine(`1`, `{"toolsListChanged":true}`))
		synctest.Wait() // Open is blocked in the source
		h.send(cancelLine(`1`, "never mind"))
		require.ErrorIs(t, <-causes, listen.ErrCancelled)
		h.quiet()
		rest, err := h.closeInput()
		require.NoError(t, err)
		require.Empty(t, rest)
	})
}

func TestCancellationsThatAreIgnored(t *testing.T) {
	const pre = `{"jsonrpc":"2.0","method":"notifications/cancelled"`
	cases := map[string]string{
		"no params":            pre + `}`,
		"params null":          pre + `,"params":null}`,
		"params an array":      pre + `,"params":["1"]}`,
		"params a string":      pre + `,"params":"1"}`,
		"no requestId":         pre + `,"params":{"reason":"x"}}`,
		"requestId null":       pre + `,"params":{"requestId":null}}`,
		"requestId an object":  pre + `,"params":{"requestId":{"id":"1"}}}`,
		"requestId a fraction": pre + `,"params":{"requestId":1.5}}`,
		"requestId a boolean":  pre + `,"params":{"requestId":true}}`,
		"reason a number":      pre + `,"params":{"requestId":"1","reason":5}}`,
		"reason null":          pre + `,"params":{"requestId":"1","reason":null}}`,
		"reason an object":     pre + `,"params":{"requestId":"1","reason":{}}}`,
		"unknown id":           pre + `,"params":{"requestId":"2"}}`,
		"integer for a string": pre + `,"params":{"requestId":1}}`,
		"jsonrpc missing":      `{"method":"notifications/cancelled","params":{"requestId":"1"}}`,
	}
	for name, line := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := start(t, t.Context(), nil, nil)
				st := h.openListen(`"1"`)
				h.send(line)
				if name == "jsonrpc missing" {
					// Not a JSON-RPC message at all: answered as invalid, the
					// stream untouched.
					requireError(t, h.recv(), "", jsonrpc.CodeInvalidRequest, `Invalid request: jsonrpc must be "2.0"`)
				}
				h.quiet()
				st.Send(listen.ToolsListChanged())
				require.Equal(t, `"1"`, h.recv().subID(), "the stream goes on")
				require.Equal(t, []string{`"1"`}, h.nexts())

				rest, err := h.closeInput()
				require.NoError(t, err)
				require.Empty(t, rest)
				requireReason(t, h.closedReason(), `"1"`, listen.ErrDisconnected)
			})
		})
	}
}

func TestDuplicateInFlightID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		app := newAppHandler()
		h := start(t, t.Context(), nil, &options{Options: stdio.Options{Handler: app}})
		st := h.openListen(`"d"`)

		h.send(listenLine(`"d"`, `{"toolsListChanged":true}`))
		requireError(t, h.recv(), `"d"`, jsonrpc.CodeInvalidRequest, core.DuplicateID)
		h.send(requestLine(`"d"`, "tools/list"))
		requireError(t, h.recv(), `"d"`, jsonrpc.CodeInvalidRequest, core.DuplicateID)
		h.quiet()
		require.Empty(t, app.started, "the duplicate never reaches the handler")
		require.Empty(t, h.src.Opened(), "nor the source")

		// The open stream is untouched.
		st.Send(listen.ToolsListChanged())
		require.Equal(t, `"d"`, h.recv().subID())
		require.Equal(t, []string{`"d"`}, h.nexts())

		// A handler call in flight holds its id too.
		h.send(requestLine(`9`, "slow"))
		<-app.started
		h.send(requestLine(`9`, "tools/list"))
		requireError(t, h.recv(), `9`, jsonrpc.CodeInvalidRequest, core.DuplicateID)
		h.send(listenLine(`9`, `{}`))
		requireError(t, h.recv(), `9`, jsonrpc.CodeInvalidRequest, core.DuplicateID)
		app.release <- struct{}{}
		m := h.recv()
		require.Equal(t, `9`, m.id())
		require.JSONEq(t, `{"slow":true}`, string(m.fields["result"]))

		// Ids are free as soon as their final message is out.
		h.send(requestLine(`9`, "tools/list"))
		require.Equal(t, `9`, h.recv().id())
		<-app.started
		st.End()
		requireCompletion(t, h.recv(), `"d"`)
		h.send(requestLine(`"d"`, "tools/list"))
		m = h.recv()
		require.Equal(t, `"d"`, m.id())
		require.Nil(t, m.err())

		rest, err := h.closeInput()
		require.NoError(t, err)
		require.Empty(t, rest)
	})
}

func TestEOFDisconnectsEveryListen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		app := newAppHandler()
		src := listentest.NewSource()
		opening := make(chan error, 1)
		src.BeforeOpen = func(ctx context.Context, req *listen.Request) error {
			if req.ID.Raw() != `"opening"` {
				return nil
			}
			<-ctx.Done()
			opening <- context.Cause(ctx)
			return context.Cause(ctx)
		}
		h := start(t, t.Context(), src, &options{Options: stdio.Options{Handler: app}})
		h.openListen(`1`)
		h.openListen(`"two"`)
		h.send(listenLine(`"opening"`, `{}`))
		h.send(requestLine(`5`, "slow"))
		<-app.started
		synctest.Wait()

		require.NoError(t, h.in.Close())
		got := map[string]error{}
		for range 2 {
			c := h.closedReason()
			got[c.id] = c.reason
		}
		for id, reason := range got {
			require.ErrorIs(t, reason, listen.ErrDisconnected, id)
			require.ErrorIs(t, reason, io.EOF, id)
		}
		require.ErrorIs(t, <-opening, listen.ErrDisconnected)

		// The handler call in flight finishes and is answered.
		app.release <- struct{}{}
		rest, err := h.wait()
		require.NoError(t, err)
		require.Len(t, rest, 1)
		require.Equal(t, `5`, rest[0].id())
		require.JSONEq(t, `{"slow":true}`, string(rest[0].fields["result"]))
	})
}

func TestCapacityExhausted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, t.Context(), nil, &options{Listen: listen.Options{MaxStreams: 2}})
		h.openListen(`1`)
		h.openListen(`2`)

		h.send(listenLine(`3`, `{"toolsListChanged":true}`))
		requireError(t, h.recv(), `3`, jsonrpc.CodeInternalError, core.CapacityExhausted)
		h.quiet()
		require.Empty(t, h.src.Opened(), "the source is not opened for a refused listen")

		// A cancellation frees its id at once, its slot on the
		// listen.Server once its stream has closed and its goroutine
		// returned (Slot.Done).
		h.send(cancelLine(`1`, ""))
		requireReason(t, h.closedReason(), `1`, listen.ErrCancelled)
		synctest.Wait()
		h.openListen(`3`)
		h.send(listenLine(`4`, `{"toolsListChanged":true}`))
		requireError(t, h.recv(), `4`, jsonrpc.CodeInternalError, core.CapacityExhausted)

		rest, err := h.closeInput()
		require.NoError(t, err)
		require.Empty(t, rest)
	})
}

// lineOfLen returns a valid request line of exactly n bytes (n >= 50) for
// the method "m" with the id 1.
func lineOfLen(n int) string {
	const head, tail = `{"jsonrpc":"2.0","id":1,"method":"m","params":{"p":"`, `"}}`
	return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
}

// The -32601 error for a request without a handler repeats at most 128
// bytes of its method, so that a long method costs no long answer.
func TestMethodNotFoundEchoIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, t.Context(), nil, nil)
		h.send(requestLine(`1`, strings.Repeat("m", 10000)))
		requireError(t, h.recv(), `1`, jsonrpc.CodeMethodNotFound, "Method not found: "+strings.Repeat("m", 128)+"...")
		rest, err := h.closeInput()
		require.NoError(t, err)
		require.Empty(t, rest)
	})
}

func TestOverlongLineIsAnsweredAndSkipped(t *testing.T) {
	cases := []struct {
		name     string
		max      int
		line     int
		tooLong  bool
		lastLine bool // sent without a newline, just before EOF
	}{
		{name: "at the limit", max: 64, line: 64},
		{name: "one byte over", max: 64, line: 65, tooLong: true},
		{name: "far over, across buffer fills", max: 100 << 10, line: 300 << 10, tooLong: true},
		{name: "just under a large limit", max: 100 << 10, line: 100 << 10},
		{name: "over, last line without newline", max: 64, line: 200, tooLong: true, lastLine: true},
		{name: "default limit, 4 MiB + 1", line: stdio.DefaultMaxLineBytes + 1, tooLong: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := start(t, t.Context(), nil, &options{Options: stdio.Options{MaxLineBytes: tc.max}})
				if tc.lastLine {
					_, err := io.WriteString(h.in, lineOfLen(tc.line))
					require.NoError(t, err)
					rest, err := h.closeInput()
					require.NoError(t, err)
					require.Len(t, rest, 1)
					requireError(t, rest[0], "", jsonrpc.CodeInvalidRequest, stdio.MsgLineTooLong)
					return
				}
				h.send(lineOfLen(tc.line))
				if tc.tooLong {
					requireError(t, h.recv(), "", jsonrpc.CodeInvalidRequest, stdio.MsgLineTooLong)
				} else {
					requireError(t, h.recv(), `1`, jsonrpc.CodeMethodNotFound, "Method not found: m")
				}
				// The connection goes on.
				h.send(requestLine(`2`, "tools/list"))
				requireError(t, h.recv(), `2`, jsonrpc.CodeMethodNotFound, "Method not found: tools/list")
				rest, err := h.closeInput()
				require.NoError(t, err)
				require.Empty(t, rest)
			})
		})
	}
}

func TestBlockedWriterTimesOut(t *testing.T) {
	cases := []struct {
		name    string
		timeout time.Duration
		send    string
	}{
		{name: "acknowledgement, default timeout", send: listenLine(`1`, `{"toolsListChanged":true}`)},
		{name: "error response, 1s", timeout: time.Second, send: `not json`},
		{name: "handler response, 250ms", timeout: 250 * time.Millisecond, send: requestLine(`1`, "tools/list")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := listentest.NewSource()
				srv := newServer(t, src, options{Listen: listen.Options{Capabilities: testCaps}, Options: stdio.Options{WriteTimeout: tc.timeout, Handler: newAppHandler()}})
				inR, inW := io.Pipe()
				outR, outW := io.Pipe() // nobody reads outR
				done := make(chan error, 1)
				go func() { done <- srv.Serve(t.Context(), inR, outW) }()

				// A listen opened before the writer blocks.
				t0 := time.Now()
				_, err := io.WriteString(inW, tc.send+"\n")
				require.NoError(t, err)
				err = <-done
				require.ErrorIs(t, err, stdio.ErrWriteTimeout)
				want := tc.timeout
				if want == 0 {
					want = stdio.DefaultWriteTimeout
				}
				require.Equal(t, want, time.Since(t0), "ended by the write timeout, not earlier or later")
				if strings.Contains(tc.send, "listen") {
					c := nextClose(src)
					require.ErrorIs(t, c.reason, listen.ErrDisconnected)
					require.ErrorIs(t, c.reason, stdio.ErrWriteTimeout)
				}
				// Serve stopped both pipe ends it was using.
				_, err = io.WriteString(inW, "more\n")
				require.ErrorIs(t, err, io.ErrClosedPipe)
				outR.Close()
			})
		})
	}
}

func TestBlockedWriterTimesOutWithListensOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		app := newAppHandler()
		h := start(t, t.Context(), nil, &options{Options: stdio.Options{Handler: app, WriteTimeout: time.Second}})
		a := h.openListen(`"a"`)
		h.openListen(`"b"`)
		h.send(requestLine(`3`, "slow"))
		<-app.started

		// The client stops reading: events, one per Next of a's, fill the
		// harness's buffer, then the pipe blocks.
		go func() {
			for {
				a.Send(listen.ToolsListChanged())
				select {
				case <-a.Nexts():
				case <-a.Closed():
					return
				}
			}
		}()
		rest, err := h.wait()
		require.ErrorIs(t, err, stdio.ErrWriteTimeout)
		require.NotEmpty(t, rest)
		got := map[string]error{}
		for range 2 {
			c := h.closedReason()
			got[c.id] = c.reason
		}
		require.ErrorIs(t, got[`"a"`], listen.ErrDisconnected)
		require.ErrorIs(t, got[`"b"`], listen.ErrDisconnected)
		require.ErrorIs(t, got[`"b"`], stdio.ErrWriteTimeout)
		require.ErrorIs(t, <-app.ctxErr, listen.ErrDisconnected, "handler contexts are cancelled")
	})
}

func TestShutdownDrains(t *testing.T) {
	for _, omit := range []bool{false, true} {
		t.Run(fmt.Sprintf("OmitShutdownCancelled=%v", omit), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				app := newAppHandler()
				h := start(t, t.Context(), nil, &options{Options: stdio.Options{Handler: app, OmitShutdownCancelled: omit}})
				h.openListen(`"a"`)
				h.openListen(`2`)
				h.send(requestLine(`5`, "slow"))
				<-app.started

				shut := make(chan error, 1)
				go func() { shut <- h.srv.Shutdown(context.Background()) }()
				perID := map[string][]msg{}
				want := 2
				if omit {
					want = 1
				}
				for range 2 * want {
					m := h.recv()
					perID[m.tag()] = append(perID[m.tag()], m)
				}
				for _, id := range []string{`"a"`, `2`} {
					ms := perID[id]
					require.Len(t, ms, want, id)
					if !omit {
						n := ms[0]
						require.Equal(t, spec.MethodCancelled, n.method())
						require.Equal(t, id, n.subID())
						var reqID json.RawMessage
						var reason string
						n.param("requestId", &reqID)
						n.param("reason", &reason)
						require.Equal(t, id, string(reqID))
						require.Equal(t, stdio.ShutdownReason, reason)
					}
					requireCompletion(t, ms[len(ms)-1], id)
				}
				for range 2 {
					require.ErrorIs(t, h.closedReason().reason, listen.ErrShutdown)
				}
				// Shutdown waits for the handler call in flight, which is answered.
				synctest.Wait()
				require.Empty(t, shut)
				app.release <- struct{}{}
				require.Equal(t, `5`, h.recv().id())
				require.NoError(t, <-shut)

				rest, err := h.wait()
				require.ErrorIs(t, err, stdio.ErrServerClosed)
				require.Empty(t, rest)

				// A Serve after Shutdown returns at once.
				require.ErrorIs(t, h.srv.Serve(t.Context(), strings.NewReader(""), io.Discard), stdio.ErrServerClosed)
			})
		})
	}
}

func TestContextEndDrains(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		app := newAppHandler()
		ctx, cancel := context.WithCancel(t.Context())
		h := start(t, ctx, nil, &options{Options: stdio.Options{Handler: app, OmitShutdownCancelled: true}})
		h.openListen(`1`)
		h.send(requestLine(`2`, "slow"))
		<-app.started

		cancel()
		got := map[string]msg{}
		for range 2 {
			m := h.recv()
			got[m.id()] = m
		}
		requireCompletion(t, got[`1`], `1`)
		requireError(t, got[`2`], `2`, jsonrpc.CodeInternalError, stdio.MsgInternalError)
		require.ErrorIs(t, <-app.ctxErr, context.Canceled, "handler contexts end with Serve's")
		require.ErrorIs(t, h.closedReason().reason, listen.ErrShutdown)

		rest, err := h.wait()
		require.ErrorIs(t, err, context.Canceled)
		require.Empty(t, rest)
	})
}

func TestShutdownWaitsForOpenThenCompletes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := listentest.NewSource()
		proceed := make(chan struct{})
		src.BeforeOpen = func(context.Context, *listen.Request) error {
			<-proceed
			return nil
		}
		h := start(t, t.Context(), src, nil)
		h.send(listenLine(`"late"`, `{"toolsListChanged":true}`))
		synctest.Wait()
		shut := make(chan error, 1)
		go func() { shut <- h.srv.Shutdown(context.Background()) }()
		synctest.Wait()
		require.Empty(t, shut, "Shutdown waits for the Open in progress")
		close(proceed)

		requireAck(t, h.recv(), `"late"`)
		require.Equal(t, spec.MethodCancelled, h.recv().method())
		requireCompletion(t, h.recv(), `"late"`)
		require.NoError(t, <-shut)
		rest, err := h.wait()
		require.ErrorIs(t, err, stdio.ErrServerClosed)
		require.Empty(t, rest)
	})
}

func TestShutdownDeadlineClosesHard(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		app := newAppHandler()
		h := start(t, t.Context(), nil, &options{Options: stdio.Options{Handler: app, OmitShutdownCancelled: true}})
		h.openListen(`1`)
		h.send(requestLine(`2`, "slow"))
		<-app.started

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		t0 := time.Now()
		require.ErrorIs(t, h.srv.Shutdown(ctx), context.DeadlineExceeded)
		require.Equal(t, time.Second, time.Since(t0))
		cause := <-app.ctxErr
		require.ErrorIs(t, cause, listen.ErrDisconnected)
		require.ErrorIs(t, cause, stdio.ErrServerClosed)

		rest, err := h.wait()
		require.ErrorIs(t, err, stdio.ErrServerClosed)
		require.Len(t, rest, 1, "the completion, written before the deadline")
		requireCompletion(t, rest[0], `1`)
		require.ErrorIs(t, h.closedReason().reason, listen.ErrShutdown)
	})
}

func TestListenVersionAndParamsErrors(t *testing.T) {
	const v = spec.ProtocolVersion
	meta := func(version string) string {
		return fmt.Sprintf(`"_meta":{%q:%q,%q:{}}`, spec.MetaProtocolVersion, version, spec.MetaClientCapabilities)
	}
	req := func(params string) string {
		return `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":` + params + `}`
	}
	cases := []struct {
		name    string
		line    string
		code    int
		message string
		data    string
	}{
		{"legacy 2025-11-25", listenLineVersion(`"L"`, `{}`, "2025-11-25"), jsonrpc.CodeMethodNotFound, core.MethodNotFoundListen, ""},
		{"old version the server does not speak", listenLineVersion(`"L"`, `{}`, "2024-11-05"), jsonrpc.CodeUnsupportedProtocolVersion, core.UnsupportedVersion,
			`{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26"],"requested":"2024-11-05"}`},
		{"1900-01-01 (the specification's example)", listenLineVersion(`"L"`, `{}`, "1900-01-01"), jsonrpc.CodeUnsupportedProtocolVersion, core.UnsupportedVersion,
			`{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26"],"requested":"1900-01-01"}`},
		{"bad params win over a legacy version", req(`{` + meta("2025-06-18") + `}`), jsonrpc.CodeInvalidParams, core.NotificationsObject, ""},
		{"future version", listenLineVersion(`"L"`, `{}`, "2027-01-01"), jsonrpc.CodeUnsupportedProtocolVersion, core.UnsupportedVersion,
			`{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26"],"requested":"2027-01-01"}`},
		{"unknown version", listenLineVersion(`"L"`, `{}`, "v999.0.0"), jsonrpc.CodeUnsupportedProtocolVersion, core.UnsupportedVersion,
			`{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26"],"requested":"v999.0.0"}`},
		{"params missing", `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen"}`, jsonrpc.CodeInvalidParams, core.ParamsObject, ""},
		{"params an array", req(`[]`), jsonrpc.CodeInvalidParams, core.ParamsObject, ""},
		{"_meta missing", req(`{"notifications":{}}`), jsonrpc.CodeInvalidParams, core.MetaObject, ""},
		{"_meta a string", req(`{"_meta":"x","notifications":{}}`), jsonrpc.CodeInvalidParams, core.MetaObject, ""},
		{"version missing", req(`{"_meta":{"` + spec.MetaClientCapabilities + `":{}},"notifications":{}}`), jsonrpc.CodeInvalidParams, core.MetaProtocolVersion, ""},
		{"version a number", req(`{"_meta":{"` + spec.MetaProtocolVersion + `":20260728,"` + spec.MetaClientCapabilities + `":{}},"notifications":{}}`), jsonrpc.CodeInvalidParams, core.MetaProtocolVersion, ""},
		{"capabilities missing", req(`{"_meta":{"` + spec.MetaProtocolVersion + `":"` + v + `"},"notifications":{}}`), jsonrpc.CodeInvalidParams, core.MetaCapabilities, ""},
		{"notifications missing", req(`{` + meta(v) + `}`), jsonrpc.CodeInvalidParams, core.NotificationsObject, ""},
		{"notifications a list", req(`{` + meta(v) + `,"notifications":[]}`), jsonrpc.CodeInvalidParams, core.NotificationsObject, ""},
		{"flag not a boolean", listenLine(`"L"`, `{"toolsListChanged":"yes"}`), jsonrpc.CodeInvalidParams, "subscriptions/listen toolsListChanged must be a boolean", ""},
		{"URIs not a list", listenLine(`"L"`, `{"resourceSubscriptions":"file:///a"}`), jsonrpc.CodeInvalidParams, core.URIsList, ""},
		{"URI not absolute", listenLine(`"L"`, `{"resourceSubscriptions":["a/b"]}`), jsonrpc.CodeInvalidParams, core.URIsAbsolute, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := start(t, t.Context(), nil, nil)
				h.send(tc.line)
				m := h.recv()
				requireError(t, m, `"L"`, tc.code, tc.message)
				if tc.data != "" {
					require.JSONEq(t, tc.data, string(m.err().Data))
				} else {
					require.Empty(t, m.err().Data)
				}
				rest, err := h.closeInput()
				require.NoError(t, err)
				require.Empty(t, rest)
				require.Empty(t, h.src.Opened())
			})
		})
	}
}

func TestMalformedInput(t *testing.T) {
	cases := []struct {
		name    string
		line    string
		id      string
		code    int
		message string
	}{
		{"not JSON", `{"jsonrpc":"2.0",`, "", jsonrpc.CodeParseError, "Parse error"},
		{"garbage", "\x00\xff\xfe", "", jsonrpc.CodeParseError, "Parse error"},
		{"a batch", `[{"jsonrpc":"2.0","id":1,"method":"a"}]`, "", jsonrpc.CodeInvalidRequest, "Invalid request: expected a JSON-RPC object"},
		{"a number", `42`, "", jsonrpc.CodeInvalidRequest, "Invalid request: expected a JSON-RPC object"},
		{"no method", `{"jsonrpc":"2.0","id":1}`, `1`, jsonrpc.CodeInvalidRequest, "Invalid request: method must be a non-empty string"},
		{"a response", `{"jsonrpc":"2.0","id":"r","result":{}}`, `"r"`, jsonrpc.CodeInvalidRequest, "Invalid request: method must be a non-empty string"},
		{"old jsonrpc", `{"jsonrpc":"1.0","id":"x","method":"a"}`, `"x"`, jsonrpc.CodeInvalidRequest, `Invalid request: jsonrpc must be "2.0"`},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"a"}`, "", jsonrpc.CodeInvalidRequest, "Invalid request: id must be a string or an integer"},
		{"fraction id", `{"jsonrpc":"2.0","id":1.5,"method":"a"}`, "", jsonrpc.CodeInvalidRequest, "Invalid request: id must be a string or an integer"},
		{"crlf line", "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"m\"}\r", `3`, jsonrpc.CodeMethodNotFound, "Method not found: m"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := start(t, t.Context(), nil, nil)
				h.send("")
				h.send("   \t")
				h.send(tc.line)
				requireError(t, h.recv(), tc.id, tc.code, tc.message)
				rest, err := h.closeInput()
				require.NoError(t, err)
				require.Empty(t, rest, "blank lines are skipped")
			})
		})
	}
}

func TestHandlerRouting(t *testing.T) {
	cases := []struct {
		method string
		result string // JSON, or "" for an error
		code   int
		msg    string
		data   string
	}{
		{method: "tools/list", result: `{"tools":[]}`},
		{method: "pretty", result: `{"a":[1,2]}`},
		{method: "empty", result: `{}`},
		{method: "fail", code: jsonrpc.CodeInvalidParams, msg: "bad tool", data: `{"why":"line\nbreak"}`},
		{method: "plainerr", code: jsonrpc.CodeInternalError, msg: "Internal error"},
		{method: "notjson", code: jsonrpc.CodeInternalError, msg: stdio.MsgInternalError},
		{method: "panic", code: jsonrpc.CodeInternalError, msg: stdio.MsgInternalError},
		{method: "unknown/method", code: jsonrpc.CodeMethodNotFound, msg: "Method not found: unknown/method"},
	}
	for _, tc := range cases {
		t.Run(tc.method, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				app := newAppHandler()
				h := start(t, t.Context(), nil, &options{Options: stdio.Options{Handler: app}})
				h.send(requestLine(`"r1"`, tc.method))
				m := h.recv()
				require.Equal(t, tc.method, (<-app.started).Method)
				if tc.result != "" {
					require.Nil(t, m.err(), "%s", m.raw)
					require.Equal(t, `"r1"`, m.id())
					require.JSONEq(t, tc.result, string(m.fields["result"]))
				} else {
					requireError(t, m, `"r1"`, tc.code, tc.msg)
					if tc.data != "" {
						require.JSONEq(t, tc.data, string(m.err().Data))
					}
				}
				rest, err := h.closeInput()
				require.NoError(t, err)
				require.Empty(t, rest)
			})
		})
	}
}

func TestHandlerCallsRunConcurrently(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		app := newAppHandler()
		h := start(t, t.Context(), nil, &options{Options: stdio.Options{Handler: app}})
		h.send(requestLine(`1`, "slow"))
		h.send(requestLine(`2`, "tools/list"))
		require.Equal(t, `2`, h.recv().id(), "a fast call is answered while a slow one runs")
		h.send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{"x":1}}`)
		var seen []string
		for range 3 {
			m := <-app.started
			seen = append(seen, m.Method)
			if !m.HasID {
				require.JSONEq(t, `{"x":1}`, string(m.Params))
			}
		}
		require.ElementsMatch(t, []string{"slow", "tools/list", "notifications/initialized"}, seen)
		h.quiet() // the notification is not answered
		app.release <- struct{}{}
		require.Equal(t, `1`, h.recv().id())
		rest, err := h.closeInput()
		require.NoError(t, err)
		require.Empty(t, rest)
	})
}

func TestNoHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, t.Context(), nil, nil)
		h.send(requestLine(`1`, "tools/list"))
		requireError(t, h.recv(), `1`, jsonrpc.CodeMethodNotFound, "Method not found: tools/list")
		h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		h.send(`{"jsonrpc":"2.0","method":"subscriptions/listen","params":{}}`)
		h.quiet() // notifications are never answered
		rest, err := h.closeInput()
		require.NoError(t, err)
		require.Empty(t, rest)
	})
}

func TestCancelHandlerCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		app := newAppHandler()
		h := start(t, t.Context(), nil, &options{Options: stdio.Options{Handler: app}})
		h.send(requestLine(`"c"`, "slow"))
		<-app.started
		h.send(cancelLine(`"c"`, "too slow"))
		cause := <-app.ctxErr
		require.ErrorIs(t, cause, listen.ErrCancelled)
		require.EqualError(t, cause, "listen: subscription cancelled: too slow")
		h.quiet() // no response for a cancelled request

		h.send(requestLine(`"c"`, "tools/list"))
		require.Equal(t, `"c"`, h.recv().id())
		rest, err := h.closeInput()
		require.NoError(t, err)
		require.Empty(t, rest)
	})
}

func TestOpenErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := listentest.NewSource()
		src.BeforeOpen = func(_ context.Context, req *listen.Request) error {
			switch req.ID.Raw() {
			case `"wire"`:
				return jsonrpc.NewError(jsonrpc.CodeMissingRequiredClientCapability, "Missing required client capability").
					WithData(map[string]any{"requiredCapabilities": map[string]any{}})
			case `"plain"`:
				return errors.New("database down")
			}
			return nil
		}
		h := start(t, t.Context(), src, nil)
		h.send(listenLine(`"wire"`, `{}`))
		m := h.recv()
		requireError(t, m, `"wire"`, jsonrpc.CodeMissingRequiredClientCapability, "Missing required client capability")
		require.JSONEq(t, `{"requiredCapabilities":{}}`, string(m.err().Data))
		h.send(listenLine(`"plain"`, `{}`))
		requireError(t, h.recv(), `"plain"`, jsonrpc.CodeInternalError, core.SourceFailedToOpen)
		// The ids are free again.
		h.send(requestLine(`"wire"`, "x"))
		requireError(t, h.recv(), `"wire"`, jsonrpc.CodeMethodNotFound, "Method not found: x")
		rest, err := h.closeInput()
		require.NoError(t, err)
		require.Empty(t, rest)
	})
}

func TestHooks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		type event struct {
			kind   string
			id     string
			reason error
		}
		events := make(chan event, 8)
		h := start(t, t.Context(), nil, &options{Listen: listen.Options{OnOpen: func(sub *listen.Subscription) {
			events <- event{kind: "open", id: sub.ID().Raw()}
		}, OnClose: func(sub *listen.Subscription, reason error) {
			events <- event{kind: "close", id: sub.ID().Raw(), reason: reason}
			panic("a hook bug is contained")
		}}})
		h.openListen(`1`)
		require.Equal(t, event{kind: "open", id: `1`}, <-events)
		h.send(cancelLine(`1`, "bye"))
		e := <-events
		require.Equal(t, "close", e.kind)
		require.ErrorIs(t, e.reason, listen.ErrCancelled)
		rest, err := h.closeInput()
		require.NoError(t, err)
		require.Empty(t, rest)
	})
}

func TestNewRefusesInvalidOptions(t *testing.T) {
	ls := listen.NewServer(listentest.NewSource(), listen.Options{})
	cases := []struct {
		name string
		ls   *listen.Server
		opts stdio.Options
		want string
	}{
		{"nil listen.Server", nil, stdio.Options{}, "stdio: invalid options: the listen.Server is nil"},
		{"MaxInFlight", ls, stdio.Options{MaxInFlight: -2}, "stdio: invalid options: MaxInFlight must be positive (or 0 for the default 64), got -2"},
		{"MaxLineBytes", ls, stdio.Options{MaxLineBytes: -1}, "stdio: invalid options: MaxLineBytes must be positive (or 0 for the default 4194304), got -1"},
		{"WriteTimeout", ls, stdio.Options{WriteTimeout: -time.Second}, "stdio: invalid options: WriteTimeout must be positive (or 0 for the default 5s), got -1s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := stdio.New(tc.ls, tc.opts)
			require.Nil(t, srv)
			require.ErrorIs(t, err, stdio.ErrInvalidOptions)
			require.EqualError(t, err, tc.want)
		})
	}
	srv, err := stdio.New(ls, stdio.Options{})
	require.NoError(t, err)
	require.NotNil(t, srv)
}

func TestReadErrorEndsLikeEOF(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		app := newAppHandler()
		h := start(t, t.Context(), nil, &options{Options: stdio.Options{Handler: app}})
		h.openListen(`1`)
		h.send(requestLine(`2`, "slow"))
		<-app.started

		boom := errors.New("stdin broke")
		require.NoError(t, h.in.CloseWithError(boom))
		c := h.closedReason()
		require.ErrorIs(t, c.reason, listen.ErrDisconnected)
		require.ErrorIs(t, c.reason, boom)
		app.release <- struct{}{}
		rest, err := h.wait()
		require.ErrorIs(t, err, boom)
		require.Len(t, rest, 1, "the handler call is answered")
		require.Equal(t, `2`, rest[0].id())
	})
}

// A reader Serve cannot interrupt (no deadline, no Close), like a blocking
// os.Stdin with Options.BlockingFiles: Serve returns once everything is
// written and leaves the pending Read behind; Shutdown waits for that Read
// too.
func TestShutdownWithAReaderThatCannotBeInterrupted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := listentest.NewSource()
		srv := newServer(t, src, options{Listen: listen.Options{Capabilities: testCaps}, Options: stdio.Options{OmitShutdownCancelled: true}})
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		lines := make(chan msg, 16)
		go func() {
			sc := bufio.NewScanner(outR)
			for sc.Scan() {
				lines <- decode(t, sc.Bytes())
			}
			close(lines)
		}()
		done := make(chan error, 1)
		go func() {
			done <- srv.Serve(t.Context(), struct{ io.Reader }{inR}, outW)
			outW.Close()
		}()
		_, err := io.WriteString(inW, listenLine(`1`, `{"toolsListChanged":true}`)+"\n")
		require.NoError(t, err)
		requireAck(t, <-lines, `1`)

		shut := make(chan error, 1)
		go func() { shut <- srv.Shutdown(context.Background()) }()
		requireCompletion(t, <-lines, `1`)
		require.ErrorIs(t, <-done, stdio.ErrServerClosed, "Serve returns without the pending Read")
		_, ok := <-lines
		require.False(t, ok, "nothing more was written")
		synctest.Wait()
		require.Empty(t, shut, "Shutdown waits for the Read left behind")

		// The next line unblocks the Read; it is not handled.
		_, err = io.WriteString(inW, requestLine(`2`, "tools/list")+"\n")
		require.NoError(t, err)
		require.NoError(t, <-shut)
		inW.Close()
		inR.Close()
	})
}

// A message already queued for a listen when its cancellation is read is
// dropped: nothing more is written for a cancelled listen, and it is closed
// as cancelled.
func TestCancelDropsAQueuedMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := listentest.NewSource()
		srv := newServer(t, src, options{Listen: listen.Options{Capabilities: testCaps}})
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		done := make(chan error, 1)
		go func() {
			done <- srv.Serve(t.Context(), inR, outW)
			outW.Close()
		}()
		out := bufio.NewReader(outR)
		read := func() msg {
			line, err := out.ReadBytes('\n')
			require.NoError(t, err)
			return decode(t, line[:len(line)-1])
		}
		send := func(line string) {
			_, err := io.WriteString(inW, line+"\n")
			require.NoError(t, err)
		}

		send(listenLine(`"y"`, `{"toolsListChanged":true}`))
		y := <-src.Opened()
		requireAck(t, read(), `"y"`)
		send(listenLine(`"x"`, `{"toolsListChanged":true}`))
		x := <-src.Opened()
		requireAck(t, read(), `"x"`)

		y.Send(listen.ToolsListChanged())
		synctest.Wait() // y's notification is being written: blocked, nobody reads
		x.Send(listen.ToolsListChanged())
		synctest.Wait() // x's is queued behind it
		send(cancelLine(`"x"`, "stop"))
		// x is closed at once, while the writer is still blocked.
		// Its reason is the cancellation, as for a listen with nothing
		// queued: not a disconnection (the client is still there).
		c := nextClose(src)
		require.Equal(t, `"x"`, c.id)
		require.ErrorIs(t, c.reason, listen.ErrCancelled)
		require.NotErrorIs(t, c.reason, listen.ErrDisconnected)
		require.EqualError(t, c.reason, "listen: subscription cancelled: stop")
		require.Equal(t, "cancelled", listen.Classify(c.reason))

		require.Equal(t, `"y"`, read().subID())
		y.Send(listen.ToolsListChanged().WithMetadata(map[string]any{"second": true}))
		// Had x's queued notification been written, it would come first.
		m := read()
		require.Equal(t, `"y"`, m.subID())
		var meta map[string]any
		m.param("_meta", &meta)
		require.Equal(t, true, meta["second"])

		inW.Close()
		require.NoError(t, <-done)
		rest, err := io.ReadAll(out)
		require.NoError(t, err)
		require.Empty(t, rest)
	})
}

func TestSupportedVersionsOption(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, t.Context(), nil, &options{Listen: listen.Options{SupportedVersions: []string{spec.ProtocolVersion}}})
		h.send(listenLineVersion(`1`, `{}`, "2099-01-01"))
		m := h.recv()
		requireError(t, m, `1`, jsonrpc.CodeUnsupportedProtocolVersion, core.UnsupportedVersion)
		require.JSONEq(t, `{"supported":["2026-07-28"],"requested":"2099-01-01"}`, string(m.err().Data))
		rest, err := h.closeInput()
		require.NoError(t, err)
		require.Empty(t, rest)
	})
}
