package stdio

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
)

// Defaults of Options.
const (
	// defaultMaxInFlight is the default of Options.MaxInFlight.
	defaultMaxInFlight = 64
	// defaultMaxLineBytes is the default of Options.MaxLineBytes: 4 MiB.
	defaultMaxLineBytes = 4 << 20
	// defaultWriteTimeout is the default of Options.WriteTimeout.
	defaultWriteTimeout = 5 * time.Second
)

// TransportKind is the listen.Transport Kind of the requests this package
// opens.
const TransportKind = "stdio"

// Handler serves the messages that are not part of subscriptions/listen: every
// request and notification other than subscriptions/listen and
// notifications/cancelled.
//
// For a request (msg.HasID), the result is sent as the JSON-RPC result: it
// must be JSON (nil or empty means {}); a result that is not JSON is answered
// with -32603 "Internal error". A non-nil error is sent as the JSON-RPC error:
// a *jsonrpc.Error (or an error wrapping one) as it is, anything else as
// -32603 "Internal error". For a notification, the result and the error are
// dropped: notifications are never answered.
//
// Each call runs on its own goroutine, concurrently with other calls and with
// the subscriptions; Serve waits for it before returning. At most
// Options.MaxInFlight calls run at once on a connection; while that many
// run, Serve reads nothing more; so it does while the calls running add up
// to Options.MaxLineBytes. ctx is cancelled when the client cancels
// the request (notifications/cancelled; the cause matches listen.ErrCancelled
// and the response is then not sent), when the connection is lost
// (listen.ErrDisconnected), and when Serve's own context ends. A panic is
// recovered and answered as -32603 "Internal error".
//
// A Handler cannot send a message nobody asked for (a log or progress
// notification, a request to the client): a peer that must do so, such as
// another MCP server implementation, shares the connection through a Conn
// instead (see Server.NewConn).
type Handler interface {
	Handle(ctx context.Context, msg jsonrpc.Message) (result json.RawMessage, err error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, msg jsonrpc.Message) (json.RawMessage, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, msg jsonrpc.Message) (json.RawMessage, error) {
	return f(ctx, msg)
}

// Options configure a Server: the framing and the connections. The listen
// policy (capabilities, limits, hooks, the drain) is the listen.Server's,
// given to New. The zero value is usable; New copies it and fills in the
// defaults.
type Options struct {
	// Handler serves every other method on the connections of Serve. Nil
	// answers every other request with -32601 "Method not found: <method>"
	// and ignores other notifications. Connections made with NewConn do not
	// use it: they forward those messages to their peer.
	Handler Handler
	// MaxInFlight bounds, per connection, the work read but not yet done
	// with: the Handler calls running (requests and notifications; a call
	// counts until its response is written) and, on a Conn, the requests
	// forwarded to the peer (each counts until the peer's answer is written).
	// It is also the length of a Conn's queue of messages the peer has not
	// read yet. When either is full Serve stops reading (the client's writes
	// then block: this is the connection's backpressure) until there is
	// room; so a client that does not read its output is not read either.
	// The bytes of that work are bounded too, by MaxLineBytes. Listens are
	// bounded by the listen.Server instead (listen.Options.MaxStreams and
	// MaxStreamsPerKey). Zero means defaultMaxInFlight (64).
	MaxInFlight int
	// MaxLineBytes bounds the length of one input line, newline excluded.
	// A longer line is skipped (never buffered past the limit) and answered
	// with a -32600 error without an id (msgLineTooLong); the connection goes
	// on. It also bounds the bytes of the work in flight (see MaxInFlight):
	// the requests and notifications handed to the Handler, and the requests
	// handed to a Conn's peer, not answered yet, add up to at most
	// MaxLineBytes (one alone may take it all); Serve reads nothing more
	// until there is room, so 64 large requests are not all decoded and
	// served at once (a peer that serves each on its own goroutine, as
	// mcp-go does, would hold them all). Zero means defaultMaxLineBytes
	// (4 MiB).
	MaxLineBytes int
	// WriteTimeout bounds each write of one message. A write that does not
	// complete in time ends the connection (see Serve). Zero means
	// defaultWriteTimeout (5 s).
	WriteTimeout time.Duration
	// BlockingFiles, when set, makes Serve use an *os.File reader or writer
	// in the mode it is in. By default, an *os.File for a pipe or a socket
	// that has no deadline support (a process's inherited standard input
	// and output usually are blocking descriptors) is served through a
	// duplicate of its descriptor in non-blocking mode, registered with the
	// runtime's poller, so that a write timeout or a drain can interrupt a
	// pending Write or Read (a Write blocked on a blocking descriptor can
	// never be interrupted in Go). Non-blocking mode belongs to the open file
	// description, so other holders of the same pipe see it while Serve runs:
	// a Write through the original *os.File (os.Stdout), which a stdio
	// server must not do anyway, fails with EAGAIN instead of waiting when
	// the pipe is full. The descriptor is put back in blocking mode when
	// Serve returns. Terminals and regular files are always used as they
	// are.
	BlockingFiles bool
	// Auth, if set, names the connection's principal: it is called once per
	// listen, with the context given to Serve (or Conn.Serve), before the
	// listen.Server admits the listen, and its results become the listen's
	// Request.Auth and Request.Expiry (an expiry already passed is refused
	// with -32600 "Unauthorized"; a stream ends with listen.ErrExpired when
	// the credential expires). So listen.Options.Access, Scopes, CanRead,
	// StreamKey and Quota judge a stdio listen as an HTTP one, and
	// listen.Server.EndStreams finds it. A panic in it is recovered and
	// logged, and leaves the listen without a principal. Nil: listens have
	// no Auth (see the package documentation, Endings: one client, one
	// principal).
	Auth func(ctx context.Context) (auth any, expiry time.Time)
	// OmitShutdownCancelled, when set, makes a drain send only the completion
	// result to each open listen. By default the completion result is
	// preceded by notifications/cancelled for the listen.
	//
	// The specification's texts disagree on a stdio server teardown: the
	// subscriptions page says the server SHOULD send the completion result,
	// cancellation.mdx says it MUST send notifications/cancelled for the
	// listen. A drain sends both, notifications/cancelled first, because the
	// cancellation rules only allow referencing a request still in progress:
	//
	//	{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"reason":"Server shutdown","requestId":1}}
	//	{"jsonrpc":"2.0","id":1,"result":{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"resultType":"complete"}}
	//
	// This holds for every drain: Shutdown's (the listen.Server's, paced
	// over listen.Options.DrainWindow), and a connection's when the context
	// given to Serve ends. A listen the server ends early (revoked, expired,
	// at its lifetime, fallen behind: see listen.Options.EndWithError, and
	// listen.Server.EndStreams) is torn down the same way,
	// notifications/cancelled carrying the reason "Subscription ended: " and
	// the ending's class (listen.Classify: "Subscription ended: revoked");
	// OmitShutdownCancelled leaves it out there too. A listen that ends on
	// its own (its source ended or failed) gets its terminal message alone.
	OmitShutdownCancelled bool
}

// Server serves subscriptions/listen, and hands every other message to a
// Handler or to the peer of a Conn, over newline-delimited JSON-RPC
// connections such as a process's standard input and output. Its
// listen.Server admits, opens, counts and drains the listens (see New); the
// Server frames them. See the package documentation.
//
// A Server may serve several connections at once (one Serve call each). Its
// methods are safe for concurrent use.
type Server struct {
	ls   *listen.Server
	opts Options
	// log is the listen.Server's Logger (slog.Default() when it has none).
	log *slog.Logger
	// maxID is listen.Options.MaxIDBytes: the bound of every id read.
	maxID int

	mu     sync.Mutex
	closed bool
	conns  map[*conn]struct{}
	// lingering holds the done channels of the reader and writer goroutines
	// a Serve returned without (a Read or Write it could not interrupt; see
	// Serve). Shutdown waits for them.
	lingering []chan struct{}
}

// New returns a Server whose listens srv serves: srv admits each one
// (listen.Options.MaxStreams, MaxStreamsPerKey, Quota, the protocol
// version, Disabled), opens it on its Source with its listen.Options,
// counts it (srv.Stats), calls its hooks (OnOpen, OnClose, OnRefuse) and
// ends it (EndStreams, Shutdown). srv may serve other transports too; its
// limits then cover them all. A stdio listen has no remote address: the
// default MaxStreamsPerKey leaves it out unless StreamKey gives it a key,
// and a positive one without a StreamKey counts every stdio listen against
// one key. The connections'
// diagnostics go to srv's Logger (listen.Options.Logger; slog.Default() if
// nil): malformed input and refusals at Debug, handler panics and lost
// connections at Warn.
//
// New fails, with an error matching ErrInvalidOptions that names the field,
// for a nil srv or a negative MaxInFlight, MaxLineBytes or WriteTimeout.
func New(srv *listen.Server, opts Options) (*Server, error) {
	if srv == nil {
		return nil, fmt.Errorf("%w: the listen.Server is nil", ErrInvalidOptions)
	}
	switch {
	case opts.MaxInFlight < 0:
		return nil, invalid("MaxInFlight", opts.MaxInFlight, defaultMaxInFlight)
	case opts.MaxLineBytes < 0:
		return nil, invalid("MaxLineBytes", opts.MaxLineBytes, defaultMaxLineBytes)
	case opts.WriteTimeout < 0:
		return nil, invalid("WriteTimeout", opts.WriteTimeout, defaultWriteTimeout)
	}
	if opts.MaxInFlight == 0 {
		opts.MaxInFlight = defaultMaxInFlight
	}
	if opts.MaxLineBytes == 0 {
		opts.MaxLineBytes = defaultMaxLineBytes
	}
	if opts.WriteTimeout == 0 {
		opts.WriteTimeout = defaultWriteTimeout
	}
	lo := srv.Options()
	log := lo.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Server{ls: srv, opts: opts, log: log, maxID: lo.MaxIDBytes, conns: make(map[*conn]struct{})}, nil
}

// invalid is New's error for a negative option.
func invalid(field string, got, def any) error {
	return fmt.Errorf("%w: %s must be positive (or 0 for the default %v), got %v", ErrInvalidOptions, field, def, got)
}

// Serve serves one connection: it reads newline-delimited JSON-RPC messages
// from r and writes every message of the connection to w, one per line, each
// with a single Write call by one writer goroutine. Listens are served by the
// Server, every other message goes to Options.Handler (see NewConn to
// forward them to a peer instead). It returns once it stopped reading and
// every goroutine it started (subscriptions, handler calls, the reader, the
// writer) has returned, except a Read or Write it could not interrupt (see
// below):
//
//   - nil after r reached EOF: every open listen was closed as
//     listen.Disconnected(io.EOF) without a terminal message, and every
//     handler call in flight finished and was answered;
//   - ErrServerClosed after Shutdown drained the connection, or at once if
//     Shutdown was called before Serve;
//   - context.Cause(ctx) after ctx ended and the connection was drained the
//     same way (see the package documentation, Endings);
//   - an error matching ErrWriteTimeout (its text gives the timeout), or
//     wrapping the writer's error, after a write timed out or failed: every
//     open listen was then closed as listen.Disconnected with that cause,
//     and handler contexts cancelled;
//   - an error wrapping the reader's error if r failed (other than EOF);
//     the connection then ends as on EOF.
//
// To stop a pending Read when it has to (drain, lost connection), Serve sets
// a read deadline in the past if r has SetReadDeadline (an *os.File that is a
// pipe, including os.Stdin unless Options.BlockingFiles, a net.Conn) and
// otherwise closes r if it is an io.Closer other than an *os.File (an
// *io.PipeReader). After a timed-out or failed write it stops w the same way
// (SetWriteDeadline, else Close).
//
// A Read or Write that cannot be stopped that way (an r or w with neither,
// a terminal, a blocking descriptor with Options.BlockingFiles) is left
// behind: Serve returns without waiting for it, and its goroutine returns as
// soon as the call does, touching nothing but r or w and one buffer (a line
// read then is dropped). When Serve's error matches ErrWriteTimeout and its
// text says the Write is still pending, w will not take any more output:
// the caller should exit the process (the usual end of a stdio server whose
// client stopped reading) or make the pending Write return (for a pipe, by
// having its reader read or close it; closing w in this process does not
// interrupt a Write in Go). Shutdown waits for such goroutines too, until its
// context ends.
//
// Serve does not buffer its output: pass the writer itself (os.Stdout), not
// a bufio.Writer.
//
// # Listen requests
//
// A subscriptions/listen request is checked in this order, the same as in
// the streamhttp package:
//
//  1. a request id already in flight: -32600 "Duplicate in-flight request
//     id";
//  2. invalid params: -32602 with the exact messages of
//     the listen params checks (including a missing or non-string version);
//  3. listen.Server.Begin and Slot.Admit, on the reading goroutine (so listens are
//     admitted in the order they were read): the protocol version,
//     Disabled, an expired credential (Options.Auth), the drain,
//     MaxStreamsPerKey, MaxStreams and the Quota, each with the error
//     Admit documents (-32603 "Server subscription capacity exhausted"
//     over MaxStreams);
//  4. the open (listen.Slot.Open, with the listen.Server's options): its
//     error, as the core shapes it.
//
// Each refusal is reported to listen.Options.OnRefuse before it is
// written (with a nil request for the first two).
//
// A listen without an id is a notification and is ignored.
func (s *Server) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	return s.newConn(r, w, false).serve(ctx)
}

// NewConn returns a connection over r and w whose messages other than
// listens go to a peer through the Conn, instead of to Options.Handler: see
// Conn. Serve it with Conn.Serve.
func (s *Server) NewConn(r io.Reader, w io.Writer) *Conn {
	return &Conn{c: s.newConn(r, w, true)}
}

// register records c for Shutdown; false if the Server is shut down.
func (s *Server) register(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) unregister(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// linger records the done channel of a goroutine a Serve returned without.
func (s *Server) linger(done chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := s.lingering[:0]
	for _, d := range s.lingering {
		select {
		case <-d:
		default:
			kept = append(kept, d)
		}
	}
	s.lingering = append(kept, done)
}

// Stats is a snapshot of a Server's connections. The listens are counted
// by the listen.Server (listen.Server.Stats).
type Stats struct {
	// Connections is the number of connections being served.
	Connections int
	// InFlight is the number of handler calls and requests forwarded to a
	// peer whose response is not written yet: the units of MaxInFlight
	// taken, on all connections.
	InFlight int
}

// Stats returns the Server's counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Connections: len(s.conns)}
	for c := range s.conns {
		st.InFlight += len(c.slots)
	}
	return st
}

// Shutdown drains every connection and the listen.Server. Each Serve
// stops reading at once; then Shutdown calls the listen.Server's Shutdown:
// new listens are refused (-32603 "Server is shutting down"), on every
// transport the listen.Server serves, and every open listen gets its
// completion result (preceded by notifications/cancelled unless
// Options.OmitShutdownCancelled) and is closed with reason
// listen.ErrShutdown, paced over listen.Options.DrainWindow (each stream
// goes on until its turn). The handler calls in flight finish and are
// answered, and a Conn's peer reads io.EOF once it read what was queued
// for it and answered what it was handed, and must then Close. Shutdown
// returns nil once every Serve has returned (each returns ErrServerClosed)
// and every Read or Write left behind by a Serve (see Serve) has returned.
//
// If ctx ends first, the listens not yet ended are ended at once, the
// connections still being drained are closed at once (subscriptions as
// listen.Disconnected, handler contexts cancelled; Serve then returns an
// error matching ErrServerClosed) and Shutdown returns ctx.Err(). Serve
// calls made after Shutdown return ErrServerClosed at once. Shutdown may be
// called more than once, also concurrently: each call waits as described.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()

	for _, c := range conns {
		c.stopTaking(ErrServerClosed, false)
	}
	if err := s.ls.Shutdown(ctx); err != nil {
		s.cut(ctx, conns)
		return err
	}
	for _, c := range conns {
		select {
		case <-c.finished:
		case <-ctx.Done():
			s.cut(ctx, conns)
			return ctx.Err()
		}
	}
	s.mu.Lock()
	lingering := append([]chan struct{}(nil), s.lingering...)
	s.mu.Unlock()
	for _, d := range lingering {
		select {
		case <-d:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// cut closes conns at once: Shutdown's ctx ended before they were drained.
func (s *Server) cut(ctx context.Context, conns []*conn) {
	cause := fmt.Errorf("%w: drain cut short: %w", ErrServerClosed, context.Cause(ctx))
	for _, c := range conns {
		c.kill(cause)
	}
}
