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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/core"
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

// Everything but listens and cancellations goes to the peer, in order:
// requests (under the connection's own ids), notifications and responses to
// the peer's own requests (which a Handler would have refused with -32600),
// each rebuilt from the members the connection read. Listens are served
// beside it; cancellations of ids not in flight, or malformed, are dropped.
func TestConnForwardsEverythingButListens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startConn(t, t.Context(), nil, nil)
		for _, m := range []string{
			`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25"}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","id":"srv-1","result":{"roots":[]}}`,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"no"}}`,
		} {
			h.send("  " + m + " \r")
		}
		a := h.openListen(`"a"`)
		for _, m := range []string{
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`,
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99,"reason":"unknown to the server"}}`,
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":[1]}}`,
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"init","requestId":"a"}}`,
			`{"params":{"name":"x"},"jsonrpc":"2.0","method":"tools/call","id":2,"Method":"ping","x":1}`,
		} {
			h.send(m)
		}
		h.send(cancelLine(`"a"`, "done"))
		requireReason(t, h.closedReason(), `"a"`, listen.ErrCancelled)
		_ = a
		h.send(`{"jsonrpc":"2.0","id":3,"method":"x"` /* not JSON */)
		requireError(t, h.recv(), "", jsonrpc.CodeParseError, "Parse error")
		h.send(`{"jsonrpc":"2.0","id":4,"result":{},"error":{}}`)
		requireError(t, h.recv(), `4`, jsonrpc.CodeInvalidRequest, "Invalid request: method must be a non-empty string")
		h.send(`{"jsonrpc":"2.0","id":5,"result":{},"result":{}}`)
		requireError(t, h.recv(), "", jsonrpc.CodeInvalidRequest, core.DuplicateMember)

		for _, want := range []string{
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","id":"srv-1","result":{"roots":[]}}`,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"no"}}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}`,
		} {
			require.Equal(t, want, h.peerRead())
		}
		h.quiet()
		msgs, end := h.peerReads()
		synctest.Wait()
		require.Empty(t, msgs, "listens and cancellations are not forwarded")

		require.NoError(t, h.in.Close())
		synctest.Wait()
		require.Empty(t, end, "no io.EOF before the peer answered what it was handed")
		h.peerWrite(`{"jsonrpc":"2.0","id":2,"result":{}}`)
		require.Equal(t, `2`, h.recv().id())
		h.peerWrite(`{"jsonrpc":"2.0","id":1,"result":{}}`)
		require.Equal(t, `"init"`, h.recv().id())
		require.ErrorIs(t, <-end, io.EOF)
		rest, err := h.endConn(false)
		require.NoError(t, err)
		require.Empty(t, rest)
	})
}

// The peer knows every request by an id of the connection's own, counting
// up from 1, and its answer reaches the client with the client's exact id
// token, whatever that token is (ids a float64 or an int64 would round or
// merge, escapes, the string "7" beside the integer 7), in any order. An
// answer under an id the peer was not given, or given and answered, is
// dropped.
func TestConnGivesThePeerItsOwnIDs(t *testing.T) {
	ids := []string{`9007199254740993`, `9007199254740992`, `-0`, `0`, `"\u0041"`, `"A"`, `"7"`, `7`, `12345678901234567890123`}
	synctest.Test(t, func(t *testing.T) {
		h := startConn(t, t.Context(), nil, &options{Options: stdio.Options{MaxInFlight: len(ids)}})
		for _, id := range ids {
			h.send(requestLine(id, "tools/list"))
		}
		for i := range ids {
			require.Equal(t, requestLine(fmt.Sprint(i+1), "tools/list"), h.peerRead())
		}
		for i := len(ids) - 1; i >= 0; i-- {
			h.peerWrite(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"n":%d}}`, i+1, i))
			require.Equal(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"n":%d}}`, ids[i], i), string(h.recv().raw))
		}
		// Answered once only; never given; not a peer id at all.
		for _, id := range []string{`1`, `99`, `"1"`, `-1`, `1.0`, `null`} {
			h.peerWrite(`{"jsonrpc":"2.0","id":` + id + `,"result":{}}`)
		}
		h.quiet()
		// The ids are free again; the peer's ids are never reused.
		h.send(requestLine(ids[0], "ping"))
		require.Equal(t, requestLine(fmt.Sprint(len(ids)+1), "ping"), h.peerRead())
		h.peerWrite(fmt.Sprintf(`{"id":%d,"jsonrpc":"2.0","result":{}}`, len(ids)+1))
		require.Equal(t, `{"id":`+ids[0]+`,"jsonrpc":"2.0","result":{}}`, string(h.recv().raw))
		rest, err := h.endConn(true)
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
		h.send(requestLine(`"c-1"`, "tools/call"))
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
			`{"jsonrpc":"2.0","id":"c-1","result":{"content":[]}}`,
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

// A forwarded request the client cancels: its id is free at once, the
// cancellation reaches the peer naming the peer's id (reason and other
// params kept), and the peer's answer is dropped. The request holds its
// unit of MaxInFlight until that answer.
func TestConnCancelledForwardedRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startConn(t, t.Context(), nil, &options{Options: stdio.Options{MaxInFlight: 2}})
		h.send(requestLine(`5`, "tools/call"))
		require.Equal(t, requestLine(`1`, "tools/call"), h.peerRead())
		h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":"changed my mind","requestId":5,"_meta":{"k":1}}}`)
		require.Equal(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":"changed my mind","requestId":1,"_meta":{"k":1}}}`, h.peerRead())
		h.send(cancelLine(`5`, "again")) // not in flight any more: dropped

		h.send(requestLine(`5`, "tools/list"))
		require.Equal(t, requestLine(`2`, "tools/list"), h.peerRead(), "the id is free")
		h.send(requestLine(`6`, "ping"))
		h.quiet() // two units taken: the third request waits
		h.peerWrite(`{"jsonrpc":"2.0","id":1,"error":{"code":-32800,"message":"cancelled"}}`)
		require.Equal(t, requestLine(`3`, "ping"), h.peerRead(), "the dropped answer gave its unit back")
		h.quiet()

		h.peerWrite(`{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}`)
		require.Equal(t, `5`, h.recv().id())
		h.peerWrite(`{"jsonrpc":"2.0","id":3,"result":{}}`)
		require.Equal(t, `6`, h.recv().id())

		rest, err := h.endConn(true)
		require.NoError(t, err)
		require.Empty(t, rest)
	})
}

// Every listen on a Conn is the Server's, whatever version it names (the
// peer, whose ids are the connection's own, could not serve one): the
// version checks answer it, and the peer never sees it.
func TestConnServesEveryListen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startConn(t, t.Context(), nil, nil)
		msgs, end := h.peerReads()
		h.send(listenLineVersion(`1`, `{"toolsListChanged":true}`, "2027-01-01"))
		requireError(t, h.recv(), `1`, jsonrpc.CodeUnsupportedProtocolVersion, core.UnsupportedVersion)
		h.send(listenLineVersion(`2`, `{}`, "2025-06-18"))
		requireError(t, h.recv(), `2`, jsonrpc.CodeMethodNotFound, core.MethodNotFoundListen)
		h.send(`{"jsonrpc":"2.0","id":3,"method":"subscriptions/listen","params":{"notifications":{}}}`)
		requireError(t, h.recv(), `3`, jsonrpc.CodeInvalidParams, core.MetaObject)
		h.send(`{"jsonrpc":"2.0","id":4,"method":"subscriptions/listen","params":[1]}`)
		requireError(t, h.recv(), `4`, jsonrpc.CodeInvalidParams, core.ParamsObject)
		h.send(`{"jsonrpc":"2.0","method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v9"}}}`)
		h.openListen(`"mine"`)
		h.quiet()
		synctest.Wait()
		require.Empty(t, msgs)
		require.NoError(t, h.in.Close())
		require.ErrorIs(t, <-end, io.EOF)
		rest, err := h.endConn(false)
		require.NoError(t, err)
		require.Empty(t, rest)
		requireReason(t, h.closedReason(), `"mine"`, listen.ErrDisconnected)
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
			eof := make(chan error, 1)
			go func() {
				_, err := h.conn.ReadMessage(context.Background())
				eof <- err
			}()
			synctest.Wait()
			require.Empty(t, eof, "io.EOF waits for the peer's answer")
			h.peerWrite(`{"jsonrpc":"2.0","id":1,"result":{}}`)
			require.Equal(t, `1`, h.recv().id())
			require.ErrorIs(t, <-eof, io.EOF)
			synctest.Wait()
			require.Empty(t, h.done, "Serve waits for the peer")
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
			h.peerWrite(`{"jsonrpc":"2.0","id":1,"result":{}}`)
			require.Equal(t, `1`, h.recv().id())
			_, err := h.conn.ReadMessage(context.Background())
			require.ErrorIs(t, err, io.EOF)
			synctest.Wait()
			require.Empty(t, shut, "Shutdown waits for the peer")
			require.NoError(t, h.conn.Close())
			require.NoError(t, <-shut)
			rest, err := h.wait()
			require.ErrorIs(t, err, stdio.ErrServerClosed)
			require.Empty(t, rest)
		})
	})
	t.Run("write timeout: the peer's calls fail with it", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := newServer(t, listentest.NewSource(), options{Options: stdio.Options{WriteTimeout: time.Second}})
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
			srv := newServer(t, listentest.NewSource(), options{})
			require.NoError(t, srv.Shutdown(context.Background()))
			c := srv.NewConn(strings.NewReader(""), io.Discard)
			require.ErrorIs(t, c.Serve(t.Context()), stdio.ErrServerClosed)
			_, err := c.ReadMessage(context.Background())
			require.ErrorIs(t, err, stdio.ErrServerClosed)
			require.Error(t, c.Serve(t.Context()))

			srv = newServer(t, listentest.NewSource(), options{})
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
		srv := newServer(t, listentest.NewSource(), options{Options: stdio.Options{WriteTimeout: time.Hour}})
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
	srv := newServer(t, src, options{Listen: listen.Options{Capabilities: testCaps}})
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

// Lines gives the peer's side as lines: each message it reads ends with a
// newline, and each line it writes, whole or in pieces, by concurrent
// writers, is one message, with the same ids as ReadMessage and
// WriteMessage.
func TestConnLines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startConn(t, t.Context(), nil, nil)
		r, w := h.conn.Lines()
		br := bufio.NewReaderSize(r, 16) // smaller than a message: Read in pieces
		h.send(requestLine(`"a"`, "tools/list"))
		h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, requestLine(`1`, "tools/list")+"\n", line)
		line, err = br.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n", line)

		_, err = io.WriteString(w, `{"jsonrpc":"2.0","id":1,`)
		require.NoError(t, err)
		h.quiet() // half a line: nothing yet
		_, err = io.WriteString(w, `"result":{}}`+"\n\n"+`{"jsonrpc":"2.0","method":"notifications/message","params":{"n":0}}`+"\n")
		require.NoError(t, err)
		require.Equal(t, `{"jsonrpc":"2.0","id":"a","result":{}}`, string(h.recv().raw))
		require.Equal(t, "notifications/message", h.recv().method())

		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() {
				_, err := fmt.Fprintf(w, `{"jsonrpc":"2.0","method":"notifications/message","params":{"n":%d}}`+"\n", i+1)
				assert.NoError(t, err)
			})
		}
		seen := map[int]bool{}
		for range 4 {
			var n int
			h.recv().param("n", &n)
			seen[n] = true
		}
		wg.Wait()
		require.Len(t, seen, 4)

		_, err = io.WriteString(w, "not json\n")
		require.Error(t, err)
		require.NoError(t, h.in.Close())
		_, err = br.ReadString('\n')
		require.ErrorIs(t, err, io.EOF)
		rest, err := h.endConn(false)
		require.NoError(t, err)
		require.Empty(t, rest)
	})
}

// Stats counts the connections and the units of MaxInFlight taken; the
// listen.Server counts the listens open, opened, closed and refused.
func TestStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startConn(t, t.Context(), nil, &options{Listen: listen.Options{MaxStreams: 1}})
		synctest.Wait()
		require.Equal(t, stdio.Stats{Connections: 1}, h.srv.Stats())
		h.openListen(`"l"`)
		h.send(listenLine(`"over"`, `{}`))
		requireError(t, h.recv(), `"over"`, jsonrpc.CodeInternalError, core.CapacityExhausted)
		h.send(requestLine(`1`, "tools/list"))
		h.peerRead()
		synctest.Wait()
		require.Equal(t, stdio.Stats{Connections: 1, InFlight: 1}, h.srv.Stats())
		require.Equal(t, listen.Stats{Active: 1, Opened: 1, Refused: 1}, h.ls.Stats())
		h.peerWrite(`{"jsonrpc":"2.0","id":1,"result":{}}`)
		h.recv()
		h.send(cancelLine(`"l"`, "done"))
		h.closedReason()
		synctest.Wait()
		require.Equal(t, stdio.Stats{Connections: 1}, h.srv.Stats())
		require.Equal(t, listen.Stats{Opened: 1, Closed: 1, Refused: 1}, h.ls.Stats())
		rest, err := h.endConn(true)
		require.NoError(t, err)
		require.Empty(t, rest)
		require.NoError(t, h.srv.Shutdown(context.Background()))
		require.Equal(t, stdio.Stats{}, h.srv.Stats())
		require.Equal(t, listen.Stats{Opened: 1, Closed: 1, Refused: 1, Draining: true}, h.ls.Stats())
	})
}
