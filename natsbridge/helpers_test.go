package natsbridge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/cluster"
	"github.com/mcplisten/listen/cluster/clustertest"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/natsbridge"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/streamhttp"
)

// failsafe bounds every wait of a test.
const failsafe = 10 * time.Second

// idKey is the _meta key tests tag their events with.
const idKey = "com.example/id"

// startNATS starts an embedded NATS server on a loopback port (port 0: a
// free one) and shuts it down with the test.
func startNATS(t testing.TB, port int) *server.Server {
	t.Helper()
	if port == 0 {
		port = -1
	}
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, NoLog: true, NoSigs: true})
	require.NoError(t, err)
	ns.Start()
	require.True(t, ns.ReadyForConnections(failsafe), "NATS server not ready")
	t.Cleanup(func() { stopNATS(ns) })
	return ns
}

func stopNATS(ns *server.Server) {
	ns.Shutdown()
	ns.WaitForShutdown()
}

// natsPort returns the server's client port.
func natsPort(t testing.TB, ns *server.Server) int {
	t.Helper()
	var port int
	_, err := fmt.Sscanf(ns.ClientURL(), "nats://127.0.0.1:%d", &port)
	require.NoError(t, err)
	return port
}

// connect dials url with fast reconnects; the connection is closed with
// the test.
func connect(t testing.TB, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url,
		nats.ReconnectWait(50*time.Millisecond),
		nats.ReconnectJitter(0, 0),
		nats.MaxReconnects(-1),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	return nc
}

// caps advertises every core notification and the test extension.
func caps() listen.Capabilities {
	return listen.Capabilities{
		ToolsListChanged:     true,
		PromptsListChanged:   true,
		ResourcesListChanged: true, ResourcesSubscribe: true,
		Extensions: map[string]any{tasksID: map[string]any{}},
	}
}

// tasksID is the test extension: filter key taskIds, events shaped as
// notifications/tasks/status.
const tasksID = "com.example/tasks"

type tasksExt struct{}

func (tasksExt) ID() string                     { return tasksID }
func (tasksExt) SupportsProtocol(v string) bool { return v == spec.ProtocolVersion }
func (tasksExt) SubscriptionFilter(_ context.Context, _ *listen.Request, requested listen.Filter) (listen.Filter, error) {
	if v, ok := requested["taskIds"]; ok {
		return listen.Filter{"taskIds": v}, nil
	}
	return nil, nil
}
func (tasksExt) ShapeSubscriptionEvent(ev listen.Event, _ listen.Filter, _ listen.Settings) (string, map[string]any, error) {
	p, ok := ev.Payload.(map[string]any)
	if !ok {
		return "", nil, fmt.Errorf("payload %T", ev.Payload)
	}
	return "notifications/tasks/status", map[string]any{"taskId": ev.Selector["taskIds"].([]any)[0], "status": p["status"]}, nil
}

// recorder records a bridge's hooks (clustertest.Recorder).
type recorder = clustertest.Recorder

// record sets o's hooks to a new recorder's.
func record(o *cluster.Options) *recorder { return clustertest.Record(o) }

// hooked reports whether o has hooks of its own.
func hooked(o cluster.Options) bool {
	return o.OnPublishOut != nil || o.OnReceive != nil || o.OnDrop != nil || o.OnResync != nil || o.OnConnection != nil
}

// await receives from ch until ok accepts a value, failing after failsafe.
func await[T any](t testing.TB, ch <-chan T, what string, ok func(T) bool) T {
	t.Helper()
	return clustertest.Await(t, ch, failsafe, what, ok)
}

// instance is one MCP server instance: a hub, its bridge and a streamhttp
// listen handler on a loopback HTTP server.
type instance struct {
	name   string
	hub    *hub.Hub
	bridge *natsbridge.Bridge
	rec    *recorder
	h      *streamhttp.Handler
	ts     *httptest.Server
	client *http.Client
}

func newInstance(t testing.TB, name string, nc *nats.Conn, opts natsbridge.Options) *instance {
	t.Helper()
	rec := record(&cluster.Options{})
	if !hooked(opts.Options) {
		rec = record(&opts.Options)
	}
	hb, err := hub.New(hub.Options{MaxBuffer: 4096})
	require.NoError(t, err)
	b, err := natsbridge.New(nc, hb, opts)
	require.NoError(t, err)
	reg, err := listen.NewExtensionRegistry(tasksExt{})
	require.NoError(t, err)
	h, err := streamhttp.New(listen.NewServer(hb, listen.Options{Capabilities: caps(), Extensions: reg, ServerInfo: listen.Implementation{Name: name, Version: "1.0.0"}}), streamhttp.Options{
		RequireHeaders: true,
		KeepAlive:      failsafe,
		// none during a test,
	})
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	in := &instance{name: name, hub: hb, bridge: b, rec: rec, h: h, ts: ts, client: &http.Client{Transport: &http.Transport{}}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), failsafe)
		defer cancel()
		_ = h.Shutdown(ctx)
		ts.CloseClientConnections()
		ts.Close()
		in.client.CloseIdleConnections()
		require.NoError(t, b.Close())
	})
	return in
}

// note is one notification read from a listen stream.
type note struct {
	method string
	uri    string
	id     string // the event's test id (_meta com.example/id), "" for none
	params map[string]any
	raw    string // the message as sent
}

// stream is a real HTTP listen client: a reader goroutine decodes the SSE
// stream into notes.
type stream struct {
	subID string
	notes chan note
	// done is closed when the reader goroutine exits; err says why.
	done chan struct{}
	err  error
	resp *http.Response
}

// listenBody is a 2026-07-28 subscriptions/listen request.
func listenBody(id, filter string) string {
	return `{"jsonrpc":"2.0","id":"` + id + `","method":"subscriptions/listen","params":{` +
		`"notifications":` + filter + `,` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"` + tasksID + `":{}}},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"natsbridge-test","version":"1.0.0"}}}}`
}

// listen opens a listen stream on in with filter, reads its
// acknowledgement and starts the reader. The stream is closed with the
// test.
func (in *instance) listen(t testing.TB, id, filter string) *stream {
	t.Helper()
	return listenAt(t, in.client, in.ts.URL, id, filter)
}

// listenAt is instance.listen on the listen handler at url, with headers
// (name, value pairs).
func listenAt(t testing.TB, client *http.Client, url, id, filter string, headers ...string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(listenBody(id, filter)))
	require.NoError(t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", spec.ProtocolVersion)
	req.Header.Set("Mcp-Method", spec.MethodListen)
	resp, err := client.Do(req)
	require.NoError(t, err)
	s := &stream{subID: id, notes: make(chan note, 1<<16), done: make(chan struct{}), resp: resp}
	t.Cleanup(func() {
		cancel()
		resp.Body.Close()
		<-s.done
	})
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		close(s.done)
		require.FailNow(t, "listen refused", "%d %s", resp.StatusCode, body)
	}
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	rd := listentest.NewSSEReader(resp.Body)
	ack, _, err := readRaw(rd)
	if err != nil {
		close(s.done)
		require.NoError(t, err)
	}
	if ack["method"] != spec.MethodAcknowledged {
		close(s.done)
		require.FailNow(t, "want the acknowledgement", "%v", ack)
	}
	go s.read(rd)
	return s
}

// read decodes notifications until the stream ends.
func (s *stream) read(rd *listentest.SSEReader) {
	defer close(s.done)
	for {
		m, raw, err := readRaw(rd)
		if err != nil {
			s.err = err
			return
		}
		method, _ := m["method"].(string)
		params, _ := m["params"].(map[string]any)
		meta, _ := params["_meta"].(map[string]any)
		if meta[spec.MetaSubscriptionID] != s.subID {
			s.err = fmt.Errorf("message without this stream's subscription id: %v", m)
			return
		}
		if method == "" { // the completion result
			s.err = io.EOF
			return
		}
		n := note{method: method, params: params, raw: raw}
		n.uri, _ = params["uri"].(string)
		n.id, _ = meta[idKey].(string)
		s.notes <- n
	}
}

// readRaw reads the next SSE message event and returns its JSON-RPC
// message, decoded (json.Number numbers) and as sent.
func readRaw(rd *listentest.SSEReader) (map[string]any, string, error) {
	data, err := rd.Data()
	if err != nil {
		return nil, "", err
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, "", err
	}
	return m, string(data), nil
}

// next returns the stream's next notification, failing after failsafe.
func (s *stream) next(t testing.TB) note {
	t.Helper()
	timer := time.NewTimer(failsafe)
	defer timer.Stop()
	select {
	case n := <-s.notes:
		return n
	case <-s.done:
		select {
		case n := <-s.notes:
			return n
		default:
		}
		require.FailNow(t, "stream ended", "%s: %v", s.subID, s.err)
	case <-timer.C:
		require.FailNow(t, "timed out waiting for a notification on "+s.subID)
	}
	return note{}
}

// until reads notifications up to and including the one with test id
// fence, and returns them all.
func (s *stream) until(t testing.TB, fence string) []note {
	t.Helper()
	var got []note
	for {
		n := s.next(t)
		got = append(got, n)
		if n.id == fence {
			return got
		}
	}
}

// tagged returns ev tagged with the test id.
func tagged(ev listen.Event, id string) listen.Event {
	return ev.WithMetadata(map[string]any{idKey: id})
}

// natsOptions are the bridge options of the tests.
func natsOptions() natsbridge.Options { return natsbridge.Options{} }

// newLoopbackServer serves srv on a loopback port and returns its URL; it
// is closed with the test.
func newLoopbackServer(t testing.TB, srv *http.Server) string {
	t.Helper()
	ts := httptest.NewUnstartedServer(srv.Handler)
	ts.Start()
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts.URL
}
