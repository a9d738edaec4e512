package gosdk

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

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
	// for the go-sdk's traffic too, and the drain's bound when Serve's
	// context ends (zero: 5 s). The go-sdk reads notifications into a
	// queue of its own, unbounded, and handles them one at a time, as over
	// its own IOTransport: keep notification handlers quick.
	Stdio           stdio.Options
	ShutdownTimeout time.Duration
}

// Stdio serves a go-sdk server over stdio with subscriptions/listen added:
// the adapter package's Stdio. Its Serve connects the go-sdk server with
// Server.Connect over a transport on the stdio.Conn, so clients of earlier
// versions are served by the go-sdk on the same connection. A request the
// go-sdk cannot decode (JSON nested deeper than it accepts, for one) is
// answered with -32600 "Invalid request: the server cannot decode it"
// (any other such message is dropped), so every request the go-sdk is
// handed is answered and its unit of stdio.Options.MaxInFlight comes back.
type Stdio = adapter.Stdio

// NewStdio returns the Stdio for server: one call adds
// subscriptions/listen to a go-sdk server over stdio, with the go-sdk's own
// list changes reaching every listen that asked for them (see NewBridge).
// It fails as NewBridge does, and for invalid options.
func NewStdio(server *mcp.Server, opts StdioOptions) (*Stdio, error) {
	b, err := NewBridge(context.Background(), server, opts.Options)
	if err != nil {
		return nil, err
	}
	log := cmp.Or(opts.Logger, slog.Default())
	return adapter.NewStdio(b, adapter.StdioOptions{
		Stdio:           opts.Stdio,
		ShutdownTimeout: opts.ShutdownTimeout,
		Connect: func(ctx context.Context, c *stdio.Conn) (func() error, error) {
			ss, err := server.Connect(ctx, &sdkConn{c: c, log: log}, nil)
			if err != nil {
				return nil, fmt.Errorf("gosdk: connecting the go-sdk server: %w", err)
			}
			return func() error {
				_ = ss.Close()
				_ = ss.Wait()
				return nil
			}, nil
		},
	})
}

// Run serves server over the process's standard input and output until
// the input ends or ctx ends (see Stdio.Serve), then shuts down: the
// one-line form of NewStdio and Stdio.Run.
func Run(ctx context.Context, server *mcp.Server, opts StdioOptions) error {
	s, err := NewStdio(server, opts)
	if err != nil {
		return err
	}
	return s.Run(ctx)
}

// msgUndecodable is the message of the -32600 error a request the go-sdk
// cannot decode is answered with.
const msgUndecodable = "Invalid request: the server cannot decode it"

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
// msgUndecodable, which frees it on the Conn; anything else is dropped.
func (s *sdkConn) refuse(ctx context.Context, raw []byte, why error) {
	m, err := jsonrpc.ParseMessage(raw)
	if err != nil || !m.HasID {
		s.log.Debug("gosdk: a message the go-sdk cannot decode dropped", "err", why)
		return
	}
	s.log.Debug("gosdk: a request the go-sdk cannot decode refused", "err", why)
	answer := jsonrpc.ErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, msgUndecodable))
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
