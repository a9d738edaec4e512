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
	// DefaultMaxSubscriptions is the default of Options.MaxSubscriptions.
	DefaultMaxSubscriptions = 32
	// DefaultMaxLineBytes is the default of Options.MaxLineBytes: 4 MiB.
	DefaultMaxLineBytes = 4 << 20
	// DefaultWriteTimeout is the default of Options.WriteTimeout.
	DefaultWriteTimeout = 5 * time.Second
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
// the subscriptions; Serve waits for it before returning. ctx is cancelled
// when the client cancels the request (notifications/cancelled; the cause
// matches listen.ErrCancelled and the response is then not sent), when the
// connection is lost (listen.ErrDisconnected), and when Serve's own context
// ends. A panic is recovered and answered as -32603 "Internal error".
type Handler interface {
	Handle(ctx context.Context, msg jsonrpc.Message) (result json.RawMessage, err error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, msg jsonrpc.Message) (json.RawMessage, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, msg jsonrpc.Message) (json.RawMessage, error) {
	return f(ctx, msg)
}

// Options configure a Server. The zero value is usable; NewServer copies it
// and fills in the defaults.
type Options struct {
	// Listen configures listen.Open for every subscription: the server's
	// capabilities (which the requested filters are narrowed against), its
	// server info (for the completion result), extensions, CanRead and
	// ReleaseTimeout.
	Listen listen.Options
	// Handler serves every other method. Nil answers every other request with
	// -32601 "Method not found: <method>" and ignores other notifications.
	Handler Handler
	// MaxSubscriptions bounds the listens open at once on one connection
	// (one Serve call). A listen over it is answered with -32603 "Server
	// subscription capacity exhausted". Zero means DefaultMaxSubscriptions
	// (32); a negative value makes NewServer panic.
	MaxSubscriptions int
	// MaxLineBytes bounds the length of one input line, newline excluded.
	// A longer line is skipped (never buffered past the limit) and answered
	// with a -32600 error without an id (MsgLineTooLong); the connection goes
	// on. Zero means DefaultMaxLineBytes (4 MiB); a negative value makes
	// NewServer panic.
	MaxLineBytes int
	// WriteTimeout bounds each write of one message. A write that does not
	// complete in time ends the connection (see Serve). Zero means
	// DefaultWriteTimeout (5 s); a negative value makes NewServer panic.
	WriteTimeout time.Duration
	// SupportedVersions is the "supported" list of the unsupported-version
	// error (-32022). Nil means jsonrpc.SupportedProtocolVersions.
	SupportedVersions []string
	// OmitShutdownCancelled, when set, makes a drain send only the completion
	// result to each open listen. By default the completion result is
	// preceded by notifications/cancelled for the listen (see the package
	// documentation, "Draining").
	OmitShutdownCancelled bool
	// Logger receives the transport's diagnostics (refused and malformed
	// messages at Debug, closes at Debug, handler panics and lost connections
	// at Warn). Nil discards them.
	Logger *slog.Logger
	// OnOpen, if set, is called when a subscription was opened, before its
	// acknowledgement is written, on the subscription's goroutine.
	OnOpen func(sub *listen.Subscription)
	// OnClose, if set, is called once for every subscription OnOpen saw, after
	// it was closed, with its close reason (see listen.Classify), on the
	// subscription's goroutine.
	OnClose func(sub *listen.Subscription, reason error)
	// OnListenError, if set, is called for every subscriptions/listen
	// request answered with an error instead of a stream (a duplicate id,
	// invalid params, the protocol version, capacity, a failed
	// listen.Open), with the error sent (a *jsonrpc.Error; the cause of an
	// internal error tells what the client is not told), before the
	// response is written. A panic in it is recovered.
	OnListenError func(err error)
}

// Server serves subscriptions/listen, and hands every other method to a
// Handler, over newline-delimited JSON-RPC connections such as a process's
// standard input and output. See the package documentation.
//
// A Server may serve several connections at once (one Serve call each). Its
// methods are safe for concurrent use.
type Server struct {
	src  listen.Source
	opts Options
	log  *slog.Logger

	mu     sync.Mutex
	closed bool
	conns  map[*conn]struct{}
}

// NewServer returns a Server that opens subscriptions on src. opts may be
// nil. It panics if src is nil or an option is negative.
func NewServer(src listen.Source, opts *Options) *Server {
	if src == nil {
		panic("stdio: nil Source")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	switch {
	case o.MaxSubscriptions < 0:
		panic("stdio: MaxSubscriptions must be positive")
	case o.MaxLineBytes < 0:
		panic("stdio: MaxLineBytes must be positive")
	case o.WriteTimeout < 0:
		panic("stdio: WriteTimeout must be positive")
	}
	if o.MaxSubscriptions == 0 {
		o.MaxSubscriptions = DefaultMaxSubscriptions
	}
	if o.MaxLineBytes == 0 {
		o.MaxLineBytes = DefaultMaxLineBytes
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{src: src, opts: o, log: log, conns: make(map[*conn]struct{})}
}

// Serve serves one connection: it reads newline-delimited JSON-RPC messages
// from r and writes every message of the connection to w, one per line, each
// with a single Write call. It returns once it stopped reading and every
// goroutine it started (subscriptions, handler calls, the writer) has
// returned:
//
//   - nil after r reached EOF: every open listen was closed as
//     listen.Disconnected(io.EOF) without a terminal message, and every
//     handler call in flight finished and was answered;
//   - ErrServerClosed after Shutdown drained the connection, or at once if
//     Shutdown was called before Serve;
//   - context.Cause(ctx) after ctx ended and the connection was drained the
//     same way (see the package documentation, "Draining");
//   - an error matching ErrWriteTimeout, or wrapping the writer's error,
//     after a write timed out or failed: every open listen was then closed as
//     listen.Disconnected with that cause, and handler contexts cancelled;
//   - an error wrapping the reader's error if r failed (other than EOF);
//     the connection then ends as on EOF.
//
// To stop a pending Read when it has to (drain, lost connection), Serve sets
// a read deadline in the past if r has SetReadDeadline (an *os.File that is a
// pipe, a net.Conn) and otherwise closes r if it is an io.Closer (an
// *io.PipeReader). After a timed-out or failed write it stops w the same way
// (SetWriteDeadline, else Close). A Read or Write that neither stops (such as
// one on a blocking terminal or regular-file descriptor) keeps Serve waiting
// until it returns on its own; the subscriptions are closed without waiting
// for it.
//
// Serve does not buffer its output: pass the writer itself (os.Stdout), not
// a bufio.Writer.
func (s *Server) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	c := newConn(ctx, s, r, w)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
	return c.serve(ctx)
}

// Shutdown drains every connection: each Serve stops reading, every open
// listen gets its completion result (preceded by notifications/cancelled
// unless Options.OmitShutdownCancelled) and is closed with reason
// listen.ErrShutdown, and the handler calls in flight finish and are answered.
// Shutdown returns nil once every connection has drained (every message
// written), even if a Serve is still waiting for a Read it cannot stop (see
// Serve); each Serve then returns ErrServerClosed.
//
// If ctx ends first, the connections are closed at once (subscriptions as
// listen.Disconnected, handler contexts cancelled; Serve then returns an
// error matching ErrServerClosed) and Shutdown returns ctx.Err(). Serve calls
// made after Shutdown return ErrServerClosed at once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()

	for _, c := range conns {
		c.drain(ErrServerClosed)
	}
	for _, c := range conns {
		select {
		case <-c.quiet:
		case <-ctx.Done():
			cause := fmt.Errorf("%w: drain cut short: %w", ErrServerClosed, context.Cause(ctx))
			for _, c := range conns {
				c.kill(cause)
			}
			return ctx.Err()
		}
	}
	return nil
}
