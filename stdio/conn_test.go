package stdio_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/stdio"
)

// peerRead returns the next message for the peer.
func (h *harness) peerRead() string {
	h.t.Helper()
	m, err := h.conn.ReadMessage(context.Background())
	require.NoError(h.t, err)
	return string(m)
}

// peerWrite writes a message as the peer.
func (h *harness) peerWrite(m string) {
	h.t.Helper()
	require.NoError(h.t, h.conn.WriteMessage(context.Background(), json.RawMessage(m)))
}

// peerReads collects, on a goroutine, every message for the peer until
// ReadMessage fails; its error is sent last.
func (h *harness) peerReads() (msgs chan string, end chan error) {
	msgs, end = make(chan string, 256), make(chan error, 1)
	go func() {
		for {
			m, err := h.conn.ReadMessage(context.Background())
			if err != nil {
				end <- err
				return
			}
			msgs <- string(m)
		}
	}()
	return msgs, end
}

// endConn closes the client's input, lets the peer read io.EOF (unless
// readEOF is false: it is read elsewhere), closes the peer and returns what
// Serve returned with the output not read yet.
func (h *harness) endConn(readEOF bool) (rest []msg, err error) {
	h.t.Helper()
	require.NoError(h.t, h.in.Close())
	if readEOF {
		_, err := h.conn.ReadMessage(context.Background())
		require.ErrorIs(h.t, err, io.EOF)
	}
	require.NoError(h.t, h.conn.Close())
	return h.wait()
}

// Everything but listens and the cancellations of listens goes to the peer,
// as the client sent it and in order: requests, notifications, responses to
// the peer's own requests (which a Handler would have refused with -32600),
// and cancellations of other ids. Listens are served beside it.
func TestConnForwardsEverythingButListens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startConn(t, t.Context(), nil, nil)
		forwarded := []string{
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","id":"srv-1","result":{"roots":[]}}`,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"no"}}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`,
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99,"reason":"unknown to the server"}}`,
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":[1]}}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}`,
		}
		for _, m := range forwarded[:4] {
			h.send("  " + m + " \r")
		}
		a := h.openListen(`"a"`)
		for _, m := range forwarded[4:] {
			h.send(m)
		}
		h.send(cancelLine(`"a"`, "done"))
		requireReason(t, h.closedReason(), `"a"`, listen.ErrCancelled)
		_ = a
		h.send(`{"jsonrpc":"2.0","id":3,"method":"x"` /* not JSON */)
		requireError(t, h.recv(), "", jsonrpc.CodeParseError, "Parse error")
		h.send(`{"jsonrpc":"2.0","id":4,"result":{},"error":{}}`)
		requireError(t, h.recv(), `4`, jsonrpc.CodeInvalidRequest, "Invalid request: method must be a non-empty string")

		for _, want := range forwarded {
			require.Equal(t, want, h.peerRead())
		}
		h.quiet()
		msgs, end := h.peerReads()
		synctest.Wait()
		require.Empty(t, msgs, "listens and their cancellations are not forwarded")

		require.NoError(t, h.in.Close())
		require.ErrorIs(t, <-end, io.EOF)
		rest, err := h.endConn(false)
		require.NoError(t, err)
		require.Empty(t, rest)
	})
}

// The peer answers, and writes messages nobody asked for (a log message, a
// request to the client), on the same connection as the listens.
func TestConnPeerWritesAnyMessageAnyTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startConn(t, t.Context(), nil, nil)
		h.peerWrite(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"up"}}`)
		require.Equal(t, "notifications/message", h.recv().method())

		st := h.openListen(`"l"`)
		h.send(requestLine(`1`, "tools/call"))
		require.Equal(t, requestLine(`1`, "tools/call"), h.peerRead())
		h.peerWrite(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}`)
		st.Send(listen.ToolsListChanged())
		h.peerWrite("{\n  \"jsonrpc\": \"2.0\",\n  \"id\": \"s-1\",\n  \"method\": \"roots/list\"\n}")
		h.peerWrite(`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`)

		var got []string
		for range 4 {
			m := h.recv()
			got = append(got, string(m.raw))
		}
		require.ElementsMatch(t, []string{
			`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}`,
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"l"}}}`,
			`{"jsonrpc":"2.0","id":"s-1","method":"roots/list"}`,
			`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`,
		}, got)

		// The client answers the peer's request: it goes to the peer.
		h.send(`{"jsonrpc":"2.0","id":"s-1","result":{"roots":[]}}`)
		require.Equal(t, `{"jsonrpc":"2.0","id":"s-1","result":{"roots":[]}}`, h.peerRead())

		rest, err := h.endConn(true)
		require.NoError(t, err)
		require.Empty(t, rest)
		requireReason(t, h.closedReason(), `"l"`, listen.ErrDisconnected)
	})
}

// Two listens on a Conn: cancelling one leaves the other receiving, and the
// peer sees neither.
func TestConnCancelOneOfTwoListens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startConn(t, t.Context(), nil, nil)
		msgs, end := h.peerReads()
		a := h.openListen(`"a"`)
		b := h.openListen(`"b"`)
		h.send(cancelLine(`"a"`, "enough"))
		requireReason(t, h.closedReason(), `"a"`, listen.ErrCancelled)
		for i := range 3 {
			b.Send(listen.ToolsListChanged().WithMetadata(map[string]any{"n": i}))
			m := h.recv()
			require.Equal(t, spec.MethodToolsListChanged, m.method())
			require.Equal(t, `"b"`, m.subID())
			<-b.Nexts()
		}
		select {
		case <-a.Closed():
		default:
			t.Fatal("a's stream is not closed")
		}
		h.quiet()
		synctest.Wait()
		require.Empty(t, msgs)

		require.NoError(t, h.in.Close())
		require.ErrorIs(t, <-end, io.EOF)
		rest, err := h.endConn(false)
		require.NoError(t, err)
		require.Empty(t, rest)
	})
}

// A forwarded request the client cancels: the cancellation goes to the
// peer, the id stays in flight until the peer answers, and that answer is
// dropped. Then the id is free again.
func TestConnCancelledForwardedRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startConn(t, t.Context(), nil, nil)
		h.send(requestLine(`5`, "tools/call"))
		require.Equal(t, requestLine(`5`, "tools/call"), h.peerRead())
		h.send(cancelLine(`5`, "changed my mind"))
		require.Equal(t, cancelLine(`5`, "changed my mind"), h.peerRead())

		h.send(requestLine(`5`, "tools/list"))
		requireError(t, h.recv(), `5`, jsonrpc.CodeInvalidRequest, spec.MsgDuplicateID)
		h.send(listenLine(`5`, `{}`))
		requireError(t, h.recv(), `5`, jsonrpc.CodeInvalidRequest, spec.MsgDuplicateID)

		h.peerWrite(`{"jsonrpc":"2.0","id":5,"error":{"code":-32800,"message":"cancelled"}}`)
		h.quiet()

		h.send(requestLine(`5`, "tools/list"))
		require.Equal(t, requestLine(`5`, "tools/list"), h.peerRead())
		h.peerWrite(`{"jsonrpc":"2.0","id":5,"result":{"tools":[]}}`)
		require.Equal(t, `5`, h.recv().id())

		rest, err := h.endConn(true)
		require.NoError(t, err)
		require.Empty(t, rest)
	})
}

// With ForwardOtherVersions, a listen whose _meta does not name 2026-07-28
// (another version, an older one the server speaks, none, unreadable
// params; request or notification) goes to the peer as it was read, and the
// peer's answer reaches the client; a listen naming 2026-07-28, even with
// invalid params, is the Server's. Without the option, the Server answers
// every listen (the -32022 here).
func TestConnForwardOtherVersions(t *testing.T) {
	forwarded := []string{
		listenLineVersion(`1`, `{"toolsListChanged":true}`, "2027-01-01"),
		listenLineVersion(`2`, `{}`, "2025-06-18"),
		`{"jsonrpc":"2.0","id":3,"method":"subscriptions/listen","params":{"notifications":{}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":20260728}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"subscriptions/listen","params":[1]}`,
		`{"jsonrpc":"2.0","id":6,"method":"subscriptions/listen"}`,
		`{"jsonrpc":"2.0","method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v9"}}}`,
	}
	synctest.Test(t, func(t *testing.T) {
		h := startConn(t, t.Context(), nil, &stdio.Options{ForwardOtherVersions: true})
		for _, m := range forwarded {
			h.send(m)
		}
		for _, want := range forwarded {
			require.Equal(t, want, h.peerRead())
		}
		h.peerWrite(`{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"the peer's words"}}`)
		requireError(t, h.recv(), `1`, -32022, "the peer's words")

		// 2026-07-28 listens are the Server's, valid or not.
		h.openListen(`"mine"`)
		h.send(`{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
		requireError(t, h.recv(), `7`, jsonrpc.CodeInvalidParams, spec.MsgMetaCapabilities)
		// A forwarded id is in flight until the peer answers it.
		h.send(listenLine(`2`, `{}`))
		requireError(t, h.recv(), `2`, jsonrpc.CodeInvalidRequest, spec.MsgDuplicateID)
		h.quiet()

		for _, id := range []string{"2", "3", "4", "5", "6"} {
			h.peerWrite(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32602,"message":"x"}}`)
			require.Equal(t, id, h.recv().id())
		}
		rest, err := h.endConn(true)
		require.NoError(t, err)
		require.Empty(t, rest)
		requireReason(t, h.closedReason(), `"mine"`, listen.ErrDisconnected)
	})
	synctest.Test(t, func(t *testing.T) {
		h := startConn(t, t.Context(), nil, nil)
		h.send(forwarded[0])
		requireError(t, h.recv(), `1`, jsonrpc.CodeUnsupportedProtocolVersion, spec.MsgUnsupportedVersion)
		h.quiet()
		rest, err := h.endConn(true)
		require.NoError(t, err)
		require.Empty(t, rest)
	})
}

// The ways a Conn ends.
func TestConnEndings(t *testing.T) {
	t.Run("EOF: the peer reads what was queued, answers, closes", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := startConn(t, t.Context(), nil, nil)
			h.openListen(`"l"`)
			h.send(requestLine(`1`, "tools/call"))
			h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			require.NoError(t, h.in.Close())
			requireReason(t, h.closedReason(), `"l"`, listen.ErrDisconnected)
			require.Equal(t, requestLine(`1`, "tools/call"), h.peerRead())
			require.Equal(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, h.peerRead())
			_, err := h.conn.ReadMessage(context.Background())
			require.ErrorIs(t, err, io.EOF)
			synctest.Wait()
			require.Empty(t, h.done, "Serve waits for the peer")
			h.peerWrite(`{"jsonrpc":"2.0","id":1,"result":{}}`)
			require.Equal(t, `1`, h.recv().id())
			require.NoError(t, h.conn.Close())
			rest, err := h.wait()
			require.NoError(t, err)
			require.Empty(t, rest)
			_, err = h.conn.ReadMessage(context.Background())
			require.ErrorIs(t, err, stdio.ErrConnClosed)
		})
	})
	t.Run("Close drains and Serve returns nil", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := startConn(t, t.Context(), nil, nil)
			h.openListen(`"l"`)
			pending := make(chan error, 1)
			go func() {
				_, err := h.conn.ReadMessage(context.Background())
				pending <- err
			}()
			synctest.Wait()
			require.NoError(t, h.conn.Close())
			require.NoError(t, h.conn.Close(), "Close is idempotent")
			require.ErrorIs(t, <-pending, stdio.ErrConnClosed, "a pending ReadMessage returns")
			require.Equal(t, spec.MethodCancelled, h.recv().method())
			requireCompletion(t, h.recv(), `"l"`)
			requireReason(t, h.closedReason(), `"l"`, listen.ErrShutdown)
			rest, err := h.wait()
			require.NoError(t, err)
			require.Empty(t, rest)
			err = h.conn.WriteMessage(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","method":"x"}`))
			require.ErrorIs(t, err, stdio.ErrConnClosed)
		})
	})
	t.Run("Shutdown: EOF for the peer, which answers and closes", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := startConn(t, t.Context(), nil, nil)
			h.openListen(`"l"`)
			h.send(requestLine(`1`, "tools/call"))
			require.Equal(t, requestLine(`1`, "tools/call"), h.peerRead())
			shut := make(chan error, 1)
			go func() { shut <- h.srv.Shutdown(context.Background()) }()
			require.Equal(t, spec.MethodCancelled, h.recv().method())
			requireCompletion(t, h.recv(), `"l"`)
			_, err := h.conn.ReadMessage(context.Background())
			require.ErrorIs(t, err, io.EOF)
			synctest.Wait()
			require.Empty(t, shut, "Shutdown waits for the peer")
			h.peerWrite(`{"jsonrpc":"2.0","id":1,"result":{}}`)
			require.Equal(t, `1`, h.recv().id())
			require.NoError(t, h.conn.Close())
			require.NoError(t, <-shut)
			rest, err := h.wait()
			require.ErrorIs(t, err, stdio.ErrServerClosed)
			require.Empty(t, rest)
		})
	})
	t.Run("write timeout: the peer's calls fail with it", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := newServer(t, listentest.NewSource(), stdio.Options{WriteTimeout: time.Second})
			inR, inW := io.Pipe()
			outR, outW := io.Pipe() // never read
			c := srv.NewConn(inR, outW)
			done := make(chan error, 1)
			go func() { done <- c.Serve(t.Context()) }()
			wrote := make(chan error, 1)
			go func() {
				wrote <- c.WriteMessage(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","method":"a"}`))
			}()
			require.ErrorIs(t, <-done, stdio.ErrWriteTimeout)
			require.ErrorIs(t, <-wrote, stdio.ErrWriteTimeout)
			_, err := c.ReadMessage(context.Background())
			require.ErrorIs(t, err, stdio.ErrWriteTimeout)
			require.ErrorIs(t, c.WriteMessage(context.Background(), json.RawMessage(`{}`)), stdio.ErrWriteTimeout)
			require.NoError(t, c.Close())
			outR.Close()
			inW.Close()
		})
	})
	t.Run("Serve after Shutdown, Serve twice", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := newServer(t, listentest.NewSource(), stdio.Options{})
			require.NoError(t, srv.Shutdown(context.Background()))
			c := srv.NewConn(strings.NewReader(""), io.Discard)
			require.ErrorIs(t, c.Serve(t.Context()), stdio.ErrServerClosed)
			_, err := c.ReadMessage(context.Background())
			require.ErrorIs(t, err, stdio.ErrServerClosed)
			require.Error(t, c.Serve(t.Context()))

			srv = newServer(t, listentest.NewSource(), stdio.Options{})
			c = srv.NewConn(strings.NewReader(""), io.Discard)
			require.NoError(t, c.Close(), "closed before Serve")
			require.NoError(t, c.Serve(t.Context()))
			require.EqualError(t, c.Serve(t.Context()), "stdio: Conn.Serve called more than once")
		})
	})
}

func TestConnWriteMessageErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startConn(t, t.Context(), nil, nil)
		for _, bad := range []string{``, `not json`, `{"a":`, "{\n", `[1]`, `"s"`} {
			err := h.conn.WriteMessage(context.Background(), json.RawMessage(bad))
			require.Error(t, err, "%q", bad)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		require.ErrorIs(t, h.conn.WriteMessage(ctx, json.RawMessage(`{"jsonrpc":"2.0","method":"x"}`)), context.Canceled)
		h.quiet()
		rest, err := h.endConn(true)
		require.NoError(t, err)
		require.Empty(t, rest, "nothing was written")
	})
}

// A WriteMessage whose context ends while the writer is busy with another
// message writes nothing and says so.
func TestConnWriteMessageGivesUpWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(t, listentest.NewSource(), stdio.Options{WriteTimeout: time.Hour})
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		c := srv.NewConn(inR, outW)
		done := make(chan error, 1)
		go func() { done <- c.Serve(t.Context()) }()
		first := make(chan error, 1)
		go func() {
			first <- c.WriteMessage(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","method":"first"}`))
		}()
		synctest.Wait() // the writer is blocked on the first message
		ctx, cancel := context.WithCancel(context.Background())
		second := make(chan error, 1)
		go func() { second <- c.WriteMessage(ctx, json.RawMessage(`{"jsonrpc":"2.0","method":"second"}`)) }()
		synctest.Wait()
		cancel()
		require.ErrorIs(t, <-second, context.Canceled)
		out := bufio.NewReader(outR)
		line, err := out.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, `{"jsonrpc":"2.0","method":"first"}`+"\n", line)
		require.NoError(t, <-first)
		inW.Close()
		require.NoError(t, c.Close())
		require.NoError(t, <-done)
		outW.Close()
		rest, err := io.ReadAll(out)
		require.NoError(t, err)
		require.Empty(t, rest, "the second message was not written")
	})
}

// Many peer goroutines write at once while listens get events, over an
// os.Pipe with messages larger than the pipe's buffer: every output line is
// one whole message, each writer's messages come in its order, and nothing
// is lost. Run it under -race.
func TestConnConcurrentWritersNeverInterleave(t *testing.T) {
	const writers, perWriter, listens, events = 8, 24, 3, 40
	p := newOSPipes(t)
	src := listentest.NewSource()
	srv := newServer(t, src, stdio.Options{Listen: listen.Options{Capabilities: testCaps}})
	c := srv.NewConn(p.inR, p.outW)
	done := make(chan error, 1)
	go func() { done <- c.Serve(context.Background()) }()

	type line struct {
		Method string `json:"method"`
		Params struct {
			Meta   map[string]json.RawMessage `json:"_meta"`
			Writer int                        `json:"writer"`
			Seq    int                        `json:"seq"`
			Pad    string                     `json:"pad"`
		} `json:"params"`
	}
	lines := make(chan line, 1024)
	readErr := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(p.outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var l line
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				readErr <- fmt.Errorf("not one message: %.80q: %w", sc.Bytes(), err)
				return
			}
			lines <- l
		}
		readErr <- sc.Err()
		close(lines)
	}()

	var streams []*listentest.Stream
	for i := range listens {
		id := fmt.Sprintf(`"l%d"`, i)
		_, err := io.WriteString(p.inW, listenLine(id, `{"toolsListChanged":true}`)+"\n")
		require.NoError(t, err)
		streams = append(streams, <-src.Opened())
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for s := range perWriter {
				pad := strings.Repeat(string(rune('a'+w)), (s%4)*25_000) // up to 75 KB
				m := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"writer":%d,"seq":%d,"pad":%q}}`, w, s, pad)
				if err := c.WriteMessage(context.Background(), json.RawMessage(m)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for _, st := range streams {
		wg.Go(func() {
			for range events {
				st.Send(listen.ToolsListChanged())
			}
		})
	}

	next := make([]int, writers)
	perListen := map[string]int{}
	acks := 0
	for acks+writers*perWriter+listens*events > 0 {
		l, ok := <-lines
		if !ok {
			break
		}
		switch l.Method {
		case spec.MethodAcknowledged:
			acks++
		case spec.MethodToolsListChanged:
			perListen[string(l.Params.Meta[spec.MetaSubscriptionID])]++
		case "notifications/message":
			require.Equal(t, next[l.Params.Writer], l.Params.Seq, "writer %d's order", l.Params.Writer)
			require.Len(t, l.Params.Pad, (l.Params.Seq%4)*25_000)
			next[l.Params.Writer]++
		default:
			t.Fatalf("unexpected %q", l.Method)
		}
		if acks == listens && perListen[`"l0"`]+perListen[`"l1"`]+perListen[`"l2"`] == listens*events && sumInts(next) == writers*perWriter {
			break
		}
	}
	wg.Wait()
	require.Equal(t, listens, acks)
	for i := range listens {
		require.Equal(t, events, perListen[fmt.Sprintf(`"l%d"`, i)])
	}
	for w := range writers {
		require.Equal(t, perWriter, next[w])
	}

	require.NoError(t, p.inW.Close())
	for range listens {
		nextClose(src)
	}
	_, err := c.ReadMessage(context.Background())
	require.ErrorIs(t, err, io.EOF)
	require.NoError(t, c.Close())
	require.NoError(t, <-done)
	require.NoError(t, p.outW.Close())
	require.NoError(t, <-readErr)
}

func sumInts(v []int) int {
	n := 0
	for _, x := range v {
		n += x
	}
	return n
}
