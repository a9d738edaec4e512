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

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/internal/serving"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/stdio"
)

// StdioOptions configure NewStdio and Run.
type StdioOptions struct {
	// Options configure the Bridge: the hub, the listen.Options (every
	// field but the three read from the server: see Options.Listen), the
	// logger.
	Options
	// Stdio configures the connection (limits, write timeout; see
	// stdio.Options). The listens are served by a listen.Server made with
	// Bridge.ListenOptions (built from Options.Listen: the hooks, the
	// stream limits, the drain window), its SupportedVersions set to the
	// mcp-go server's (see Stdio.Listen). Handler is not used (every
	// message that is not a listen or a cancellation goes to mcp-go). Its
	// bounds hold for mcp-go's traffic too: MaxLineBytes bounds every input
	// line (a longer one never reaches mcp-go and is answered with the
	// multiplexer's -32600 error; the connection goes on), MaxInFlight
	// the requests mcp-go is handling (each until its answer was written)
	// and the messages waiting for it, and MaxLineBytes again the bytes of
	// the requests mcp-go is handling, added up: mcp-go serves each request
	// on a goroutine of its own, so the connection hands it no more than
	// that at once.
	Stdio stdio.Options
	// SDK are the options of the mcp-go StdioServer made for each
	// connection, which serves every message that is not a listen
	// (server.WithErrorLogger, server.WithWorkerPoolSize, ...).
	SDK []server.StdioOption
	// ShutdownTimeout bounds the drain when Serve's context ends: every
	// open listen is sent notifications/cancelled and its completion result
	// (see the stdio package), and mcp-go answers what it is handling,
	// within it. Zero means 5 s.
	ShutdownTimeout time.Duration
}

// DefaultShutdownTimeout is the default of StdioOptions.ShutdownTimeout.
const DefaultShutdownTimeout = 5 * time.Second

// Stdio serves an mcp-go server over stdio with subscriptions/listen added:
// the stdio counterpart of Handler. Make one with NewStdio, serve
// connections with Serve (or Run, on standard input and output) and end it
// with Shutdown. Its methods are safe for concurrent use.
type Stdio struct {
	server  *server.MCPServer
	bridge  *Bridge
	mux     *stdio.Server
	listen  *listen.Server // mux's listen policy
	sdk     []server.StdioOption
	timeout time.Duration

	serving serving.Group // the Serve calls under way
}

// NewStdio returns the Stdio for s: one call adds subscriptions/listen to
// an mcp-go server over stdio, with the server's own broadcasts (AddTool,
// DeletePrompts, SendNotificationToAllClients of resources/updated, ...)
// reaching every listen that asked for them (see Bridge).
//
//	x, err := mcpgo.NewStdio(s, mcpgo.StdioOptions{})
//	if err != nil { ... }
//	defer x.Shutdown(ctx)
//	err = x.Run(ctx)
//
// It fails as NewBridge does, and for invalid stdio options.
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
	mux, ls, err := serving.NewMux(b.Source(), b.ListenOptions(), b.Versions(), opts.Stdio)
	if err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("mcpgo: %w", err)
	}
	return &Stdio{server: s, bridge: b, mux: mux, listen: ls, sdk: slices.Clone(opts.SDK), timeout: opts.ShutdownTimeout}, nil
}

// Run serves the process's standard input and output: Serve with os.Stdin
// and os.Stdout. Log to standard error only: anything else written to
// standard output corrupts the connection (and, while Run runs, a Write to
// os.Stdout may fail with EAGAIN: see stdio.Options.BlockingFiles).
func (x *Stdio) Run(ctx context.Context) error { return x.Serve(ctx, os.Stdin, os.Stdout) }

// Serve runs one MCP stdio connection over r and w (newline-delimited
// JSON-RPC): a stdio.Conn shared by this library's listen multiplexer and
// an mcp-go StdioServer.
//
// Every subscriptions/listen request, whatever protocol version it names,
// and every notifications/cancelled, is served by the multiplexer: a
// 2026-07-28 listen is served from the Bridge's hub (many at once, each
// tagged with its own id and filtered; cancelling one ends only that one,
// and nothing more is written for it); a listen naming an earlier version
// gets -32601, any other version -32022 with the server's supported
// versions; mcp-go's own listen code never runs. Every other message goes
// to mcp-go's StdioServer.Listen, which reads and writes the Conn's peer
// side (stdio.Conn.Lines), so clients of earlier versions (initialize and
// mcp-go's notifications) are served by mcp-go on the same connection.
// Everything is written through the Conn's one writer, one whole line per
// message, including what mcp-go sends on its own (the logging and
// progress notifications of a request, its requests to the client).
//
// mcp-go knows each request by an id of the Conn's own and its answer is
// written with the client's exact id token (see stdio.Conn), so ids mcp-go
// would decode as float64 (9007199254740993), or re-escape ("\u0037"), are
// answered as sent.
//
// mcp-go also writes every broadcast to its stdio session, untagged and
// unasked for. On a connection whose client spoke initialize (protocol
// versions before 2026-07-28, which receive list changes without opting
// in) they go out as mcp-go writes them. On any other connection the
// notifications a listen carries (the three list changes and
// resources/updated) and notifications/tasks/status are dropped there: that
// client receives them on its listens, tagged, if it asked.
//
// mcp-go's StdioServer has one session per process (a package variable):
// serve one connection at a time, and run no other mcp-go StdioServer
// beside it.
//
// Serve returns when r ends (EOF, then nil; or a read error, returned):
// open listens are closed without a terminal message, as the stdio package
// does, and mcp-go's Listen returns once its handlers have; or when ctx
// ends: the connection is drained (every open listen gets its completion
// result), mcp-go answers what it is handling within
// StdioOptions.ShutdownTimeout, and Serve returns ctx's cause; or with
// stdio.ErrServerClosed once Shutdown drained it. It also returns when
// writing w failed or timed out, with that error (see stdio.Server.Serve).
//
// Goroutines: Serve runs the Conn on goroutines of the stdio package and
// mcp-go's Listen on one of its own (with mcp-go's goroutines); all have
// returned when Serve returns, but a Read or Write the stdio package could
// not interrupt (see stdio.Server.Serve) and, after ShutdownTimeout, an
// mcp-go handler that ignores its context.
func (x *Stdio) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	if !x.serving.Enter() {
		return stdio.ErrServerClosed
	}
	defer x.serving.Leave()

	conn := x.mux.NewConn(r, w)
	peerR, peerW := conn.Lines()
	p := &peer{r: peerR, w: peerW}
	sdk := server.NewStdioServer(x.server)
	for _, o := range x.sdk {
		o(sdk)
	}
	served := make(chan error, 1)
	go func() { served <- conn.Serve(ctx) }()
	listened := make(chan error, 1)
	go func() {
		// mcp-go's Listen ends when its input does (EOF once the Conn is
		// drained, or ErrConnClosed); its context is never cancelled,
		// which would leave its pending read behind.
		err := sdk.Listen(context.WithoutCancel(ctx), p, p)
		_ = conn.Close()
		listened <- err
	}()

	// Serve returns when the input ended (mcp-go read io.EOF, answered and
	// closed the Conn), a write failed, or Shutdown drained the connection;
	// or, once ctx ended, when the Conn has drained on its own: mcp-go
	// answers what it is handling, then closes it, or the Conn is closed
	// after ShutdownTimeout (mcp-go's Listen then reads ErrConnClosed).
	result := serving.Drain(ctx, served, x.timeout, func() { _ = conn.Close() })
	if err := <-listened; err != nil && result == nil && !errors.Is(err, stdio.ErrConnClosed) {
		result = fmt.Errorf("mcpgo: mcp-go's StdioServer: %w", err)
	}
	return result
}

// Shutdown ends every connection gracefully, as stdio.Server.Shutdown
// does, once every broadcast the mcp-go server made before the call has
// reached the hub (Bridge.Flush): each connection stops reading, every open
// listen is sent notifications/cancelled and its completion result (as
// stdio asks of a server ending a listen), mcp-go answers what it is
// handling and reads EOF; Serve calls return stdio.ErrServerClosed, and
// later ones return it at once. Shutdown returns once every Serve call
// returned, then closes the Bridge; or, if ctx ends first, cuts the
// connections still draining, closes the Bridge and returns ctx's error.
// The hub is left as it is. It may be called more than once.
func (x *Stdio) Shutdown(ctx context.Context) error {
	x.serving.Close()
	x.bridge.Flush()
	err := x.mux.Shutdown(ctx)
	if werr := x.serving.Wait(ctx); err == nil {
		err = werr
	}
	_ = x.bridge.Close()
	return err
}

// ResourceUpdated tells every listen covering uri, and every older client,
// that the resource changed: see Bridge.ResourceUpdated.
func (x *Stdio) ResourceUpdated(ctx context.Context, uri string) error {
	return x.bridge.ResourceUpdated(ctx, uri)
}

// Bridge returns the Stdio's Bridge (capabilities, counters).
func (x *Stdio) Bridge() *Bridge { return x.bridge }

// Hub returns the hub the listens are served from.
func (x *Stdio) Hub() *hub.Hub { return x.bridge.hub }

// Stats returns the connections' counters: connections, requests in
// flight. Listen().Stats() counts the listens.
func (x *Stdio) Stats() stdio.Stats { return x.mux.Stats() }

// Listen returns the listen.Server that serves the listens (its Stats,
// EndStreams), made with the Bridge's ListenOptions.
func (x *Stdio) Listen() *listen.Server { return x.listen }

// Run serves s over the process's standard input and output until the
// input ends or ctx ends (see Stdio.Serve), then shuts down: the one-line
// form of NewStdio, Stdio.Run and Stdio.Shutdown.
func Run(ctx context.Context, s *server.MCPServer, opts StdioOptions) error {
	x, err := NewStdio(s, opts)
	if err != nil {
		return err
	}
	err = x.Run(ctx)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), x.timeout)
	defer cancel()
	_ = x.Shutdown(sctx)
	return err
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
