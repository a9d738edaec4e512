package mcpgo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/stdio"
)

// StdioOptions configure NewStdio (and Serve and Run).
type StdioOptions struct {
	// Options configure the Bridge: the hub, listen.Options (Extensions,
	// CanRead, SubResources), the logger.
	Options
	// Stdio configures the listen multiplexer and the connection (limits,
	// write timeout, hooks; see stdio.Options). NewStdio sets its Listen to
	// Bridge.ListenOptions (built from Options.Listen) and its
	// SupportedVersions to the mcp-go server's; Handler is not used (every
	// message that is not a listen goes to mcp-go). Its bounds hold for
	// mcp-go's traffic too: MaxLineBytes bounds every input line, and
	// MaxInFlight the requests mcp-go is handling (each until its answer
	// was written) and the messages waiting for it.
	Stdio stdio.Options
	// SDK are the options of mcp-go's StdioServer, which serves every
	// message that is not a listen (server.WithErrorLogger,
	// server.WithWorkerPoolSize, ...).
	SDK []server.StdioOption
	// ShutdownTimeout bounds the drain when Serve's ctx ends: every open
	// listen is sent its completion result within it. Zero means 5 s.
	ShutdownTimeout time.Duration
}

// DefaultShutdownTimeout is the default of StdioOptions.ShutdownTimeout.
const DefaultShutdownTimeout = 5 * time.Second

// Stdio serves an mcp-go server over newline-delimited JSON-RPC
// connections, such as a process's standard input and output, with
// subscriptions/listen served by this library: the stdio handle, as
// Handler is the HTTP one.
//
// Each connection is a stdio.Conn shared by this library's listen
// multiplexer (a stdio.Server on the Bridge's Source: many listens at once,
// each tagged and filtered, one cancelled ending only that one) and mcp-go's
// own StdioServer, whose Listen reads and writes the Conn's peer side
// (stdio.Conn.Lines): every subscriptions/listen and every
// notifications/cancelled is the multiplexer's, every other message goes
// to mcp-go, and what mcp-go writes (its answers, the logging and progress
// notifications it sends for a request, its requests to the client) goes
// out on the Conn's one writer, as whole lines. The Conn gives mcp-go ids
// of its own and writes each answer with the client's id token exactly.
//
// mcp-go also writes every broadcast to its stdio session, untagged and
// unasked for. On a connection whose client spoke initialize (protocol
// versions before 2026-07-28, which receive list changes without opting
// in), they go out as mcp-go writes them. On any other connection the
// notifications a listen carries (the three list changes and
// resources/updated) and notifications/tasks/status are dropped there:
// that client receives them on its listens, tagged, if it asked.
//
// mcp-go's StdioServer has one session per process (a package variable):
// serve one connection at a time, and no other StdioServer beside it.
//
// Shutdown ends it. A Stdio is safe for concurrent use.
type Stdio struct {
	server *server.MCPServer
	bridge *Bridge
	mux    *stdio.Server
	opts   StdioOptions
	once   sync.Once
}

// NewStdio returns the stdio handle for s: one call adds
// subscriptions/listen to an mcp-go server over stdio, with the server's
// own broadcasts reaching every listen that asked for them (see Bridge).
//
//	x, err := mcpgo.NewStdio(s, mcpgo.StdioOptions{})
//	if err != nil { ... }
//	err = x.Run(ctx) // standard input and output, until ctx ends or the input does
//
// It fails as NewBridge does, and for invalid opts.Stdio.
func NewStdio(s *server.MCPServer, opts StdioOptions) (*Stdio, error) {
	if opts.ShutdownTimeout < 0 {
		return nil, errors.New("mcpgo: negative ShutdownTimeout")
	}
	if opts.ShutdownTimeout == 0 {
		opts.ShutdownTimeout = DefaultShutdownTimeout
	}
	b, err := NewBridge(context.Background(), s, opts.Options)
	if err != nil {
		return nil, err
	}
	so := opts.Stdio
	so.Listen = b.ListenOptions()
	so.SupportedVersions = b.Versions()
	so.Handler = nil
	mux, err := stdio.New(b.Source(), so)
	if err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("mcpgo: %w", err)
	}
	return &Stdio{server: s, bridge: b, mux: mux, opts: opts}, nil
}

// Run serves the process's standard input and output: Serve with os.Stdin
// and os.Stdout. Log to standard error only: anything else written to
// standard output corrupts the connection.
func (x *Stdio) Run(ctx context.Context) error { return x.Serve(ctx, os.Stdin, os.Stdout) }

// Serve serves one connection over r and w (see Stdio) until it ends:
//
//   - r ends (EOF, then nil; or a read error, returned): open listens are
//     closed without a terminal message, as the stdio package does, and
//     mcp-go's Listen returns once its handlers have (it cancels them);
//   - ctx ends: the Stdio is shut down (see Shutdown, bounded by
//     StdioOptions.ShutdownTimeout), and Serve returns ctx's cause once
//     mcp-go's Listen has returned;
//   - writing w failed or timed out: that error (see stdio.Server.Serve);
//   - Shutdown: every open listen gets its completion result, mcp-go
//     reads EOF, and Serve returns stdio.ErrServerClosed (as Serve does
//     once the Stdio is shut down).
//
// Goroutines: Serve runs the Conn's Serve and mcp-go's Listen on goroutines
// of their own (with the stdio package's and mcp-go's goroutines), and
// returns after both returned.
func (x *Stdio) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	conn := x.mux.NewConn(r, w)
	peerR, peerW := conn.Lines()
	p := &peer{r: peerR, w: peerW}
	sdk := server.NewStdioServer(x.server)
	for _, o := range x.opts.SDK {
		o(sdk)
	}

	served := make(chan error, 1)
	go func() { served <- conn.Serve(context.WithoutCancel(ctx)) }()
	listened := make(chan error, 1)
	go func() {
		// mcp-go's Listen ends when its input does (EOF once the Conn is
		// drained); its context is never cancelled, which would leave its
		// pending read behind.
		err := sdk.Listen(context.WithoutCancel(ctx), p, p)
		_ = conn.Close()
		listened <- err
	}()

	var result error
	select {
	case result = <-served:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), x.opts.ShutdownTimeout)
		_ = x.Shutdown(sctx)
		cancel()
		<-served
		result = context.Cause(ctx)
	}
	if err := <-listened; err != nil && result == nil && !errors.Is(err, stdio.ErrConnClosed) {
		result = fmt.Errorf("mcpgo: mcp-go's StdioServer: %w", err)
	}
	return result
}

// Shutdown ends every connection gracefully: each listen first gets every
// change the mcp-go server made before the call (the Bridge's hub is shut
// down, as Handler.Shutdown does), then its completion result; mcp-go reads EOF
// and its Listen returns; new connections are refused. It waits for that
// as stdio.Server.Shutdown does, returns ctx's error if it did not happen
// in time, then closes the Bridge. Shutdown is idempotent.
func (x *Stdio) Shutdown(ctx context.Context) error {
	err := x.bridge.drain(ctx)
	if serr := x.mux.Shutdown(ctx); err == nil {
		err = serr
	}
	x.once.Do(func() { _ = x.bridge.Close() })
	return err
}

// Bridge returns the Stdio's Bridge (capabilities, counters).
func (x *Stdio) Bridge() *Bridge { return x.bridge }

// Hub returns the hub the listens are served from.
func (x *Stdio) Hub() *hub.Hub { return x.bridge.hub }

// Server returns the listen multiplexer (its Stats).
func (x *Stdio) Server() *stdio.Server { return x.mux }

// Stats returns the multiplexer's counters.
func (x *Stdio) Stats() stdio.Stats { return x.mux.Stats() }

// Run serves s over the process's standard input and output until ctx ends
// or the input does: NewStdio, Stdio.Run, and the Bridge closed at the end.
func Run(ctx context.Context, s *server.MCPServer, opts StdioOptions) error {
	return Serve(ctx, s, os.Stdin, os.Stdout, opts)
}

// Serve serves s over one connection, r and w, until it ends: NewStdio,
// Stdio.Serve, and the Bridge closed at the end.
func Serve(ctx context.Context, s *server.MCPServer, r io.Reader, w io.Writer, opts StdioOptions) error {
	x, err := NewStdio(s, opts)
	if err != nil {
		return err
	}
	defer x.once.Do(func() { _ = x.bridge.Close() })
	return x.Serve(ctx, r, w)
}

// peer is mcp-go's side of the Conn: the Conn's lines, with what mcp-go
// writes on its own to its stdio session filtered (see Stdio).
type peer struct {
	r io.Reader
	w io.Writer
	// legacy is set once the client sent initialize through the peer.
	legacy atomic.Bool

	mu  sync.Mutex
	buf []byte // read from r, not yet handed to mcp-go
}

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
		p.buf = append(p.buf, b[:n]...)
		for {
			i := bytes.IndexByte(p.buf, '\n')
			if i < 0 {
				break
			}
			if isInitialize(p.buf[:i]) {
				p.legacy.Store(true)
				p.buf = nil
				break
			}
			p.buf = p.buf[i+1:]
		}
		p.mu.Unlock()
	}
	return n, err
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

// notificationHead begins every notification mcp-go v1.2.1 writes (it
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
