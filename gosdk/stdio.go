package gosdk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

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
	// go-sdk server's (see Stdio.Listen). Handler is not used (every
	// message that is not a listen or a cancellation goes to the go-sdk).
	// Its bounds hold for the go-sdk's traffic too: MaxLineBytes bounds
	// every input line (a longer one is never buffered past the limit and
	// is answered with the multiplexer's -32600 error; the connection goes
	// on), MaxInFlight the requests the go-sdk is handling (each until
	// its answer was written) and the messages queued for it to read, and
	// MaxLineBytes again the bytes of the requests it is handling, added
	// up. The
	// go-sdk reads notifications into a queue of its own, unbounded, and
	// handles them one at a time, as over its own IOTransport: keep
	// notification handlers (ProgressNotificationHandler, ...) quick.
	Stdio stdio.Options
	// ShutdownTimeout bounds the drain when Serve's context ends: every
	// open listen is sent notifications/cancelled and its completion result
	// (see the stdio package), and the go-sdk answers what it is handling,
	// within it; then the go-sdk session is closed. Zero means 5 s.
	ShutdownTimeout time.Duration
}

// Stdio serves a go-sdk server over stdio with subscriptions/listen added:
// the stdio counterpart of Handler. Make one with NewStdio, serve
// connections with Serve (or Run, on standard input and output) and end it
// with Shutdown. Its methods are safe for concurrent use.
type Stdio struct {
	server  *mcp.Server
	bridge  *Bridge
	mux     *stdio.Server
	listen  *listen.Server // mux's listen policy
	timeout time.Duration

	serving serving.Group // the Serve calls under way
}

// NewStdio returns the Stdio for server: one call adds
// subscriptions/listen to a go-sdk server over stdio, with the go-sdk's own
// list changes (AddTool, RemovePrompts, ...) reaching every listen that
// asked for them, and Stdio.ResourceUpdated every listen and older client
// watching a resource (see Bridge).
//
//	s, err := gosdk.NewStdio(server, gosdk.StdioOptions{})
//	if err != nil { ... }
//	defer s.Shutdown(ctx)
//	err = s.Run(ctx)
//
// It fails as NewBridge does, and for invalid stdio options.
func NewStdio(server *mcp.Server, opts StdioOptions) (*Stdio, error) {
	if opts.ShutdownTimeout < 0 {
		return nil, errors.New("gosdk: negative ShutdownTimeout")
	}
	if opts.ShutdownTimeout == 0 {
		opts.ShutdownTimeout = 5 * time.Second
	}
	b, err := NewBridge(context.Background(), server, opts.Options)
	if err != nil {
		return nil, err
	}
	mux, ls, err := serving.NewMux(b.Source(), b.ListenOptions(), b.Versions(), opts.Stdio)
	if err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("gosdk: %w", err)
	}
	return &Stdio{server: server, bridge: b, mux: mux, listen: ls, timeout: opts.ShutdownTimeout}, nil
}

// Run serves the process's standard input and output: Serve with os.Stdin
// and os.Stdout. Log to standard error only: anything else written to
// standard output corrupts the connection (and, while Run runs, a Write to
// os.Stdout may fail with EAGAIN: see stdio.Options.BlockingFiles).
func (s *Stdio) Run(ctx context.Context) error {
	return s.Serve(ctx, os.Stdin, os.Stdout)
}

// Serve runs one MCP stdio connection over r and w (newline-delimited
// JSON-RPC): a stdio.Conn shared by this library's listen multiplexer and
// the go-sdk server.
//
// Every subscriptions/listen request, whatever protocol version it names,
// and every notifications/cancelled, is served by the multiplexer: a
// 2026-07-28 listen is served from the Bridge's hub (many at once;
// cancelling one ends only that one); a listen naming an earlier version
// the go-sdk server speaks gets -32601, any other version -32022 with the
// server's supported versions, as the specification asks; the go-sdk's own
// listen code never runs. Every other message goes to the go-sdk server,
// connected with Server.Connect over a transport on the Conn, so clients of
// earlier versions (initialize, resources/subscribe, the go-sdk's own
// notifications) are served by the go-sdk on the same connection. Both
// write through the Conn's one writer, one whole line per message.
//
// The go-sdk knows each request by an id of the Conn's own and its answer
// is written with the client's exact id token (see stdio.Conn), so ids the
// go-sdk would decode its own way (-0, "\u0041", integers beyond 2^53) are
// answered as sent. A request the go-sdk cannot decode (JSON nested deeper
// than it accepts, for one) is answered with -32600 MsgUndecodable; any
// other message it cannot decode is dropped. So, while the connection is
// up, every request the go-sdk is handed is answered, and its unit of
// stdio.Options.MaxInFlight comes back.
//
// Serve returns when r ends (EOF, then nil; or a read error, returned):
// open listens are closed without a terminal message, as the stdio package
// does, and the go-sdk ends its session once its handlers returned; or when
// ctx ends: the connection is drained (every open listen gets its
// completion result; see StdioOptions.ShutdownTimeout), the go-sdk session
// is closed, and Serve returns ctx's cause; or with stdio.ErrServerClosed
// once Shutdown drained it. It also returns when writing w failed or timed
// out, with that error (see stdio.Server.Serve).
//
// Goroutines: Serve runs the Conn on goroutines of the stdio package (its
// reader, its writer and one per listen, all ended when Serve returns, but
// a Read or Write it could not interrupt; see stdio.Server.Serve) and the
// go-sdk session, whose goroutines are the go-sdk's and have returned when
// Serve returns.
func (s *Stdio) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	if !s.serving.Enter() {
		return stdio.ErrServerClosed
	}
	defer s.serving.Leave()

	conn := s.mux.NewConn(r, w)
	ss, err := s.server.Connect(ctx, newSDKConn(conn, s.bridge.log), nil)
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("gosdk: connecting the go-sdk server: %w", err)
	}
	served := make(chan error, 1)
	go func() { served <- conn.Serve(ctx) }()
	// Serve returns when the input ended (the go-sdk read io.EOF and closed
	// the Conn once idle), a write failed, or Shutdown drained the
	// connection; or, once ctx ended, when the Conn has drained on its own:
	// the go-sdk answers what it is handling, then closes it, or is closed
	// after ShutdownTimeout.
	result := serving.Drain(ctx, served, s.timeout, func() { _ = ss.Close() })
	_ = ss.Close()
	_ = ss.Wait()
	return result
}

// Shutdown ends every connection gracefully, as stdio.Server.Shutdown
// does: each stops reading, every open listen gets its completion result,
// the go-sdk answers what it is handling and its sessions end; Serve calls
// return stdio.ErrServerClosed, and later ones return it at once. Shutdown
// returns once every Serve call returned, then closes the Bridge; or, if
// ctx ends first, cuts the connections still draining (their listens are
// closed as listen.Disconnected), closes the Bridge and returns ctx's
// error. It may be called more than once.
func (s *Stdio) Shutdown(ctx context.Context) error {
	s.serving.Close()
	err := s.mux.Shutdown(ctx)
	if werr := s.serving.Wait(ctx); err == nil {
		err = werr
	}
	_ = s.bridge.Close()
	return err
}

// Bridge returns the Stdio's Bridge (capabilities, counters).
func (s *Stdio) Bridge() *Bridge { return s.bridge }

// Hub returns the hub the listens are served from.
func (s *Stdio) Hub() *hub.Hub { return s.bridge.hub }

// ResourceUpdated tells every listen and every older client watching uri
// that the resource changed, each exactly once (see Bridge.ResourceUpdated).
func (s *Stdio) ResourceUpdated(ctx context.Context, uri string) error {
	return s.bridge.ResourceUpdated(ctx, uri)
}

// Stats returns the connections' counters: connections, requests in
// flight. Listen().Stats() counts the listens.
func (s *Stdio) Stats() stdio.Stats { return s.mux.Stats() }

// Listen returns the listen.Server that serves the listens (its Stats,
// EndStreams), made with the Bridge's ListenOptions.
func (s *Stdio) Listen() *listen.Server { return s.listen }

// Run serves server over the process's standard input and output until
// the input ends or ctx ends (see Stdio.Serve), then shuts down: the
// one-line form of NewStdio, Stdio.Run and Stdio.Shutdown.
func Run(ctx context.Context, server *mcp.Server, opts StdioOptions) error {
	s, err := NewStdio(server, opts)
	if err != nil {
		return err
	}
	err = s.Run(ctx)
	_ = s.Shutdown(context.WithoutCancel(ctx))
	return err
}

// MsgUndecodable is the message of the -32600 error Serve answers a request
// with when the go-sdk cannot decode it.
const MsgUndecodable = "Invalid request: the server cannot decode it"

// sdkConn is the go-sdk server's mcp.Transport and mcp.Connection on a
// stdio.Conn: Read decodes what the Conn hands its peer, Write encodes what
// the go-sdk sends, Close closes the Conn. The Conn rebuilds every message
// from the members it read, names matched exactly as the go-sdk matches
// them, and gives requests ids of its own, so the go-sdk reads each
// message as the multiplexer did and its ids need no bookkeeping here.
type sdkConn struct {
	c   *stdio.Conn
	log *slog.Logger
}

func newSDKConn(c *stdio.Conn, log *slog.Logger) *sdkConn {
	return &sdkConn{c: c, log: log}
}

// Connect implements mcp.Transport.
func (s *sdkConn) Connect(context.Context) (mcp.Connection, error) { return s, nil }

// Read implements mcp.Connection: the next message the go-sdk can decode.
func (s *sdkConn) Read(ctx context.Context) (sdkjsonrpc.Message, error) {
	for {
		raw, err := s.c.ReadMessage(ctx)
		if err != nil {
			return nil, err
		}
		msg, err := sdkjsonrpc.DecodeMessage(raw)
		if err != nil {
			s.refuse(ctx, raw, err)
			continue
		}
		return msg, nil
	}
}

// refuse answers a request the go-sdk cannot decode with -32600
// MsgUndecodable, which frees it on the Conn; anything else is dropped.
func (s *sdkConn) refuse(ctx context.Context, raw []byte, why error) {
	m, err := jsonrpc.ParseMessage(raw)
	if err != nil || !m.HasID {
		s.log.Debug("gosdk: a message the go-sdk cannot decode dropped", "err", why)
		return
	}
	s.log.Debug("gosdk: a request the go-sdk cannot decode refused", "err", why)
	answer := jsonrpc.ErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, MsgUndecodable))
	if err := s.c.WriteMessage(context.WithoutCancel(ctx), answer); err != nil {
		s.log.Debug("gosdk: refusal not written", "err", err)
	}
}

// Write implements mcp.Connection: one message, written as one line by the
// Conn's writer (an answer with the client's id token).
func (s *sdkConn) Write(ctx context.Context, msg sdkjsonrpc.Message) error {
	b, err := sdkjsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return s.c.WriteMessage(ctx, b)
}

// Close implements mcp.Connection: it closes the Conn (see stdio.Conn.Close).
func (s *sdkConn) Close() error { return s.c.Close() }

// SessionID implements mcp.Connection.
func (s *sdkConn) SessionID() string { return "" }
