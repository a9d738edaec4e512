package mcpgo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplisten/listen/adapter"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/stdio"
)

// StdioOptions configure NewStdio and Run.
type StdioOptions struct {
	// Options configure the Bridge.
	Options
	// Stdio and ShutdownTimeout are those of adapter.StdioOptions: the
	// listen multiplexer's and the connection's options, whose bounds hold
	// for mcp-go's traffic too (it serves each request on a goroutine of
	// its own: the connection hands it at most MaxInFlight at once), and
	// the drain's bound when Serve's context ends (zero: 5 s).
	Stdio           stdio.Options
	ShutdownTimeout time.Duration
	// SDK are the options of the mcp-go StdioServer made for each
	// connection (server.WithErrorLogger, server.WithWorkerPoolSize, ...).
	SDK []server.StdioOption
}

// Stdio serves an mcp-go server over stdio with subscriptions/listen added:
// the adapter package's Stdio. Its Serve runs mcp-go's StdioServer.Listen
// on the stdio.Conn's peer side (stdio.Conn.Lines), on a goroutine of its
// own, so clients of earlier versions are served by mcp-go on the same
// connection; mcp-go writes through the Conn's one writer too. mcp-go also
// writes every broadcast to its stdio session, untagged: they go out as
// written on a connection whose client spoke initialize (versions before
// 2026-07-28), and on any other the kinds a listen carries and
// notifications/tasks/status are dropped there (that client receives them
// on its listens, if it asked). mcp-go's StdioServer has one session per
// process: serve one connection at a time. After ShutdownTimeout, an
// mcp-go handler that ignores its context may outlive Serve.
type Stdio = adapter.Stdio

// NewStdio returns the Stdio for s: one call adds subscriptions/listen to
// an mcp-go server over stdio, with the server's own broadcasts reaching
// every listen that asked for them (see NewBridge). It fails as NewBridge
// does, and for invalid options.
func NewStdio(s *server.MCPServer, opts StdioOptions) (*Stdio, error) {
	b, err := NewBridge(context.Background(), s, opts.Options)
	if err != nil {
		return nil, err
	}
	sdkOpts := slices.Clone(opts.SDK)
	return adapter.NewStdio(b, adapter.StdioOptions{
		Stdio:           opts.Stdio,
		ShutdownTimeout: opts.ShutdownTimeout,
		Connect: func(ctx context.Context, conn *stdio.Conn) (func() error, error) {
			peerR, peerW := conn.Lines()
			p := &peer{r: peerR, w: peerW}
			sdk := server.NewStdioServer(s)
			for _, o := range sdkOpts {
				o(sdk)
			}
			listened := make(chan error, 1)
			go func() {
				// mcp-go's Listen ends when its input does (EOF once the Conn is
				// drained, or ErrConnClosed); its context is never cancelled,
				// which would leave its pending read behind.
				err := sdk.Listen(context.WithoutCancel(ctx), p, p)
				_ = conn.Close()
				listened <- err
			}()
			return func() error {
				if err := <-listened; err != nil && !errors.Is(err, stdio.ErrConnClosed) {
					return fmt.Errorf("mcpgo: mcp-go's StdioServer: %w", err)
				}
				return nil
			}, nil
		},
	})
}

// Run serves s over the process's standard input and output until the
// input ends or ctx ends (see Stdio.Serve), then shuts down: the one-line
// form of NewStdio and Stdio.Run.
func Run(ctx context.Context, s *server.MCPServer, opts StdioOptions) error {
	x, err := NewStdio(s, opts)
	if err != nil {
		return err
	}
	return x.Run(ctx)
}

// peer is mcp-go's side of the Conn: the Conn's lines, with what mcp-go
// writes on its own to its stdio session filtered (see Stdio).
type peer struct {
	r io.Reader
	w io.Writer
	// legacy is set once the client sent initialize through the peer.
	legacy atomic.Bool

	mu sync.Mutex
	// line is the beginning of the line mcp-go is reading (all of it when
	// it may be an initialize); skip: the rest of the line is not kept.
	line []byte
	skip bool
}

// initializeHead is how far into a line an initialize names its method: the
// Conn writes {"jsonrpc":"2.0","id":N,"method":"initialize", N at most 20
// digits. Only such a line is kept whole, so that a large line is not
// copied again for the check.
const initializeHead = 64

// broadcastOnly are the notifications mcp-go writes to its stdio session
// only as broadcasts, which a 2026-07-28 client receives on its listens.
var broadcastOnly = []string{
	mcp.MethodNotificationToolsListChanged,
	mcp.MethodNotificationPromptsListChanged,
	mcp.MethodNotificationResourcesListChanged,
	mcp.MethodNotificationResourceUpdated,
	mcp.MethodNotificationTasksStatus,
}

// Read hands mcp-go the Conn's messages, noting an initialize.
func (p *peer) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 && !p.legacy.Load() {
		p.mu.Lock()
		p.scan(b[:n])
		p.mu.Unlock()
	}
	return n, err
}

// scan follows the lines in b, the next bytes mcp-go reads, and sets legacy
// at an initialize. It keeps the first initializeHead bytes of each line,
// and the rest only of a line that names initialize there.
func (p *peer) scan(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		chunk := b
		if i >= 0 {
			chunk = b[:i]
		}
		if !p.skip && len(p.line) < initializeHead {
			k := min(len(chunk), initializeHead-len(p.line))
			p.line = append(p.line, chunk[:k]...)
			chunk = chunk[k:]
			p.skip = len(p.line) == initializeHead && !bytes.Contains(p.line, []byte(`"method":"initialize"`))
		}
		if !p.skip {
			p.line = append(p.line, chunk...)
		}
		if i < 0 {
			return
		}
		if !p.skip && isInitialize(p.line) {
			p.legacy.Store(true)
			p.line = nil
			return
		}
		if cap(p.line) > 4*initializeHead {
			p.line = nil // an initialize's: not kept for the connection's life
		}
		p.line, p.skip = p.line[:0], false
		b = b[i+1:]
	}
}

// isInitialize reports whether line is an initialize request of an
// initialize-era client (mcp-go refuses one naming 2026-07-28 or later in
// its _meta). The Conn rebuilds every message it hands the peer, with
// "method" written this way.
func isInitialize(line []byte) bool {
	if !bytes.Contains(line, []byte(`"method":"initialize"`)) {
		return false
	}
	m, err := jsonrpc.ParseMessage(line)
	if err != nil || !m.HasID || m.Method != string(mcp.MethodInitialize) {
		return false
	}
	var p struct {
		Meta struct {
			Version string `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
	}
	_ = json.Unmarshal(m.Params, &p)
	return !mcp.IsModernProtocol(p.Meta.Version)
}

// notificationHead begins every notification mcp-go writes (v1.2.1 through v1.6.0: it
// encodes mcp.JSONRPCNotification: jsonrpc, then method); its answers
// begin with the id instead.
const notificationHead = `{"jsonrpc":"2.0","method":"`

// Write passes mcp-go's lines on, but for its broadcasts to a client that
// did not speak initialize.
func (p *peer) Write(b []byte) (int, error) {
	if !p.legacy.Load() {
		if rest, ok := bytes.CutPrefix(b, []byte(notificationHead)); ok {
			if i := bytes.IndexByte(rest, '"'); i >= 0 && slices.Contains(broadcastOnly, string(rest[:i])) {
				return len(b), nil
			}
		}
	}
	return p.w.Write(b)
}
