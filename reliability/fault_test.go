package reliability_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
)

// The exact messages of streamhttp's refusals these tests compare.
const (
	msgBodyTooLarge = "Request body too large"
)

// The fault matrix. Every case runs on both transports: streamhttp on real
// loopback HTTP, stdio on io.Pipe and on os.Pipe pairs, with the client's
// ending where it matters (HTTP: the client closes its connection; stdio:
// notifications/cancelled, or the client closes the server's input). Each
// case checks the terminal message the server wrote (from its own
// transcript, once everything stopped), that every stream the source opened
// was closed exactly once with the right reason class, that no Next was
// left blocked, that no goroutine is left (goleak, per case and for the
// package), and that the server still serves a new listen afterwards.

const toolsFilter = `{"toolsListChanged":true}`

func isHTTP(fx fixture) bool { _, ok := fx.(*httpFixture); return ok }

// wantStatus checks an HTTP response's status (no-op on stdio).
func wantStatus(t testing.TB, cs *clientStream, status int) {
	t.Helper()
	if cs.status != nil {
		assert.Equal(t, status, recv(t, cs.status, "the status of "+cs.id))
	}
}

// sourceCase is one misbehaviour of a Source.
type sourceCase struct {
	name string
	// usesEnding: the case ends with the client's ending, so it runs on
	// every ending of stdio (cancel and EOF).
	usesEnding bool
	run        func(t *testing.T, fx fixture, id string)
}

// openStream opens a listen for filter and returns its client stream and
// source stream once the acknowledgement was read.
func openStream(t *testing.T, fx fixture, id, filter string) (*clientStream, *faultStream) {
	t.Helper()
	cs := fx.listen(t, id, filter)
	requireAck(t, cs.recv(t), id)
	wantStatus(t, cs, http.StatusOK)
	return cs, fx.src().stream(t, id)
}

// failsAfter checks a stream that fails after its acknowledgement and the
// given notifications: the failure frame, reason Failed matching is.
func failsAfter(events []listen.Event, filter string, notes []string, is error) func(t *testing.T, fx fixture, id string) {
	return failsWith(plan{events: events}, filter, notes, is)
}

func failsWith(p plan, filter string, notes []string, is error) func(t *testing.T, fx fixture, id string) {
	return func(t *testing.T, fx fixture, id string) {
		fx.src().script(id, p)
		cs, st := openStream(t, fx, id, filter)
		for _, method := range notes {
			requireNotification(t, cs.recv(t), id, method)
		}
		requireFailure(t, cs.recv(t), id)
		cs.end(t)
		reason := wantClass(t, st, "error")
		assert.ErrorIs(t, reason, listen.ErrFailed)
		assert.ErrorIs(t, reason, is)
		fx.probe(t)
		fx.teardown(t)
		wantTerminal(t, fx, id, "failure")
	}
}

func sourceCases() []sourceCase {
	feedBroke := errors.New("feed broke")
	return []sourceCase{
		{name: "Open panics", run: func(t *testing.T, fx fixture, id string) {
			fx.src().script(id, plan{openPanic: true})
			cs := fx.listen(t, id, toolsFilter)
			requireError(t, cs.recv(t), id, jsonrpc.CodeInternalError, core.SourceFailedToOpen)
			wantStatus(t, cs, http.StatusInternalServerError)
			cs.end(t)
			assert.Empty(t, fx.src().all(), "no stream was opened")
			fx.probe(t)
			fx.teardown(t)
			wantTerminal(t, fx, id, "error")
		}},
		{name: "the first Next panics", run: func(t *testing.T, fx fixture, id string) {
			fx.src().script(id, plan{nextPanicAt: 1})
			cs, st := openStream(t, fx, id, toolsFilter)
			requireFailure(t, cs.recv(t), id)
			cs.end(t)
			reason := wantClass(t, st, "error")
			var pe *listen.PanicError
			if assert.ErrorAs(t, reason, &pe) {
				assert.Equal(t, "Stream.Next", pe.Op)
			}
			fx.probe(t)
			fx.teardown(t)
			wantTerminal(t, fx, id, "failure")
		}},
		{name: "Next panics after an event", run: func(t *testing.T, fx fixture, id string) {
			fx.src().script(id, plan{events: []listen.Event{listen.ToolsListChanged()}, nextPanicAt: 2})
			cs, st := openStream(t, fx, id, toolsFilter)
			requireNotification(t, cs.recv(t), id, spec.MethodToolsListChanged)
			requireFailure(t, cs.recv(t), id)
			cs.end(t)
			var pe *listen.PanicError
			assert.ErrorAs(t, wantClass(t, st, "error"), &pe)
			fx.probe(t)
			fx.teardown(t)
			wantTerminal(t, fx, id, "failure")
		}},
		{name: "Close panics after the completion", run: func(t *testing.T, fx fixture, id string) {
			fx.src().script(id, plan{events: []listen.Event{listen.ToolsListChanged()}, end: listen.ErrClosed, closePanic: true})
			cs, st := openStream(t, fx, id, toolsFilter)
			requireNotification(t, cs.recv(t), id, spec.MethodToolsListChanged)
			requireCompletion(t, cs.recv(t), id)
			cs.end(t)
			wantClass(t, st, "complete")
			fx.probe(t)
			fx.teardown(t)
			wantTerminal(t, fx, id, "complete")
		}},
		{name: "Close panics after a failure", run: func(t *testing.T, fx fixture, id string) {
			fx.src().script(id, plan{end: feedBroke, closePanic: true})
			cs, st := openStream(t, fx, id, toolsFilter)
			requireFailure(t, cs.recv(t), id)
			cs.end(t)
			assert.ErrorIs(t, wantClass(t, st, "error"), feedBroke)
			fx.probe(t)
			fx.teardown(t)
			wantTerminal(t, fx, id, "failure")
		}},
		{name: "Close panics when the client ends", usesEnding: true, run: func(t *testing.T, fx fixture, id string) {
			fx.src().script(id, plan{closePanic: true})
			cs, st := openStream(t, fx, id, toolsFilter)
			st.waitNext(t, 1)
			fx.abort(t, cs)
			wantClass(t, st, fx.ending().class())
			fx.probe(t)
			fx.teardown(t)
			wantTerminal(t, fx, id, "none")
		}},
		{name: "Open returns a stream and an error", run: func(t *testing.T, fx fixture, id string) {
			fx.src().script(id, plan{openErrWithStream: feedBroke})
			cs := fx.listen(t, id, toolsFilter)
			requireError(t, cs.recv(t), id, jsonrpc.CodeInternalError, core.SourceFailedToOpen)
			wantStatus(t, cs, http.StatusInternalServerError)
			cs.end(t)
			assert.ErrorIs(t, wantClass(t, fx.src().stream(t, id), "error"), feedBroke)
			assert.Empty(t, fx.hookReasons(id), "no subscription was opened")
			fx.probe(t)
			fx.teardown(t)
			wantTerminal(t, fx, id, "error")
		}},
		{name: "Next fails", run: failsWith(plan{end: feedBroke}, toolsFilter, nil, feedBroke)},
		{name: "Next blocks until Close and the client ends", usesEnding: true, run: func(t *testing.T, fx fixture, id string) {
			cs, st := openStream(t, fx, id, toolsFilter)
			st.waitNext(t, 1)
			fx.abort(t, cs)
			wantClass(t, st, fx.ending().class())
			await(t, st.closed, "the release of the blocked Next")
			fx.probe(t)
			fx.teardown(t)
			wantTerminal(t, fx, id, "none")
		}},
		{name: "Next ignores Close", usesEnding: true, run: func(t *testing.T, fx fixture, id string) {
			stuck := fx.gate()
			fx.src().script(id, plan{nextGate: stuck})
			cs, st := openStream(t, fx, id, toolsFilter)
			st.waitNext(t, 1)
			fx.abort(t, cs)
			reason := wantClass(t, st, fx.ending().class())
			// The transport gives up on the stuck Next after ReleaseTimeout
			// and ends the stream (OnClose), while Next is still blocked.
			assert.Equal(t, listen.Classify(reason), listen.Classify(fx.onClose(t, id)))
			assert.Equal(t, st.nextCalls.Load()-1, st.nextsOut.Load(), "Next is still blocked")
			fx.probe(t)
			stuck.release() // the worker goroutine exits once Next returns
			fx.teardown(t)
			wantTerminal(t, fx, id, "none")
		}},
		{name: "Close blocks when the client ends", usesEnding: true, run: func(t *testing.T, fx fixture, id string) {
			slow := fx.gate()
			fx.src().script(id, plan{closeGate: slow})
			cs, st := openStream(t, fx, id, toolsFilter)
			st.waitNext(t, 1)
			fx.abort(t, cs)
			await(t, st.closeEntered, "Close")
			fx.probe(t) // served while that Close blocks
			slow.release()
			await(t, st.closed, "Close to return")
			wantClass(t, st, fx.ending().class())
			fx.teardown(t)
			wantTerminal(t, fx, id, "none")
		}},
		{name: "an id reused while the cancelled listen's Close blocks", usesEnding: true, run: func(t *testing.T, fx fixture, id string) {
			if fx.ending() == endEOF {
				t.Skip("an id is reused on the same connection")
			}
			slow := fx.gate()
			fx.src().script(id, plan{closeGate: slow})
			cs, st := openStream(t, fx, id, toolsFilter)
			st.waitNext(t, 1)
			fx.abort(t, cs)
			await(t, st.closeEntered, "Close")
			// The same id again, while the first stream's Close still runs:
			// a new, independent listen (on stdio the cancellation freed
			// the id at once; on HTTP ids are per request).
			fx.src().script(id, plan{events: []listen.Event{listen.ToolsListChanged()}, end: listen.ErrClosed})
			cs2, st2 := openStream(t, fx, id, toolsFilter)
			require.NotSame(t, st, st2)
			requireNotification(t, cs2.recv(t), id, spec.MethodToolsListChanged)
			requireCompletion(t, cs2.recv(t), id)
			cs2.end(t)
			wantClass(t, st2, "complete")
			slow.release()
			wantClass(t, st, fx.ending().class())
			fx.probe(t)
			fx.teardown(t)
			wantTerminal(t, fx, id, "complete") // the second listen's, alone
		}},
		{name: "Close blocks after the completion", run: func(t *testing.T, fx fixture, id string) {
			slow := fx.gate()
			fx.src().script(id, plan{events: []listen.Event{listen.ToolsListChanged()}, end: listen.ErrClosed, closeGate: slow})
			cs, st := openStream(t, fx, id, toolsFilter)
			requireNotification(t, cs.recv(t), id, spec.MethodToolsListChanged)
			requireCompletion(t, cs.recv(t), id) // written before Close
			await(t, st.closeEntered, "Close")
			fx.probe(t)
			slow.release()
			cs.end(t)
			wantClass(t, st, "complete")
			fx.teardown(t)
			wantTerminal(t, fx, id, "complete")
		}},
		{name: "a drain releases a blocked Next", run: func(t *testing.T, fx fixture, id string) {
			cs, st := openStream(t, fx, id, toolsFilter)
			st.waitNext(t, 1)
			fx.shutdown(t)
			m := cs.recv(t)
			if m.method() == spec.MethodCancelled { // stdio sends it first
				assert.Equal(t, id, m.subID())
				m = cs.recv(t)
			}
			requireCompletion(t, m, id)
			cs.end(t)
			assert.ErrorIs(t, wantClass(t, st, "shutdown"), listen.ErrShutdown)
			fx.probeRefused(t)
			fx.teardown(t)
			wantTerminal(t, fx, id, "complete")
		}},
		// Events that fail validation end the stream with the failure
		// frame, whether the filter selects them or not.
		{name: "a zero event", run: failsAfter([]listen.Event{{}}, toolsFilter, nil, listen.ErrInvalidEvent)},
		{name: "a resource update with a relative URI", run: failsAfter(
			[]listen.Event{listen.ResourceUpdated("relative/path")}, `{"resourceSubscriptions":["file:///a"]}`, nil, listen.ErrInvalidEvent)},
		{name: "a list change with a URI", run: failsAfter(
			[]listen.Event{{Kind: listen.KindToolsListChanged, URI: "file:///a"}}, toolsFilter, nil, listen.ErrInvalidEvent)},
		{name: "a core event with extension fields", run: failsAfter(
			[]listen.Event{{Kind: listen.KindToolsListChanged, ExtensionID: "x"}}, toolsFilter, nil, listen.ErrInvalidEvent)},
		{name: "params that are not JSON", run: failsAfter(
			[]listen.Event{listen.ToolsListChanged().WithParams(map[string]any{"f": func() {}})}, toolsFilter, nil, listen.ErrInvalidEvent)},
		{name: "params holding invalid raw JSON", run: failsAfter(
			[]listen.Event{listen.ToolsListChanged().WithParams(map[string]any{"raw": json.RawMessage(`{"a":`)})}, toolsFilter, nil, listen.ErrInvalidEvent)},
		{name: "NaN in metadata", run: failsAfter(
			[]listen.Event{listen.ToolsListChanged().WithMetadata(map[string]any{"x": math.NaN()})}, toolsFilter, nil, listen.ErrInvalidEvent)},
		{name: "an invalid event the filter does not select", run: failsAfter(
			[]listen.Event{listen.PromptsListChanged().WithParams(map[string]any{"c": make(chan int)})}, toolsFilter, nil, listen.ErrInvalidEvent)},
		{name: "an invalid event after a valid one", run: failsAfter(
			[]listen.Event{listen.ToolsListChanged(), listen.ResourceUpdated("")}, toolsFilter,
			[]string{spec.MethodToolsListChanged}, listen.ErrInvalidEvent)},
	}
}

func TestFaultSourceMatrix(t *testing.T) {
	for _, tc := range sourceCases() {
		for _, kind := range fixtureKinds() {
			if !tc.usesEnding && strings.HasSuffix(kind.name, "-eof") {
				continue // the client's ending plays no part
			}
			t.Run(tc.name+"/"+strings.TrimSuffix(kind.name, "-cancel"), func(t *testing.T) {
				runCase(t, kind, func(t *testing.T, fx fixture) { tc.run(t, fx, `"fault"`) })
			})
		}
	}
}

// step is a point in a listen's opening where the client goes away.
type step struct {
	name string
	run  func(t *testing.T, fx fixture, id string)
}

// The client goes away at every step of open → acknowledgement → worker
// start → first event. HTTP: it closes its connection; stdio: it sends
// notifications/cancelled, or closes the server's input. The stream is
// closed once with the ending's class, and nothing terminal is written.
func TestFaultClientGoneAtEveryStep(t *testing.T) {
	steps := []step{
		{"in Source.Open", func(t *testing.T, fx fixture, id string) {
			g := fx.gate()
			fx.src().script(id, plan{openGate: g})
			cs := fx.listen(t, id, toolsFilter)
			call := fx.src().enteredOpen(t, id)
			fx.abort(t, cs)
			// Open's context ends with the client: stdio documents it; on
			// HTTP it does too (the streamhttp package documentation says
			// otherwise, under "Goroutines and ownership": it is stale).
			await(t, call.ctx.Done(), "the end of Source.Open's context")
			g.release() // Open returns a stream anyway
			wantClass(t, fx.src().stream(t, id), fx.ending().class())
			fx.probe(t)
			fx.teardown(t)
			wantTerminal(t, fx, id, "none")
		}},
		{"in Source.Open, which gives up with its context", func(t *testing.T, fx fixture, id string) {
			g := fx.gate()
			fx.src().script(id, plan{openGate: g, openHonoursCtx: true})
			cs := fx.listen(t, id, toolsFilter)
			call := fx.src().enteredOpen(t, id)
			fx.abort(t, cs)
			await(t, call.ctx.Done(), "the end of Source.Open's context")
			fx.probe(t)
			fx.teardown(t)
			for _, st := range fx.src().all() {
				assert.NotEqual(t, id, st.id, "Open returned no stream")
			}
			if isHTTP(fx) {
				// The handler answers the failed open to a client that is
				// gone: harmless, nobody reads it.
				if msgs := fx.transcript(t, id); len(msgs) > 0 {
					t.Logf("written to the gone client: %s", msgs[0])
					wantTerminal(t, fx, id, "error")
				}
				return
			}
			wantTerminal(t, fx, id, "none")
		}},
		{"before the acknowledgement", func(t *testing.T, fx fixture, id string) {
			entered, g := fx.holdOnOpen(id)
			cs := fx.listen(t, id, toolsFilter)
			await(t, entered, "OnOpen")
			fx.abort(t, cs)
			g.release()
			wantClass(t, fx.src().stream(t, id), fx.ending().class())
			fx.probe(t)
			fx.teardown(t)
			wantTerminal(t, fx, id, "none")
		}},
		{"while the acknowledgement is written", func(t *testing.T, fx fixture, id string) {
			started, g := fx.holdFirstWrite(id)
			cs := fx.listen(t, id, toolsFilter)
			await(t, started, "the acknowledgement's write")
			st := fx.src().stream(t, id)
			fx.abort(t, cs)
			if fx.ending() == endCancel {
				// The cancellation frees the stream at once, write or not.
				await(t, st.closeEntered, "the cancellation")
			}
			g.release()
			wantClass(t, st, fx.ending().class())
			fx.probe(t)
			fx.teardown(t)
			wantTerminal(t, fx, id, "none")
		}},
		{"in the first Next", func(t *testing.T, fx fixture, id string) {
			cs, st := openStream(t, fx, id, toolsFilter)
			st.waitNext(t, 1)
			fx.abort(t, cs)
			wantClass(t, st, fx.ending().class())
			fx.probe(t)
			fx.teardown(t)
			wantTerminal(t, fx, id, "none")
		}},
		{"after the first event", func(t *testing.T, fx fixture, id string) {
			fx.src().script(id, plan{events: []listen.Event{listen.ToolsListChanged()}})
			cs, st := openStream(t, fx, id, toolsFilter)
			requireNotification(t, cs.recv(t), id, spec.MethodToolsListChanged)
			st.waitNext(t, 2)
			fx.abort(t, cs)
			wantClass(t, st, fx.ending().class())
			fx.probe(t)
			fx.teardown(t)
			wantTerminal(t, fx, id, "none")
		}},
	}
	for _, s := range steps {
		for _, kind := range fixtureKinds() {
			t.Run(s.name+"/"+kind.name, func(t *testing.T) {
				runCase(t, kind, func(t *testing.T, fx fixture) { s.run(t, fx, `"gone"`) })
			})
		}
	}
}

// A client that goes away while a large event is being written: the write
// fails, the stream is closed as Disconnected (not by a deadline), nothing
// else is written, and the server serves others. On stdio the lost output
// ends the whole connection: every listen on it is disconnected.
func TestFaultClientGoneMidWrite(t *testing.T) {
	pad := strings.Repeat("x", 4<<20)
	big := listen.ToolsListChanged().WithParams(map[string]any{"pad": pad})

	t.Run("http", func(t *testing.T) {
		kind := fixtureKind{"http", func(t testing.TB) fixture { return newHTTPFixture(t, 16<<10) }}
		runCase(t, kind, func(t *testing.T, f fixture) {
			fx := f.(*httpFixture)
			id := `"big"`
			feed := make(chan listen.Event)
			fx.src().script(id, plan{feed: feed})
			ex := fx.exchange(id)
			bigStarted := make(chan struct{})
			ex.mu.Lock()
			ex.big = bigStarted
			ex.mu.Unlock()

			// A raw client: it reads the acknowledgement, a little of the
			// large event, then closes its connection.
			conn, err := net.Dial("tcp", fx.addr())
			require.NoError(t, err)
			defer conn.Close()
			require.NoError(t, conn.(*net.TCPConn).SetReadBuffer(16<<10))
			body := listenBody(id, toolsFilter)
			_, err = fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
				"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"+
				"Mcp-Method: subscriptions/listen\r\nX-Test-Id: %s\r\nContent-Length: %d\r\n\r\n%s",
				fx.addr(), id, len(body), body)
			require.NoError(t, err)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			br := bufio.NewReaderSize(resp.Body, 512)
			sse := listentest.NewSSEReader(br)
			data, err := sse.Data()
			require.NoError(t, err)
			ack, err := parseMsg(data)
			require.NoError(t, err)
			requireAck(t, ack, id)
			st := fx.src().stream(t, id)
			st.waitNext(t, 1)

			feed <- big
			await(t, bigStarted, "the large write")
			_, err = io.ReadFull(br, make([]byte, 4<<10))
			require.NoError(t, err, "some of the large event arrives")
			require.NoError(t, conn.Close())

			reason := wantClass(t, st, "disconnected")
			assert.NotErrorIs(t, reason, os.ErrDeadlineExceeded, "cut by the disconnect, not by a deadline")
			assert.ErrorIs(t, fx.onClose(t, id), listen.ErrDisconnected)
			fx.probe(t)
			fx.teardown(t)
			wantTerminal(t, fx, id, "none")
		})
	})
	for _, osPipe := range []bool{false, true} {
		name := "stdio-iopipe"
		if osPipe {
			name = "stdio-ospipe"
		}
		t.Run(name, func(t *testing.T) {
			kind := fixtureKind{name, func(t testing.TB) fixture { return newStdioFixture(t, osPipe, endEOF) }}
			runCase(t, kind, func(t *testing.T, f fixture) {
				fx := f.(*stdioFixture)
				c := fx.main
				by := `"bystander"`
				_, bySt := openStream(t, fx, by, toolsFilter)
				bySt.waitNext(t, 1)

				id := `"big"`
				feed := make(chan listen.Event)
				fx.src().script(id, plan{feed: feed})
				_, st := openStream(t, fx, id, toolsFilter)
				st.waitNext(t, 1)

				bigStarted := make(chan struct{})
				c.holdMu.Lock()
				c.bigStarted = bigStarted
				c.holdMu.Unlock()
				c.readGate.Store(fx.gate()) // the client stops reading
				feed <- big
				await(t, bigStarted, "the large write")
				await(t, c.readHeld, "the first bytes of the large write")
				require.NoError(t, c.outR.Close()) // the client goes away

				err := recv(t, c.served, "Serve")
				c.served <- err
				if osPipe {
					assert.ErrorIs(t, err, syscall.EPIPE)
				} else {
					assert.ErrorIs(t, err, io.ErrClosedPipe)
				}
				assert.ErrorIs(t, wantClass(t, st, "disconnected"), err.(interface{ Unwrap() error }).Unwrap())
				wantClass(t, bySt, "disconnected")
				fx.probe(t) // on a new connection
				fx.teardown(t)
				wantTerminal(t, fx, id, "none")
				wantTerminal(t, fx, by, "none")
			})
		})
	}
}

// Oversized and malformed requests get an error response (or, for HTTP,
// the status of their check), never reach the source, and leave the server
// (on stdio, the same connection) serving.
func TestFaultMalformedRequests(t *testing.T) {
	over := listenBody(`"big"`, `{"pad":"`+strings.Repeat("x", maxRequestBytes)+`"}`)
	huge := listenBody(`"huge"`, `{"pad":"`+strings.Repeat("x", 8<<20)+`"}`)
	deepFilter := `{"x":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}`
	type transportWant struct {
		skip   bool
		status int // HTTP
		// mayReset: the HTTP client may see its connection reset while it
		// still sends the body, instead of the response (any body over the
		// limit: the server answers 413 and closes without reading the
		// rest); the answer is then read from the server's transcript.
		mayReset bool
		key      string
		code     int
		message  string // "" skips the message check
	}
	tests := []struct {
		name        string
		body        string
		http, stdio transportWant
	}{
		{name: "truncated JSON", body: `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen"`,
			http:  transportWant{status: 400, code: jsonrpc.CodeParseError, message: "Parse error"},
			stdio: transportWant{code: jsonrpc.CodeParseError, message: "Parse error"}},
		{name: "binary junk", body: "\x00\x01\x02\xff\xfe\x7f",
			http:  transportWant{status: 400, code: jsonrpc.CodeParseError, message: "Parse error"},
			stdio: transportWant{code: jsonrpc.CodeParseError, message: "Parse error"}},
		{name: "a UTF-16 byte order mark", body: "\xfe\xff\x00{",
			http:  transportWant{status: 400, code: jsonrpc.CodeParseError, message: "Parse error"},
			stdio: transportWant{code: jsonrpc.CodeParseError, message: "Parse error"}},
		{name: "nesting deeper than the decoder allows", body: strings.Repeat("[", 20000),
			http:  transportWant{status: 400, code: jsonrpc.CodeParseError, message: "Parse error"},
			stdio: transportWant{code: jsonrpc.CodeParseError, message: "Parse error"}},
		{name: "trailing garbage", body: listenBody(`"t"`, `{}`) + "x",
			http:  transportWant{status: 400, code: jsonrpc.CodeParseError, message: "Parse error"},
			stdio: transportWant{code: jsonrpc.CodeParseError, message: "Parse error"}},
		{name: "two requests in one message", body: listenBody(`"t"`, `{}`) + listenBody(`"u"`, `{}`),
			http:  transportWant{status: 400, code: jsonrpc.CodeParseError, message: "Parse error"},
			stdio: transportWant{code: jsonrpc.CodeParseError, message: "Parse error"}},
		{name: "empty", body: "",
			http:  transportWant{status: 400, code: jsonrpc.CodeParseError, message: "Parse error"},
			stdio: transportWant{skip: true}}, // a blank line is not a message
		{name: "null", body: "null",
			http:  transportWant{status: 400, code: jsonrpc.CodeInvalidRequest, message: `Invalid request: jsonrpc must be "2.0"`},
			stdio: transportWant{code: jsonrpc.CodeInvalidRequest, message: `Invalid request: jsonrpc must be "2.0"`}},
		{name: "a batch", body: "[" + listenBody(`"b"`, `{}`) + "]",
			http:  transportWant{status: 400, code: jsonrpc.CodeInvalidRequest, message: "Invalid request: expected a JSON-RPC object"},
			stdio: transportWant{code: jsonrpc.CodeInvalidRequest, message: "Invalid request: expected a JSON-RPC object"}},
		{name: "a fractional id", body: listenBody(`1.5`, `{}`),
			http:  transportWant{status: 400, code: jsonrpc.CodeInvalidRequest, message: "Invalid request: id must be a string or an integer"},
			stdio: transportWant{code: jsonrpc.CodeInvalidRequest, message: "Invalid request: id must be a string or an integer"}},
		{name: "a null id", body: listenBody(`null`, `{}`),
			http:  transportWant{status: 400, code: jsonrpc.CodeInvalidRequest, message: "Invalid request: id must be a string or an integer"},
			stdio: transportWant{code: jsonrpc.CodeInvalidRequest, message: "Invalid request: id must be a string or an integer"}},
		{name: "an object id", body: listenBody(`{"a":1}`, `{}`),
			http:  transportWant{status: 400, code: jsonrpc.CodeInvalidRequest, message: "Invalid request: id must be a string or an integer"},
			stdio: transportWant{code: jsonrpc.CodeInvalidRequest, message: "Invalid request: id must be a string or an integer"}},
		{name: "a response instead of a request", body: `{"jsonrpc":"2.0","id":5,"result":{}}`,
			http:  transportWant{status: 400, key: `5`, code: jsonrpc.CodeInvalidRequest, message: "Invalid request: method must be a non-empty string"},
			stdio: transportWant{key: `5`, code: jsonrpc.CodeInvalidRequest, message: "Invalid request: method must be a non-empty string"}},
		{name: "invalid UTF-8 in the method", body: `{"jsonrpc":"2.0","id":"u","method":"subscriptions/listen` + "\xff" + `","params":{}}`,
			http:  transportWant{status: 400, key: `"u"`, code: jsonrpc.CodeHeaderMismatch},
			stdio: transportWant{key: `"u"`, code: jsonrpc.CodeMethodNotFound}},
		{name: "a filter nested deeper than 64", body: listenBody(`"deep"`, deepFilter),
			http:  transportWant{status: 400, key: `"deep"`, code: jsonrpc.CodeInvalidParams, message: core.NotificationsJSON},
			stdio: transportWant{key: `"deep"`, code: jsonrpc.CodeInvalidParams, message: core.NotificationsJSON}},
		{name: "over the size limit", body: over,
			http:  transportWant{status: 413, mayReset: true, code: jsonrpc.CodeInvalidRequest, message: msgBodyTooLarge},
			stdio: transportWant{code: jsonrpc.CodeInvalidRequest, message: "Invalid request: message exceeds the maximum line length"}},
		{name: "128 times the size limit", body: huge,
			http:  transportWant{status: 413, mayReset: true, code: jsonrpc.CodeInvalidRequest, message: msgBodyTooLarge},
			stdio: transportWant{code: jsonrpc.CodeInvalidRequest, message: "Invalid request: message exceeds the maximum line length"}},
	}
	for _, kind := range fixtureKinds() {
		if strings.HasSuffix(kind.name, "-eof") {
			continue
		}
		t.Run(strings.TrimSuffix(kind.name, "-cancel"), func(t *testing.T) {
			runCase(t, kind, func(t *testing.T, fx fixture) {
				for _, tt := range tests {
					w := tt.http
					if !isHTTP(fx) {
						w = tt.stdio
					}
					if w.skip {
						continue
					}
					if hf, ok := fx.(*httpFixture); ok && w.mayReset {
						m, status := postMayReset(t, hf, "may-reset "+tt.name, tt.body)
						assert.Equal(t, w.status, status, tt.name)
						requireError(t, m, "", w.code, w.message)
						continue
					}
					status, m := fx.request(t, tt.body, w.key)
					if isHTTP(fx) {
						assert.Equal(t, w.status, status, tt.name)
					}
					e := m.wireErr()
					if assert.NotNil(t, e, "%s: %s", tt.name, m) {
						assert.Equal(t, w.key, m.id(), tt.name)
						assert.Equal(t, w.code, e.Code, "%s: %s", tt.name, m)
						if w.message != "" {
							assert.Equal(t, w.message, e.Message, tt.name)
						}
					}
				}
				assert.Zero(t, fx.src().opens.Load(), "no malformed request reached the source")
				fx.probe(t) // on stdio: on the same connection, then a new one
			})
		})
	}
}

// postMayReset posts body and returns the server's answer: read by the
// client, or, when the client saw its connection reset while still sending
// the body, from the server's transcript. id labels the exchange
// (X-Test-Id) and must be unique: the transcript is kept per id.
func postMayReset(t *testing.T, fx *httpFixture, id, body string) (msg, int) {
	t.Helper()
	cs := fx.post(t, id, body, listenHeaders())
	status := recv(t, cs.status, "the status")
	if status != 0 {
		m := cs.recv(t)
		cs.end(t)
		return m, status
	}
	t.Logf("the client saw %v; the server's answer is read from its transcript", cs.endErr())
	await(t, recv(t, fx.ctxs.ch(id), "the server-side request").Done(), "the handler's return")
	ex := fx.exchange(id)
	ex.mu.Lock()
	status = ex.status
	ex.mu.Unlock()
	msgs := fx.transcript(t, id)
	require.Len(t, msgs, 1)
	return msgs[0], status
}
