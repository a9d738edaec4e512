package gosdk

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/stdio"
)

// StdioOptions configure Serve and Run.
type StdioOptions struct {
	// Options configure the Bridge: the hub, listen.Options (Extensions,
	// CanRead), the logger.
	Options
	// Stdio configures the listen multiplexer (limits, write timeout,
	// hooks; see stdio.Options). Serve sets its Listen to
	// Bridge.ListenOptions (built from Options.Listen) and its
	// SupportedVersions to the go-sdk server's; Handler is not used (every
	// message that is not a listen goes to the go-sdk). Its MaxLineBytes
	// bounds every input line, the go-sdk's included: a longer line is
	// never buffered past the limit and is answered by the multiplexer with
	// its -32600 error; the connection goes on.
	Stdio stdio.Options
	// ShutdownTimeout bounds the drain when ctx ends: every open listen is
	// sent notifications/cancelled and its completion result (see the stdio
	// package) within it. Zero means 5 s.
	ShutdownTimeout time.Duration
}

// Run serves server over the process's standard input and output: Serve
// with os.Stdin and os.Stdout. Log to standard error only: anything else
// written to standard output corrupts the connection.
func Run(ctx context.Context, server *mcp.Server, opts StdioOptions) error {
	return Serve(ctx, server, os.Stdin, os.Stdout, opts)
}

// Serve runs one MCP stdio connection for a go-sdk server over r and w
// (newline-delimited JSON-RPC): one call adds subscriptions/listen to a
// go-sdk server over stdio, with the go-sdk's own changes reaching every
// listen that asked for them (see Bridge).
//
// Every subscriptions/listen request naming protocol version 2026-07-28,
// and every notifications/cancelled, goes to this library's stdio
// multiplexer (stdio.Server, serving many listens at once from the Bridge's
// hub; cancelling one ends only that one). A cancellation is also handed to
// the go-sdk, which ignores it unless it names one of its own requests
// (request ids are unique among those in flight). Every other message,
// including a listen naming another version (so that the -32022 answer is
// the go-sdk's own), goes to the go-sdk server, connected with
// Server.Connect over a transport of this package. Both write to w through
// one lock, one whole line per Write call: messages never interleave within
// a line, and what the go-sdk sends on its own (logging and progress
// notifications, requests to the client) goes out as it is.
//
// Serve returns when r ends (EOF or a read error, returned): open listens
// are closed without a terminal message, as the stdio package does, the
// go-sdk session ends, and the Bridge is closed; or when ctx ends: every
// open listen is drained (see StdioOptions.ShutdownTimeout), the go-sdk
// session is closed, and Serve returns ctx's cause. It also returns when the
// multiplexer's Serve fails (a write timeout on w), with that error.
//
// Goroutines: Serve starts a reader (ends at r's end, or when Serve closes r
// because ctx ended, if r is an io.Closer other than *os.File; a Read of
// os.Stdin that cannot be interrupted is left behind and ends with the
// process), the multiplexer's Serve, and a waiter for the go-sdk session;
// the go-sdk session's goroutines are the go-sdk's. All but such a reader
// have returned when Serve returns.
func Serve(ctx context.Context, server *mcp.Server, r io.Reader, w io.Writer, opts StdioOptions) error {
	if opts.Stdio.MaxLineBytes < 0 || opts.ShutdownTimeout < 0 {
		return errors.New("gosdk: negative Stdio.MaxLineBytes or ShutdownTimeout")
	}
	if opts.Stdio.MaxLineBytes == 0 {
		opts.Stdio.MaxLineBytes = stdio.DefaultMaxLineBytes
	}
	if opts.ShutdownTimeout == 0 {
		opts.ShutdownTimeout = 5 * time.Second
	}
	b, err := NewBridge(ctx, server, opts.Options)
	if err != nil {
		return err
	}
	defer b.Close()

	so := opts.Stdio
	so.Listen = b.ListenOptions()
	so.SupportedVersions = b.Versions()
	so.Handler = nil
	mux, err := stdio.New(b.Source(), so)
	if err != nil {
		return err
	}

	out := &lineWriter{w: w}
	peer := &peerConn{in: make(chan sdkjsonrpc.Message), out: out, done: make(chan struct{})}
	ss, err := server.Connect(ctx, peer, nil)
	if err != nil {
		return fmt.Errorf("gosdk: connecting the go-sdk server: %w", err)
	}
	listenR, listenW := io.Pipe()

	served := make(chan error, 1)
	go func() { served <- mux.Serve(context.WithoutCancel(ctx), listenR, out) }()
	sdkDone := make(chan struct{})
	go func() {
		_ = ss.Wait()
		close(sdkDone)
	}()
	readDone := make(chan error, 1)
	go func() { readDone <- route(r, so.MaxLineBytes, listenW, peer) }()

	var result error
	select {
	case rerr := <-readDone:
		// Input ended: the multiplexer reads EOF next and closes its
		// listens; the go-sdk reads EOF and ends its session.
		result = <-served
		if result == nil {
			result = rerr
		}
	case result = <-served:
		// The multiplexer failed (a write timed out): stop everything.
		closeReader(r)
		peer.Close()
		_ = listenR.CloseWithError(result)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.ShutdownTimeout)
		_ = mux.Shutdown(sctx)
		cancel()
		<-served
		result = context.Cause(ctx)
		closeReader(r)
		peer.Close()
		_ = listenR.CloseWithError(result)
	}
	_ = ss.Close()
	<-sdkDone
	peer.Close()
	return result
}

// closeReader closes r when that can interrupt a pending Read (not an
// *os.File such as os.Stdin, which a stdio server must leave open).
func closeReader(r io.Reader) {
	if _, isFile := r.(*os.File); isFile {
		return
	}
	if c, ok := r.(io.Closer); ok {
		_ = c.Close()
	}
}

// route reads r line by line and sends each message on: listens of
// 2026-07-28 and cancellations to the multiplexer (through listenW, whose
// end it closes), everything else to the go-sdk (peer.in, which it closes:
// it is the sender). A line over maxLine, and a line that is not a JSON-RPC
// message, goes to the multiplexer, which answers it with its exact error.
func route(r io.Reader, maxLine int, listenW *io.PipeWriter, peer *peerConn) error {
	defer close(peer.in)
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	keep := func(frag []byte) {
		if len(long) <= maxLine {
			long = append(long, frag[:min(len(frag), maxLine+1-len(long))]...)
		}
	}
	for {
		frag, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			keep(frag) // a line longer than the buffer: gathered up to maxLine+1 bytes
			continue
		}
		line := frag
		if long != nil {
			keep(frag)
			line, long = long, nil
		}
		// A line over maxLine reaches the multiplexer cut to maxLine+1
		// bytes, which it refuses with its own error; never the go-sdk.
		line = bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(line)) > 0 {
			var werr error
			if len(line) > maxLine {
				werr = toMux(listenW, line[:maxLine+1])
			} else {
				werr = routeLine(line, listenW, peer)
			}
			if werr != nil {
				_ = listenW.CloseWithError(werr)
				return nil // the receiving side is gone: Serve is ending
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				_ = listenW.Close()
				return nil
			}
			_ = listenW.CloseWithError(err)
			return fmt.Errorf("gosdk: reading: %w", err)
		}
	}
}

// head is what route reads of each message.
type head struct {
	Method string `json:"method"`
	Params struct {
		Meta struct {
			Version string `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
	} `json:"params"`
}

// toMux writes line and its newline to the multiplexer's input, in one
// Write.
func toMux(listenW *io.PipeWriter, line []byte) error {
	buf := make([]byte, 0, len(line)+1)
	_, err := listenW.Write(append(append(buf, line...), '\n'))
	return err
}

// routeLine sends one line (at most maxLine bytes) on.
func routeLine(line []byte, listenW *io.PipeWriter, peer *peerConn) error {
	var h head
	if json.Unmarshal(line, &h) != nil {
		return toMux(listenW, line)
	}
	msg, err := sdkjsonrpc.DecodeMessage(line)
	if err != nil {
		return toMux(listenW, line)
	}
	switch {
	case h.Method == jsonrpc.MethodListen && h.Params.Meta.Version == jsonrpc.ProtocolVersion:
		return toMux(listenW, line)
	case h.Method == jsonrpc.MethodCancelled:
		if err := toMux(listenW, line); err != nil {
			return err
		}
	}
	select {
	case peer.in <- msg:
		return nil
	case <-peer.done:
		return errLinkClosed
	}
}

// lineWriter is the one writer of a stdio connection: each Write is one
// whole line, written under the lock.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// peerConn is the go-sdk server's connection on a stdio connection: it reads
// what route sends it and writes each message as one line.
type peerConn struct {
	in   chan sdkjsonrpc.Message
	out  *lineWriter
	done chan struct{}
	once sync.Once
}

// Connect implements mcp.Transport.
func (p *peerConn) Connect(context.Context) (mcp.Connection, error) { return p, nil }

// Read implements mcp.Connection.
func (p *peerConn) Read(ctx context.Context) (sdkjsonrpc.Message, error) {
	select {
	case m, ok := <-p.in:
		if !ok {
			return nil, io.EOF
		}
		return m, nil
	case <-p.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write implements mcp.Connection: one message, one line, one Write call.
func (p *peerConn) Write(_ context.Context, msg sdkjsonrpc.Message) error {
	select {
	case <-p.done:
		return errLinkClosed
	default:
	}
	b, err := sdkjsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	if bytes.IndexByte(b, '\n') >= 0 { // a handler's raw JSON result may span lines
		var c bytes.Buffer
		if err := json.Compact(&c, b); err != nil {
			return err
		}
		b = c.Bytes()
	}
	_, err = p.out.Write(append(b, '\n'))
	return err
}

// Close implements mcp.Connection.
func (p *peerConn) Close() error {
	p.once.Do(func() { close(p.done) })
	return nil
}

// SessionID implements mcp.Connection.
func (p *peerConn) SessionID() string { return "" }
