//go:build linux

package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"
)

// events collects the engine's hook calls.
type events struct {
	opened, slow, fast chan string
	closed             chan closedEvent
}

type closedEvent struct {
	id     string
	reason error
}

func newEvents() *events {
	// Large enough that no hook ever blocks a loop in these tests.
	const n = 10000
	return &events{opened: make(chan string, n), slow: make(chan string, n), fast: make(chan string, n), closed: make(chan closedEvent, n)}
}

func (ev *events) hooks() Hooks {
	return Hooks{
		Opened: func(id string) { ev.opened <- id },
		Slow:   func(id string) { ev.slow <- id },
		Fast:   func(id string) { ev.fast <- id },
		Closed: func(id string, reason error) { ev.closed <- closedEvent{id, reason} },
	}
}

// wait receives from c or fails after a generous bound (a failure, never a
// synchronisation).
func wait[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("no %s", what)
		panic("unreachable")
	}
}

// testServer is the floor's handler on a loopback port.
type testServer struct {
	e   *engine
	ev  *events
	ts  *httptest.Server
	url string
}

func startFloor(t *testing.T, opts engineOptions) *testServer {
	t.Helper()
	ev := newEvents()
	if opts.Loops == 0 {
		opts.Loops = 2
	}
	if opts.WriteTimeout == 0 {
		opts.WriteTimeout = 10 * time.Second
	}
	if opts.SlowQueue == 0 {
		opts.SlowQueue = 64
	}
	opts.Hooks = ev.hooks()
	e, err := newEngine(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(&handler{e: e})
	t.Cleanup(func() {
		e.Close()
		ts.Close()
	})
	return &testServer{e: e, ev: ev, ts: ts, url: ts.URL + "/mcp"}
}

const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

func listenBody(id, filter string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"subscriptions/listen","params":{"notifications":` + filter + `,` + meta + `}}`
}

// rawStream is a listen stream read (or not) by the test itself.
type rawStream struct {
	c  *net.TCPConn
	br *bufio.Reader
}

// openRaw opens a listen on its own connection (SO_RCVBUF rcvbuf if
// positive) and reads the response header and the acknowledgement.
func (s *testServer) openRaw(t *testing.T, id, filter string, rcvbuf int) (*rawStream, string) {
	t.Helper()
	d := net.Dialer{}
	if rcvbuf > 0 {
		d.Control = func(_, _ string, c syscall.RawConn) error {
			return c.Control(func(fd uintptr) {
				_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf)
			})
		}
	}
	c, err := d.Dial("tcp", s.ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	body := listenBody(id, filter)
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Method: subscriptions/listen\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	rs := &rawStream{c: c.(*net.TCPConn), br: bufio.NewReaderSize(c, 128<<10)}
	resp, err := http.ReadResponse(rs.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("listen: %s %v", resp.Status, resp.Header)
	}
	ack := rs.next(t)
	// The loop owned the stream before it wrote the acknowledgement: any
	// notification published from now on reaches the stream.
	select {
	case got := <-s.ev.opened:
		if got != id {
			t.Fatalf("opened %s, want %s", got, id)
		}
	default:
		t.Fatal("the acknowledgement arrived before a loop owned the stream")
	}
	return rs, ack
}

// next reads one SSE event and returns its data line.
func (rs *rawStream) next(t *testing.T) string {
	t.Helper()
	var data string
	for {
		line, err := rs.br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v (after %q)", err, line)
		}
		line = strings.TrimRight(line, "\n")
		if line == "" {
			return data
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			data = d
		} else if line != "event: message" {
			t.Fatalf("unexpected line %q", line)
		}
	}
}

func call(t *testing.T, url, tool, args string) string {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `,` + meta + `}}`
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func toolsFrame(id string) string {
	return `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":` + id + `}}}`
}

func resourceFrame(id, uri string) string {
	return `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":` + id + `},"uri":"` + uri + `"}}`
}

// The acknowledgement and the notifications are the bytes examples/server
// sends, each stream gets only what its filter asked for, with its own id,
// and the trigger call answers with a result.
func TestListenAndTriggers(t *testing.T) {
	s := startFloor(t, engineOptions{})
	both, ack := s.openRaw(t, "7", `{"toolsListChanged":true,"resourceSubscriptions":["test://static/x"]}`, 0)
	wantAck := `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7},"notifications":{"resourceSubscriptions":["test://static/x"],"toolsListChanged":true}}}`
	if ack != wantAck {
		t.Errorf("ack\n got %s\nwant %s", ack, wantAck)
	}
	tools, ack := s.openRaw(t, `"abc"`, `{"toolsListChanged":true,"promptsListChanged":true}`, 0)
	if want := `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"abc"},"notifications":{"toolsListChanged":true}}}`; ack != want {
		t.Errorf("narrowed ack\n got %s\nwant %s", ack, want)
	}
	readme, _ := s.openRaw(t, "9", `{"resourceSubscriptions":["test://static/readme"]}`, 0)

	if got, want := call(t, s.url, "trigger_resource_update", `{"uri":"test://static/x"}`), `{"jsonrpc":"2.0","id":"c1","result":{"content":[{"type":"text","text":"updated test://static/x"}]}}`; got != want {
		t.Errorf("call result\n got %s\nwant %s", got, want)
	}
	if got := call(t, s.url, "test_trigger_tool_change", `{}`); !strings.Contains(got, `"result"`) {
		t.Errorf("call result %s", got)
	}
	call(t, s.url, "trigger_resource_update", `{}`) // the readme

	for _, c := range []struct {
		name string
		rs   *rawStream
		want []string
	}{
		{"tools and x", both, []string{resourceFrame("7", "test://static/x"), toolsFrame("7")}},
		{"tools only", tools, []string{toolsFrame(`"abc"`)}},
		{"readme only", readme, []string{resourceFrame("9", "test://static/readme")}},
	} {
		for i, want := range c.want {
			if got := c.rs.next(t); got != want {
				t.Errorf("%s, notification %d\n got %s\nwant %s", c.name, i, got, want)
			}
		}
	}
	// Nothing else arrived: one more tools change is the next event everywhere.
	call(t, s.url, "test_trigger_tool_change", `{}`)
	if got := both.next(t); got != toolsFrame("7") {
		t.Errorf("extra event %s", got)
	}
	if got := tools.next(t); got != toolsFrame(`"abc"`) {
		t.Errorf("extra event %s", got)
	}
}

// A client that hangs up is noticed and its stream closed, without any
// write to it.
func TestHangUpIsNoticed(t *testing.T) {
	s := startFloor(t, engineOptions{})
	rs, _ := s.openRaw(t, "1", `{"toolsListChanged":true}`, 0)
	rs.c.Close()
	ev := wait(t, s.ev.closed, "close")
	if ev.id != "1" || !errors.Is(ev.reason, errHangUp) {
		t.Errorf("closed %s: %v", ev.id, ev.reason)
	}
	if n := s.e.open.Load(); n != 0 {
		t.Errorf("%d streams open", n)
	}
}

// bigURI makes notifications large enough to fill socket buffers quickly.
var bigURI = "test://static/" + strings.Repeat("a", 64<<10)

// A client that stops reading goes to the slow path and is cut by its write
// deadline, while a healthy stream gets every notification.
func TestStalledClientIsCutByDeadline(t *testing.T) {
	s := startFloor(t, engineOptions{WriteTimeout: 300 * time.Millisecond, SlowQueue: 1000, SendBuffer: 16 << 10})
	filter := `{"resourceSubscriptions":["` + bigURI + `"]}`
	_, _ = s.openRaw(t, "1", filter, 4096) // never read again
	healthy, _ := s.openRaw(t, "2", filter, 0)
	note := resourceNote(bigURI)
	for k := 0; ; k++ {
		s.e.publish(note)
		if got := healthy.next(t); got != resourceFrame("2", bigURI) {
			t.Fatalf("healthy stream, notification %d: %.80s", k, got)
		}
		// The healthy stream may pass through the slow path too (a 64 KiB
		// frame does not always fit at once); only the stalled one stays.
		stalled := false
		for len(s.ev.slow) > 0 {
			if <-s.ev.slow == "1" {
				stalled = true
			}
		}
		if stalled {
			break
		}
	}
	ev := wait(t, s.ev.closed, "the stalled stream's close")
	if ev.id != "1" || !errors.Is(ev.reason, errSlowTimeout) {
		t.Fatalf("closed %s: %v", ev.id, ev.reason)
	}
	// The healthy stream is still served.
	s.e.publish(note)
	if got := healthy.next(t); got != resourceFrame("2", bigURI) {
		t.Fatalf("healthy stream after the cut: %.80s", got)
	}
}

// A slow stream whose queue overflows is closed.
func TestSlowQueueOverflowCloses(t *testing.T) {
	s := startFloor(t, engineOptions{WriteTimeout: time.Minute, SlowQueue: 2, SendBuffer: 16 << 10})
	_, _ = s.openRaw(t, "1", `{"resourceSubscriptions":["`+bigURI+`"]}`, 4096)
	note := resourceNote(bigURI)
	for {
		s.e.publish(note)
		select {
		case ev := <-s.ev.closed:
			if ev.id != "1" || !errors.Is(ev.reason, errSlowOverflow) {
				t.Fatalf("closed %s: %v", ev.id, ev.reason)
			}
			return
		default: // publish on until the queue overflows
		}
	}
}

// A client that was slow for a while and then reads everything gets every
// notification in order, and its stream goes back to the fast path.
func TestSlowStreamComesBack(t *testing.T) {
	s := startFloor(t, engineOptions{SlowQueue: 1000, SendBuffer: 16 << 10})
	rs, _ := s.openRaw(t, "1", `{"resourceSubscriptions":["`+bigURI+`"]}`, 4096)
	sent := 0
	for {
		s.e.publish(resourceNote(bigURI))
		sent++
		select {
		case <-s.ev.slow:
		default:
			continue
		}
		break
	}
	sent += 3 // queued behind the slow write
	for range 3 {
		s.e.publish(resourceNote(bigURI))
	}
	for i := range sent {
		if got := rs.next(t); got != resourceFrame("1", bigURI) {
			t.Fatalf("notification %d: %.80s", i, got)
		}
	}
	if id := wait(t, s.ev.fast, "the return to the fast path"); id != "1" {
		t.Fatalf("stream %s came back", id)
	}
	s.e.publish(toolsNote) // not subscribed
	s.e.publish(resourceNote(bigURI))
	// (A 64 KiB frame into a 16 KiB send buffer may well send it down the
	// slow path again: what matters is that it arrives.)
	if got := rs.next(t); got != resourceFrame("1", bigURI) {
		t.Fatalf("after the return: %.80s", got)
	}
}

// Close closes every stream, slow ones included, and ends every goroutine
// (goleak checks the last part).
func TestCloseEndsEverything(t *testing.T) {
	s := startFloor(t, engineOptions{SlowQueue: 1000, SendBuffer: 16 << 10})
	_, _ = s.openRaw(t, "1", `{"resourceSubscriptions":["`+bigURI+`"]}`, 4096)
	_, _ = s.openRaw(t, "2", `{"toolsListChanged":true}`, 0)
	for {
		s.e.publish(resourceNote(bigURI))
		select {
		case <-s.ev.slow:
		default:
			continue
		}
		break
	}
	s.e.Close()
	s.e.Close() // idempotent
	got := map[string]bool{}
	for range 2 {
		ev := wait(t, s.ev.closed, "close")
		if !errors.Is(ev.reason, errEngineClosed) {
			t.Errorf("closed %s: %v", ev.id, ev.reason)
		}
		got[ev.id] = true
	}
	if !got["1"] || !got["2"] || s.e.open.Load() != 0 || s.e.slowN.Load() != 0 {
		t.Errorf("closed %v; open %d, slow %d", got, s.e.open.Load(), s.e.slowN.Load())
	}
	if s.e.add(-1, []byte("3"), true, nil, nil) {
		t.Error("add after Close succeeded")
	}
}

// Bad requests get a JSON-RPC error with the right code and status.
func TestBadRequests(t *testing.T) {
	s := startFloor(t, engineOptions{})
	for _, c := range []struct {
		name, method, body string
		status             int
		want               string
	}{
		{"not JSON", "POST", `{bad`, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		{"not JSON-RPC 2.0", "POST", `{"jsonrpc":"1.0","id":1,"method":"tools/call"}`, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`},
		{"no id", "POST", `{"jsonrpc":"2.0","method":"subscriptions/listen"}`, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: id must be a string or a number"}}`},
		{"object id", "POST", `{"jsonrpc":"2.0","id":{},"method":"subscriptions/listen"}`, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: id must be a string or a number"}}`},
		{"unknown method", "POST", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, 200, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`},
		{"unknown tool", "POST", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`, 200, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"unknown tool \"echo\""}}`},
		{"empty filter", "POST", listenBody("1", `{}`), 200, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"nothing to listen to: the floor serves toolsListChanged and resourceSubscriptions"}}`},
		{"too large", "POST", `{"jsonrpc":"2.0","id":1,"method":"x","params":"` + strings.Repeat("a", maxBody) + `"}`, 413, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: http: request body too large"}}`},
		{"GET", "GET", ``, 405, "only POST\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, s.url, strings.NewReader(c.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.status || string(b) != c.want {
				t.Errorf("got %d %s\nwant %d %s", resp.StatusCode, b, c.status, c.want)
			}
		})
	}
	http.DefaultClient.CloseIdleConnections()
}

// FuzzParseRequest: no input panics the parser, and an accepted request has
// a string or number id in compact form.
func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(listenBody("1", `{"toolsListChanged":true}`)))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"trigger_resource_update","arguments":{"uri":"a"}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id": 1e3 ,"method":"m"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := parseRequest(body)
		if err != nil {
			if r != nil {
				t.Fatal("request and error")
			}
			return
		}
		if !validID(r.ID) || (r.ID[0] != '"' && bytes.ContainsAny(r.ID, " \t\r\n")) {
			t.Fatalf("id %q", r.ID)
		}
	})
}
