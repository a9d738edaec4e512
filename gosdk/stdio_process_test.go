package gosdk_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/gosdk"
	"github.com/mcplisten/listen/stdio"
)

// childEnv makes the test binary a stdio server (see TestMain): a
// plainServer with tools that change it, served with gosdk.NewStdio on its
// standard input and output until SIGTERM, which calls Shutdown.
const childEnv = "GOSDK_TEST_STDIO_SERVER"

// runChildServer is the test binary as a stdio server process.
func runChildServer() int {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	srv := plainServer()
	var s *gosdk.Stdio
	n := 0
	mcp.AddTool(srv, &mcp.Tool{Name: "add_tool"}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
		n++
		addTool(srv, fmt.Sprintf("added-%d", n))
		return &mcp.CallToolResult{}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "update"}, func(ctx context.Context, _ *mcp.CallToolRequest, in struct {
		URI string `json:"uri"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, s.ResourceUpdated(ctx, in.URI) // the listens and the go-sdk's subscribers
	})
	s, err := gosdk.NewStdio(srv, gosdk.StdioOptions{Options: gosdk.Options{Logger: log}})
	if err != nil {
		log.Error("NewStdio", "err", err)
		return 1
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	shut := make(chan error, 1)
	go func() {
		<-term
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shut <- s.Shutdown(ctx)
	}()
	err = s.Run(context.Background())
	if !errors.Is(err, stdio.ErrServerClosed) {
		log.Error("Run", "err", err)
		return 1
	}
	if err := <-shut; err != nil {
		log.Error("Shutdown", "err", err)
		return 1
	}
	return 0
}

// tap sits between a server process and a go-sdk client on the same
// connection: lines the test sends itself are written whole, between the
// client's, and lines for the test (the answers to its ids, the messages
// of its listens) are taken out of the client's input, as written.
type tap struct {
	mu      sync.Mutex
	w       io.Writer
	mine    map[string]bool // the test's request ids and listen ids, as tokens
	forTest chan string
}

// Write takes the client's whole lines (the go-sdk writes each message
// with one Write) and keeps them from interleaving with the test's.
func (tp *tap) Write(p []byte) (int, error) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.w.Write(p)
}

func (tp *tap) Close() error { return nil }

// send writes line for the test, recording id as the test's.
func (tp *tap) send(t *testing.T, id, line string) {
	t.Helper()
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.mine[id] = true
	_, err := io.WriteString(tp.w, line+"\n")
	require.NoError(t, err)
}

// split reads the server's output and hands each line to the test or to
// the client (through the returned reader).
func (tp *tap) split(out io.Reader) io.ReadCloser {
	r, w := io.Pipe()
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			var m struct {
				ID     json.RawMessage `json:"id"`
				Params struct {
					Meta map[string]json.RawMessage `json:"_meta"`
				} `json:"params"`
			}
			_ = json.Unmarshal([]byte(line), &m)
			tp.mu.Lock()
			mine := tp.mine[string(m.ID)] || tp.mine[string(m.Params.Meta["io.modelcontextprotocol/subscriptionId"])]
			tp.mu.Unlock()
			if mine {
				tp.forTest <- line
				continue
			}
			if _, err := io.WriteString(w, line+"\n"); err != nil {
				break
			}
		}
		w.Close()
		close(tp.forTest)
	}()
	return r
}

func (tp *tap) next(t *testing.T, ctx context.Context) string {
	t.Helper()
	select {
	case l, ok := <-tp.forTest:
		require.True(t, ok, "the server's output ended")
		return l
	case <-ctx.Done():
		t.Fatal("timed out waiting for the server")
		return ""
	}
}

// TestStdioProcessEveryEraOnOneConnection runs the go-sdk server in a
// process of its own (this test binary, gosdk.NewStdio on its standard
// input and output) and, on its one connection, a go-sdk v1.8.0 client of
// protocol 2025-11-25 (initialize, tools/list, resources/subscribe, the
// go-sdk's own notifications) beside 2026-07-28 listens and requests the
// test writes itself: two listens, one cancelled while the other still
// receives; ids the go-sdk would decode its own way, answered with the
// exact token; and, on SIGTERM, Shutdown giving the open listen its
// notifications/cancelled and its completion result.
func TestStdioProcessEveryEraOnOneConnection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	tp := &tap{w: stdin, mine: map[string]bool{}, forTest: make(chan string, 64)}
	type note struct{ kind, uri string }
	notes := make(chan note, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "old", Version: "0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { notes <- note{kind: "tools"} },
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			notes <- note{kind: "updated", uri: r.Params.URI}
		},
	})
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: tp.split(stdout), Writer: tp}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	require.Equal(t, "2025-11-25", cs.InitializeResult().ProtocolVersion)
	nextNote := func() note {
		t.Helper()
		select {
		case n := <-notes:
			return n
		case <-ctx.Done():
			t.Fatal("no notification for the 2025-11-25 client")
			return note{}
		}
	}
	call := func(name string, args map[string]any) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		require.NoError(t, err, name)
		require.False(t, res.IsError, name)
	}

	// The older client is the go-sdk's, as without listen.
	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	assert.NotEmpty(t, tools.Tools)
	require.NoError(t, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uriA}))
	call("update", map[string]any{"uri": uriA})
	assert.Equal(t, note{kind: "updated", uri: uriA}, nextNote())

	// Two 2026-07-28 listens on the same connection.
	listen := func(id, notifications string) {
		t.Helper()
		tp.send(t, id, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"subscriptions/listen","params":{"_meta":{`+
			`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"notifications":%s}}`, id, notifications))
		ack := tp.next(t, ctx)
		require.Contains(t, ack, `"method":"notifications/subscriptions/acknowledged"`)
		require.Contains(t, ack, `"io.modelcontextprotocol/subscriptionId":`+id)
	}
	listen(`"L1"`, `{"toolsListChanged":true}`)
	listen(`"L2"`, `{"toolsListChanged":true,"resourceSubscriptions":["`+uriA+`"]}`)
	call("add_tool", nil)
	assert.Equal(t, note{kind: "tools"}, nextNote(), "the older client hears the go-sdk")
	got := []string{tp.next(t, ctx), tp.next(t, ctx)}
	for _, id := range []string{`"L1"`, `"L2"`} {
		assert.True(t, strings.Contains(got[0], `"io.modelcontextprotocol/subscriptionId":`+id) || strings.Contains(got[1], `"io.modelcontextprotocol/subscriptionId":`+id), "%s: %q", id, got)
	}
	for _, l := range got {
		assert.Contains(t, l, `"method":"notifications/tools/list_changed"`)
	}

	// Cancelling L1 leaves L2 receiving.
	tp.send(t, `"L1"`, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"L1","reason":"enough"}}`)
	call("update", map[string]any{"uri": uriA})
	assert.Equal(t, note{kind: "updated", uri: uriA}, nextNote())
	l := tp.next(t, ctx)
	assert.Contains(t, l, `"method":"notifications/resources/updated"`)
	assert.Contains(t, l, `"io.modelcontextprotocol/subscriptionId":"L2"`)
	call("add_tool", nil)
	assert.Equal(t, note{kind: "tools"}, nextNote())
	l = tp.next(t, ctx)
	assert.Contains(t, l, `"method":"notifications/tools/list_changed"`)
	assert.Contains(t, l, `"io.modelcontextprotocol/subscriptionId":"L2"`, "L1 was cancelled")

	// Ids the go-sdk decodes its own way are answered as sent.
	for _, id := range []string{`9007199254740993`, `-0`, `"\u0041"`, `"7"`, `12345678901234567890`} {
		tp.send(t, id, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)
		assert.Equal(t, `{"jsonrpc":"2.0","id":`+id+`,"result":{}}`, tp.next(t, ctx))
	}

	// Shutdown (on SIGTERM): L2 gets its cancellation and its completion.
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L2"},"reason":"Server shutdown","requestId":"L2"}}`, tp.next(t, ctx))
	assert.Equal(t, `{"jsonrpc":"2.0","id":"L2","result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"plain","version":"1.2.3"},"io.modelcontextprotocol/subscriptionId":"L2"},"resultType":"complete"}}`, tp.next(t, ctx))
	select {
	case err := <-exited:
		require.NoError(t, err, "the server process")
	case <-ctx.Done():
		t.Fatal("the server process did not exit")
	}
	_ = cs.Close()
	stdin.Close()
}
