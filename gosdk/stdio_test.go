package gosdk_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/gosdk"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/stdio"
)

// note is one notification the client received, with the subscription id
// it was tagged with.
type note struct {
	method, uri string
	sub         any
}

func subID(m mcp.Meta) any { return m["io.modelcontextprotocol/subscriptionId"] }

// TestStdioPlainServer starts from a go-sdk server with no listen code in it
// and shows, over stdio with the go-sdk v1.8.0 client: inferred
// capabilities acknowledged exactly as server/discover advertises them;
// AddTool, RemovePrompts and ResourceUpdated each reaching the right listens
// and no others; cancelling one of two listens leaves the other receiving;
// tool calls and a tool's logging notification pass through the go-sdk.
func TestStdioPlainServer(t *testing.T) {
	srv := plainServer()
	mcp.AddTool(srv, &mcp.Tool{Name: "log"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		//lint:ignore SA1019 the test checks that a tool's logging still passes through
		err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "from the tool"})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "logged"}}}, nil, err
	})

	closed := make(chan any, 10)
	// The listens' resource updates are published with the hub (a stdio
	// connection has one client: no go-sdk subscriber to tell as well).
	changes, err := hub.New(hub.Options{})
	require.NoError(t, err)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	served := make(chan error, 1)
	go func() {
		served <- serveStdio(context.Background(), srv, inR, outW, gosdk.StdioOptions{
			Options: gosdk.Options{Hub: changes, Listen: listen.Options{
				OnClose: func(sub *listen.Subscription, _ error) { closed <- sub.ID().Raw() },
			}},
		})
		outW.Close()
	}()

	notes := make(chan note, 20)
	acks := make(chan *mcp.SubscriptionsAcknowledgedParams, 10)
	logs := make(chan any, 10)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(_ context.Context, r *mcp.ToolListChangedRequest) {
			notes <- note{method: "tools", sub: subID(r.Params.Meta)}
		},
		PromptListChangedHandler: func(_ context.Context, r *mcp.PromptListChangedRequest) {
			notes <- note{method: "prompts", sub: subID(r.Params.Meta)}
		},
		ResourceListChangedHandler: func(_ context.Context, r *mcp.ResourceListChangedRequest) {
			notes <- note{method: "resources", sub: subID(r.Params.Meta)}
		},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			notes <- note{method: "updated", uri: r.Params.URI, sub: subID(r.Params.Meta)}
		},
		//lint:ignore SA1019 the test checks that a tool's logging still passes through
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) { logs <- r.Params.Data },
	})
	client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/subscriptions/acknowledged" {
				acks <- req.GetParams().(*mcp.SubscriptionsAcknowledgedParams)
			}
			return next(ctx, method, req)
		}
	})
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	require.NoError(t, err)
	next := func(c <-chan note) note {
		t.Helper()
		select {
		case n := <-c:
			return n
		case <-ctx.Done():
			t.Fatal("timed out")
			return note{}
		}
	}
	ack := func() *mcp.SubscriptionsAcknowledgedParams {
		t.Helper()
		select {
		case a := <-acks:
			return a
		case <-ctx.Done():
			t.Fatal("no acknowledgement")
			return nil
		}
	}

	// The client's automatic listen asks for the three list changes its
	// handlers cover: acknowledged as server/discover advertises them.
	capsJSON, _ := json.Marshal(cs.InitializeResult().Capabilities)
	var caps map[string]any
	require.NoError(t, json.Unmarshal(capsJSON, &caps))
	auto := ack()
	autoJSON, _ := json.Marshal(auto.Notifications)
	var gotAuto map[string]any
	require.NoError(t, json.Unmarshal(autoJSON, &gotAuto))
	wantAuto := ackFor(caps, nil)
	delete(wantAuto, "resourceSubscriptions")
	assert.Equal(t, wantAuto, gotAuto)
	assert.Len(t, gotAuto, 3, "tools, prompts and resources list changes inferred")
	autoID := subID(auto.Meta)

	require.NoError(t, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uriA}))
	a := ack()
	assert.Equal(t, []string{uriA}, a.Notifications.ResourceSubscriptions)
	require.NoError(t, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uriB}))
	bAck := ack()
	assert.Equal(t, []string{uriB}, bAck.Notifications.ResourceSubscriptions)
	aID, bID := subID(a.Meta), subID(bAck.Meta)

	// Tool calls and a tool's own logging notification go through the go-sdk.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	require.NoError(t, err)
	assert.Equal(t, "hi", res.Content[0].(*mcp.TextContent).Text)
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "log", Meta: mcp.Meta{"io.modelcontextprotocol/logLevel": "debug"}})
	require.NoError(t, err)
	select {
	case d := <-logs:
		assert.Equal(t, "from the tool", d)
	case <-ctx.Done():
		t.Fatal("no logging notification")
	}

	// Each change reaches the right listen only (the handlers see every
	// notification of every listen, tagged with its subscription id).
	addTool(srv, "added")
	assert.Equal(t, note{method: "tools", sub: autoID}, next(notes))
	srv.RemovePrompts("greeting")
	assert.Equal(t, note{method: "prompts", sub: autoID}, next(notes))
	_, err = changes.ResourceUpdated(uriA)
	require.NoError(t, err)
	assert.Equal(t, note{method: "updated", uri: uriA, sub: aID}, next(notes))

	// Cancelling listen A (notifications/cancelled) ends it alone.
	require.NoError(t, cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uriA}))
	select {
	case id := <-closed:
		assert.Equal(t, fmt.Sprint(aID), id, "only listen A closed")
	case <-ctx.Done():
		t.Fatal("listen A not closed")
	}
	_, err = changes.ResourceUpdated(uriA) // nobody now
	require.NoError(t, err)
	_, err = changes.ResourceUpdated(uriB)
	require.NoError(t, err)
	assert.Equal(t, note{method: "updated", uri: uriB, sub: bID}, next(notes))
	srv.RemoveTools("added")
	assert.Equal(t, note{method: "tools", sub: autoID}, next(notes), "the automatic listen still receives")
	select {
	case n := <-notes:
		t.Fatalf("unexpected %+v", n)
	default:
	}

	require.NoError(t, cs.Close())
	require.NoError(t, <-served)
}

// serveStdio serves one connection with a new gosdk.Stdio, then shuts it
// down.
func serveStdio(ctx context.Context, srv *mcp.Server, r io.Reader, w io.Writer, opts gosdk.StdioOptions) error {
	s, err := gosdk.NewStdio(srv, opts)
	if err != nil {
		return err
	}
	err = s.Serve(ctx, r, w)
	if serr := s.Shutdown(context.Background()); serr != nil && err == nil {
		err = serr
	}
	return err
}

// rawStdio runs a go-sdk server over stdio with lines: theirs is the
// go-sdk's own IOTransport, ours is gosdk.Stdio.Serve. send writes a line, recv
// returns the next output line, end closes the input and waits.
type rawStdio struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Scanner
	done chan error
}

func startRaw(t *testing.T, srv *mcp.Server, ours bool, opts gosdk.StdioOptions) *rawStdio {
	t.Helper()
	return startRawCtx(t, context.Background(), srv, ours, opts)
}

func startRawCtx(t *testing.T, ctx context.Context, srv *mcp.Server, ours bool, opts gosdk.StdioOptions) *rawStdio {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	r := &rawStdio{t: t, in: inW, out: bufio.NewScanner(outR), done: make(chan error, 1)}
	go func() {
		var err error
		if ours {
			err = serveStdio(ctx, srv, inR, outW, opts)
		} else {
			var ss *mcp.ServerSession
			if ss, err = srv.Connect(ctx, &mcp.IOTransport{Reader: inR, Writer: outW}, nil); err == nil {
				err = ss.Wait()
			}
		}
		outW.Close()
		inR.Close()
		r.done <- err
	}()
	return r
}

func (r *rawStdio) send(line string) {
	r.t.Helper()
	_, err := io.WriteString(r.in, line+"\n")
	require.NoError(r.t, err)
}

func (r *rawStdio) recv() string {
	r.t.Helper()
	require.True(r.t, r.out.Scan(), "output ended")
	return r.out.Text()
}

// end closes the input and returns what came out after it and what Serve
// returned.
func (r *rawStdio) end() ([]string, error) {
	r.t.Helper()
	require.NoError(r.t, r.in.Close())
	var rest []string
	for r.out.Scan() {
		rest = append(rest, r.out.Text())
	}
	return rest, <-r.done
}

func listenLine(id, version string) string {
	meta := ""
	if version != "" {
		meta = fmt.Sprintf(`"_meta":{"io.modelcontextprotocol/protocolVersion":%q,"io.modelcontextprotocol/clientCapabilities":{}},`, version)
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"subscriptions/listen","params":{%s"notifications":{"toolsListChanged":true}}}`, id, meta)
}

// TestStdioEveryListenIsTheLibrarys: every subscriptions/listen is the
// multiplexer's, whatever version it names, so the go-sdk's own listen code
// never runs (it would answer these with a code-0 error, or serve a stream
// of its own on an initialized session): an earlier version the go-sdk
// server speaks gets -32601, any other version -32022 with the server's
// supported versions (the shape of the specification's example), params
// without a version -32602. Also after an initialize with 2025-11-25.
func TestStdioEveryListenIsTheLibrarys(t *testing.T) {
	const supported = `["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"]`
	r := startRaw(t, plainServer(), true, gosdk.StdioOptions{})
	for _, tc := range []struct{ line, want string }{
		{listenLine("7", "2027-01-01"), `{"jsonrpc":"2.0","id":7,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":` + supported + `,"requested":"2027-01-01"}}}`},
		{listenLine(`"x"`, "1900-01-01"), `{"jsonrpc":"2.0","id":"x","error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":` + supported + `,"requested":"1900-01-01"}}}`},
		{listenLine("8", "2025-06-18"), `{"jsonrpc":"2.0","id":8,"error":{"code":-32601,"message":"Method not found: subscriptions/listen"}}`},
		{listenLine("9", ""), `{"jsonrpc":"2.0","id":9,"error":{"code":-32602,"message":"subscriptions/listen requires a _meta object"}}`},
		{`{"jsonrpc":"2.0","id":10,"method":"subscriptions/listen","params":[1]}`, `{"jsonrpc":"2.0","id":10,"error":{"code":-32602,"message":"subscriptions/listen params must be an object"}}`},
		{`{"jsonrpc":"2.0","id":11,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"old","version":"0"}}}`, ``},
		{listenLine("12", "2025-11-25"), `{"jsonrpc":"2.0","id":12,"error":{"code":-32601,"message":"Method not found: subscriptions/listen"}}`},
		{listenLine("13", "2024-11-05"), `{"jsonrpc":"2.0","id":13,"error":{"code":-32601,"message":"Method not found: subscriptions/listen"}}`},
		{strings.Replace(listenLine("14", "2026-07-28"), `{"toolsListChanged":true}`, `{"resourceSubscriptions":["test://a/\ud800"]}`, 1),
			`{"jsonrpc":"2.0","id":14,"error":{"code":-32602,"message":"` + "subscriptions/listen resourceSubscriptions must not contain lone surrogates or invalid UTF-8" + `"}}`},
	} {
		r.send(tc.line)
		got := r.recv()
		if tc.want == "" {
			require.Contains(t, got, `"protocolVersion":"2025-11-25"`, "the go-sdk's initialize answer")
			continue
		}
		require.Equal(t, tc.want, got)
	}
	r.send(listenLine("1", "2026-07-28"))
	assert.Contains(t, r.recv(), `"method":"notifications/subscriptions/acknowledged"`)
	rest, err := r.end()
	require.NoError(t, err)
	assert.Empty(t, rest, "EOF closes a listen without a terminal message")
}

// TestStdioIDsAsSent: the go-sdk decodes ids its own way (-0 as 0, escapes
// resolved, integers as float64); every answer carries the client's token
// as sent, and frees it: with one request in flight allowed, each request
// after the others still gets through.
func TestStdioIDsAsSent(t *testing.T) {
	r := startRaw(t, plainServer(), true, gosdk.StdioOptions{Stdio: stdio.Options{MaxInFlight: 1}})
	for _, id := range []string{`-0`, `"\u0041"`, `"A"`, `12345678901234567890`, `9007199254740993`, `9007199254740992`, `"\/"`, `1`, `"7"`, `7`} {
		r.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
		require.Equal(t, `{"jsonrpc":"2.0","id":`+id+`,"result":{}}`, r.recv())
	}
	rest, err := r.end()
	require.NoError(t, err)
	assert.Empty(t, rest)
}

// TestStdioUndecodable: a request the go-sdk cannot decode (JSON nested
// deeper than it accepts) is answered with -32600 MsgUndecodable, so its
// unit of MaxInFlight comes back; such a notification is dropped. The
// connection goes on.
func TestStdioUndecodable(t *testing.T) {
	deep := strings.Repeat("[", 1001) + strings.Repeat("]", 1001)
	r := startRaw(t, plainServer(), true, gosdk.StdioOptions{Stdio: stdio.Options{MaxInFlight: 1}})
	r.send(`{"jsonrpc":"2.0","method":"notifications/foo","params":{"x":` + deep + `}}`) // dropped
	r.send(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":` + deep + `}}`)
	require.Equal(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid request: the server cannot decode it"}}`, r.recv())
	r.send(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	assert.Equal(t, `{"jsonrpc":"2.0","id":5,"result":{}}`, r.recv())
	rest, err := r.end()
	require.NoError(t, err)
	assert.Empty(t, rest)
}

// TestStdioGoSDKReadsWhatTheMultiplexerRead: member names that differ in
// case are other members to both (the go-sdk answers the exact "method"),
// a repeated envelope member is refused before the go-sdk sees it, and a
// message that is neither a request nor a response is refused by the
// multiplexer (the go-sdk would take it for a response).
func TestStdioGoSDKReadsWhatTheMultiplexerRead(t *testing.T) {
	r := startRaw(t, plainServer(), true, gosdk.StdioOptions{Stdio: stdio.Options{MaxInFlight: 1}})
	for _, tc := range []struct{ line, want string }{
		{`{"jsonrpc":"2.0","id":2,"method":"ping","Method":"tools/list","METHOD":"subscriptions/listen"}`, `{"jsonrpc":"2.0","id":2,"result":{}}`},
		{`{"jsonrpc":"2.0","id":3,"METHOD":"subscriptions/listen","PARAMS":{}}`, `{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"Invalid request: method must be a non-empty string"}}`},
		{`{"jsonrpc":"2.0","id":4,"method":"tools/list","method":"ping"}`, `{"jsonrpc":"2.0","error":{"code":-32600,"message":"` + "Invalid request: a JSON-RPC member is repeated" + `"}}`},
		{`{"jsonrpc":"2.0","id":6,"Method":"ping"}`, `{"jsonrpc":"2.0","id":6,"error":{"code":-32600,"message":"Invalid request: method must be a non-empty string"}}`},
		{`{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}},` +
			`"Params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2027-01-01"}}}`, `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"` + "subscriptions/listen _meta requires io.modelcontextprotocol/clientCapabilities as an object" + `"}}`},
	} {
		r.send(`{"jsonrpc":"2.0","method":"notifications/foo","Method":"ping"}`) // a notification the go-sdk ignores
		r.send(tc.line)
		require.Equal(t, tc.want, r.recv(), tc.line)
	}
	rest, err := r.end()
	require.NoError(t, err)
	assert.Empty(t, rest)
}

// TestStdioContextDrains: when Serve's context ends, every open listen gets
// notifications/cancelled and its completion result, the go-sdk session
// ends, and Serve returns the context's cause without the client closing
// its end.
func TestStdioContextDrains(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	r := startRawCtx(t, ctx, plainServer(), true, gosdk.StdioOptions{})
	r.send(listenLine("1", "2026-07-28"))
	require.Contains(t, r.recv(), `"method":"notifications/subscriptions/acknowledged"`)
	r.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	require.Equal(t, `{"jsonrpc":"2.0","id":2,"result":{}}`, r.recv())

	stop := errors.New("stop")
	cancel(stop)
	require.Equal(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"reason":"Server shutdown","requestId":1}}`, r.recv())
	require.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"plain","version":"1.2.3"},"io.modelcontextprotocol/subscriptionId":1},"resultType":"complete"}}`, r.recv())
	require.False(t, r.out.Scan(), "nothing more: %s", r.out.Text())
	require.ErrorIs(t, <-r.done, stop)
	r.in.Close()
}

// TestStdioIDsTheGoSDKWouldMerge: "\u0041" and "A" are two ids to the
// client and to the multiplexer but one to the go-sdk; as the go-sdk knows
// each request by an id of the Conn's own, both are served at once and
// each answer carries its own token.
func TestStdioIDsTheGoSDKWouldMerge(t *testing.T) {
	srv := plainServer()
	release := make(chan struct{})
	mcp.AddTool(srv, &mcp.Tool{Name: "wait"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		<-release
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	r := startRaw(t, srv, true, gosdk.StdioOptions{Stdio: stdio.Options{MaxInFlight: 2}})
	r.send(`{"jsonrpc":"2.0","id":"\u0041","method":"tools/call","params":{"name":"wait",` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	r.send(`{"jsonrpc":"2.0","id":"A","method":"ping"}`)
	require.Equal(t, `{"jsonrpc":"2.0","id":"A","result":{}}`, r.recv())
	close(release)
	require.Contains(t, r.recv(), `{"jsonrpc":"2.0","id":"\u0041","result":`)
	rest, err := r.end()
	require.NoError(t, err)
	assert.Empty(t, rest)
}

// TestStdioShutdown: Shutdown drains every connection: each open listen
// gets notifications/cancelled and its completion result, the go-sdk
// answers what it is handling, Serve returns stdio.ErrServerClosed, and a
// later Serve returns it at once. Stats count it all.
func TestStdioShutdown(t *testing.T) {
	srv := plainServer()
	release := make(chan struct{})
	mcp.AddTool(srv, &mcp.Tool{Name: "wait"}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
		<-release
		return &mcp.CallToolResult{}, nil, nil
	})
	s, err := gosdk.NewStdio(srv, gosdk.StdioOptions{})
	require.NoError(t, err)
	require.NotNil(t, s.Bridge().Hub())
	require.NotNil(t, s.Bridge())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- s.Serve(context.Background(), inR, outW)
		outW.Close()
	}()
	out := bufio.NewScanner(outR)
	recv := func() string {
		t.Helper()
		require.True(t, out.Scan(), "output ended")
		return out.Text()
	}
	send := func(line string) {
		t.Helper()
		_, err := io.WriteString(inW, line+"\n")
		require.NoError(t, err)
	}
	for _, id := range []string{"1", `"two"`} {
		send(listenLine(id, "2026-07-28"))
		require.Contains(t, recv(), `"method":"notifications/subscriptions/acknowledged"`)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"wait",` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	send(`{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	require.Equal(t, `{"jsonrpc":"2.0","id":4,"result":{}}`, recv())
	st, ls := s.Stats(), s.Server().Stats()
	assert.Equal(t, 1, st.Connections)
	assert.Equal(t, 2, ls.Active)
	assert.EqualValues(t, 2, ls.Opened)
	assert.GreaterOrEqual(t, st.InFlight, 1, "the call in flight") // the ping's unit may not be back yet

	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	got := map[string]bool{}
	for range 4 {
		got[recv()] = true
	}
	for _, id := range []string{"1", `"two"`} {
		assert.True(t, got[`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":`+id+`},"reason":"Server shutdown","requestId":`+id+`}}`], "%s: %v", id, got)
		assert.True(t, got[`{"jsonrpc":"2.0","id":`+id+`,"result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"plain","version":"1.2.3"},"io.modelcontextprotocol/subscriptionId":`+id+`},"resultType":"complete"}}`], "%s: %v", id, got)
	}
	close(release)
	assert.Contains(t, recv(), `{"jsonrpc":"2.0","id":3,"result":`, "the call in flight is answered")
	require.ErrorIs(t, <-served, stdio.ErrServerClosed)
	require.NoError(t, <-shut)
	assert.False(t, out.Scan(), "nothing more")
	assert.Equal(t, stdio.Stats{}, s.Stats())
	assert.Equal(t, listen.Stats{Opened: 2, Closed: 2, Draining: true}, s.Server().Stats())
	require.ErrorIs(t, s.Serve(context.Background(), strings.NewReader(""), io.Discard), stdio.ErrServerClosed)
	require.NoError(t, s.Shutdown(context.Background()), "idempotent")
	inW.Close()
}

// TestStdioFloodWithOutputNeverReadIsBounded: a client that floods pings
// and never reads its output: the go-sdk is handed MaxInFlight requests,
// each holds its unit until its answer was written, and the connection
// stops reading (the client's writes block). The write timeout then ends
// Serve.
func TestStdioFloodWithOutputNeverReadIsBounded(t *testing.T) {
	const n, max = 500, 4
	synctest.Test(t, func(t *testing.T) {
		s, err := gosdk.NewStdio(plainServer(), gosdk.StdioOptions{
			Options: gosdk.Options{Logger: slog.New(slog.DiscardHandler)},
			Stdio:   stdio.Options{MaxInFlight: max, WriteTimeout: time.Hour},
		})
		require.NoError(t, err)
		inR, inW := io.Pipe()
		outR, outW := io.Pipe() // never read
		served := make(chan error, 1)
		go func() { served <- s.Serve(t.Context(), inR, outW) }()
		var written atomic.Int32 // read after synctest.Wait; atomic keeps the race detector's view exact
		flooded := make(chan struct{})
		go func() {
			defer close(flooded)
			for i := range n {
				if _, err := fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", i); err != nil {
					return
				}
				written.Add(1)
			}
		}()
		synctest.Wait()
		assert.Equal(t, int32(max+1), written.Load(), "lines taken")
		assert.Equal(t, max, s.Stats().InFlight)
		require.ErrorIs(t, <-served, stdio.ErrWriteTimeout)
		<-flooded
		require.NoError(t, s.Shutdown(context.Background()))
		outR.Close()
		inW.Close()
	})
}
