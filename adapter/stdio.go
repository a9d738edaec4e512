package adapter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/stdio"
)

// StdioOptions configure NewStdio: the user's options of the connection,
// which the adapter passes on, and how the SDK's server is served on it.
type StdioOptions struct {
	// Stdio configures the listen multiplexer and the connection (limits,
	// write timeout; see stdio.Options). The listens' policy is the
	// Bridge's Options.Listen, served by a listen.Server of
	// Bridge.ListenOptions (SupportedVersions set to the versions the
	// server's server/discover lists);
	// Handler is not used (every message that is not a listen or a
	// cancellation goes to the SDK). Its bounds hold for the SDK's traffic
	// too: MaxLineBytes bounds every input line, MaxInFlight the requests
	// the SDK is handling (each until its answer was written) and the
	// messages waiting for it, and MaxLineBytes again the bytes of the
	// requests it is handling, added up.
	Stdio stdio.Options
	// ShutdownTimeout bounds the drain when Serve's context ends: every
	// open listen is sent notifications/cancelled and its completion
	// result (see the stdio package), and the SDK answers what it is
	// handling, within it; then the connection is closed under it. Zero
	// means 5 s.
	ShutdownTimeout time.Duration

	// Connect, which must be set, serves the SDK's server on c: every
	// message that is not a listen or a cancellation (c.ReadMessage and
	// c.WriteMessage, or c.Lines). It returns wait, which Serve calls once
	// c has been served and closed: it returns once the SDK's session on c
	// has ended, with its error (nil for an end that is not a failure).
	Connect func(ctx context.Context, c *stdio.Conn) (wait func() error, err error)
}

// Stdio serves an SDK's server over stdio with subscriptions/listen added:
// the stdio counterpart of Handler. Make one with NewStdio, serve
// connections with Serve (or Run, on standard input and output) and end it
// with Shutdown. Its methods are safe for concurrent use.
type Stdio struct {
	bridge  *Bridge
	mux     *stdio.Server
	srv     *listen.Server
	connect func(context.Context, *stdio.Conn) (func() error, error)
	timeout time.Duration

	// The Serve calls under way: calls counts them, closed refuses more.
	mu     sync.Mutex
	closed bool
	calls  sync.WaitGroup
}

// NewStdio returns the Stdio serving b over stdio. It fails for a negative
// ShutdownTimeout, a nil Connect, and for invalid stdio options; it then
// closes b.
func NewStdio(b *Bridge, opts StdioOptions) (*Stdio, error) {
	s, err := newStdio(b, opts)
	if err != nil {
		_ = b.Close()
	}
	return s, err
}

func newStdio(b *Bridge, opts StdioOptions) (*Stdio, error) {
	name := b.sdk.Name
	if opts.ShutdownTimeout < 0 {
		return nil, errors.New(name + ": negative ShutdownTimeout")
	}
	if opts.Connect == nil {
		return nil, errors.New(name + ": adapter.StdioOptions without Connect")
	}
	if opts.ShutdownTimeout == 0 {
		opts.ShutdownTimeout = 5 * time.Second
	}
	so := opts.Stdio
	so.Handler = nil
	lo := b.ListenOptions()
	lo.SupportedVersions = slices.Clone(b.versions)
	srv := listen.NewServer(b.Source(), lo)
	mux, err := stdio.New(srv, so)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &Stdio{bridge: b, mux: mux, srv: srv, connect: opts.Connect, timeout: opts.ShutdownTimeout}, nil
}

// Run serves the process's standard input and output (Serve with os.Stdin
// and os.Stdout) until the input ends or ctx ends, then shuts the Stdio
// down within ShutdownTimeout (Shutdown): what an adapter's one-line Run
// does. It returns Serve's error. Log to standard error only: anything
// else written to standard output corrupts the connection (and, while Run
// runs, a Write to os.Stdout may fail with EAGAIN: see
// stdio.Options.BlockingFiles).
func (s *Stdio) Run(ctx context.Context) error {
	err := s.Serve(ctx, os.Stdin, os.Stdout)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
	defer cancel()
	_ = s.Shutdown(sctx)
	return err
}

// Serve runs one MCP stdio connection over r and w (newline-delimited
// JSON-RPC): a stdio.Conn shared by this library's listen multiplexer and
// the SDK's server (StdioOptions.Connect).
//
// Every subscriptions/listen request, whatever protocol version it names,
// and every notifications/cancelled, is served by the multiplexer: a
// 2026-07-28 listen is served from the Bridge's hub (many at once, each
// tagged with its own id; cancelling one ends only that one); a listen
// naming an earlier version the server speaks gets -32601, any other
// version -32022 with the server's supported versions; the SDK's own
// listen code never runs. Every other message goes to the SDK, so clients
// of earlier versions are served by the SDK on the same connection. Both
// write through the Conn's one writer, one whole line per message. The
// SDK knows each request by an id of the Conn's own, and its answer is
// written with the client's exact id token (see stdio.Conn).
//
// Serve returns when r ends (EOF, then nil; or a read error, returned):
// open listens are closed without a terminal message, as the stdio package
// does, and the SDK ends its session once its handlers returned; or when
// ctx ends: the connection is drained (every open listen gets its
// completion result) and the SDK answers what it is handling within
// StdioOptions.ShutdownTimeout, and Serve returns ctx's cause; or with
// stdio.ErrServerClosed once Shutdown drained it. It also returns when
// writing w failed or timed out, with that error (see stdio.Server.Serve).
//
// Goroutines: Serve runs the Conn on goroutines of the stdio package (its
// reader, its writer and one per listen) and the SDK's session, and
// returns after them, but a Read or Write the stdio package could not
// interrupt (see stdio.Server.Serve).
func (s *Stdio) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	if !s.enter() {
		return stdio.ErrServerClosed
	}
	defer s.calls.Done()

	conn := s.mux.NewConn(r, w)
	wait, err := s.connect(ctx, conn)
	if err != nil {
		_ = conn.Close()
		return err
	}
	served := make(chan error, 1)
	go func() { served <- conn.Serve(ctx) }()
	// The Conn is served until the input ended (the SDK read io.EOF and
	// closed it once idle), a write failed, or Shutdown drained it; or,
	// once ctx ended, until it has drained on its own: the SDK answers
	// what it is handling, then closes it, or it is closed after
	// ShutdownTimeout.
	result := drain(ctx, served, s.timeout, func() { _ = conn.Close() })
	if err := wait(); err != nil && result == nil {
		result = err
	}
	return result
}

// drain returns what served yields (the result of a connection's Serve),
// or, if ctx ends first, context.Cause(ctx) once served yields: the
// connection drains on its own when its context ends, and if it has not
// within timeout, drain calls cut (which must make Serve return) and waits
// for served.
func drain(ctx context.Context, served <-chan error, timeout time.Duration, cut func()) error {
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-served:
	case <-t.C:
		cut()
		<-served
	}
	return context.Cause(ctx)
}

// enter counts a Serve call, or reports false once Shutdown began.
func (s *Stdio) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.calls.Add(1)
	return true
}

// Shutdown ends every connection gracefully, as stdio.Server.Shutdown
// does, once every change the server made before the call has reached the
// hub (the SDK's Flush): each connection stops reading, every open listen is
// sent notifications/cancelled and its completion result, the SDK answers
// what it is handling and its sessions end; Serve calls return
// stdio.ErrServerClosed, and later ones return it at once. Shutdown
// returns once every Serve call returned, then closes the Bridge; or, if
// ctx ends first, cuts the connections still draining (their listens are
// closed as listen.Disconnected), closes the Bridge and returns ctx's
// error. The hub is left as it is. It may be called more than once.
func (s *Stdio) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.bridge.flush()
	err := s.mux.Shutdown(ctx)
	done := make(chan struct{})
	// Ends when the last Serve call returns.
	go func() {
		s.calls.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		if err == nil {
			err = ctx.Err()
		}
	}
	_ = s.bridge.Close()
	return err
}

// ResourceUpdated tells every listen and every older client watching uri
// that the resource changed, each exactly once (see Bridge.ResourceUpdated).
func (s *Stdio) ResourceUpdated(ctx context.Context, uri string) error {
	return s.bridge.ResourceUpdated(ctx, uri)
}

// Server returns the listen.Server serving the Stdio's listens (its Stats,
// EndStreams).
func (s *Stdio) Server() *listen.Server { return s.srv }

// Bridge returns the Stdio's Bridge (capabilities, counters).
func (s *Stdio) Bridge() *Bridge { return s.bridge }

// Stats returns the listen multiplexer's counters: connections, listens
// open, requests in flight, subscriptions opened, closed and refused.
func (s *Stdio) Stats() stdio.Stats { return s.mux.Stats() }
