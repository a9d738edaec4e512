package streamhttp

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/mcplisten/listen"
)

// Defaults of Options. A zero field of Options means its default.
const (
	// defaultMaxBodyBytes is the default Options.MaxBodyBytes (256 KiB):
	// twice the largest filter the core accepts by default
	// (listen.Options.MaxFilterBytes, 128 KiB), room for the rest of a
	// listen request. A real listen is a few hundred bytes.
	defaultMaxBodyBytes = 256 << 10
	// defaultReadTimeout is the default Options.ReadTimeout.
	defaultReadTimeout = 10 * time.Second
	// defaultKeepAlive is the default Options.KeepAlive.
	defaultKeepAlive = 15 * time.Second
	// defaultWriteTimeout is the default Options.WriteTimeout.
	defaultWriteTimeout = 10 * time.Second
)

// Options configure a Handler. The zero value means every default. New
// copies them (the capabilities map included): changing an Options value
// after New has no effect on the Handler. A negative limit is an error (see
// New).
//
// # Limits and defaults
//
//	MaxBodyBytes      256 KiB  request body; 413 over it
//	ReadTimeout       10 s     reading the request, up to the end of its body; 408 over it
//	KeepAlive         15 s     idle time before a keep-alive comment
//	WriteTimeout      10 s     per write (an event or keep-alive and its flush); idle
//	                           streams are not affected
//
// A zero Options field means its default; a negative one is an error of New.
// The read deadline, like the write deadline, is set with
// http.ResponseController. It is set when ServeHTTP starts and cleared once
// the body has been read, so it bounds an incomplete request (a slow body,
// one byte short, chunked without end) and, on HTTP/1.x, net/http's
// discarding of the body of a request refused before its body was read,
// never a stream. The request line and headers are the http.Server's to
// bound: set its ReadHeaderTimeout, IdleTimeout and MaxHeaderBytes (MCP
// requests need a few KiB of headers), not its ReadTimeout, which would
// also cut every stream served inside net/http.
// The write deadline is set with http.ResponseController; behind a
// middleware whose ResponseWriter hides SetWriteDeadline (no Unwrap method)
// it has no effect, and a client that stops reading then holds its own
// handler goroutine, and nothing else, until its connection breaks. The
// per-write deadline replaces http.Server.WriteTimeout for a stream from its
// first write on (on HTTP/2, a server WriteTimeout that expires before that
// first write, during a slow Source.Open, still ends the stream).
//
// # HTTP/2
//
// Over HTTP/2 (TLS, or h2c with http.Server.Protocols'
// SetUnencryptedHTTP2) each listen holds one stream of its connection and
// its handler goroutine for its whole life: measured, 1 goroutine and about
// 10.5 KiB of heap per idle listen, against none and 1.5 KiB for a
// taken-over HTTP/1.1 hub stream on Linux. A stream the client resets
// right after sending its listen (a rapid reset) is neither parsed, nor
// admitted, nor opened once the reset has reached the server: nothing is
// written for it. net/http bounds the rest: at most MaxConcurrentStreams
// handlers run per connection, and it closes a connection that queues
// more than four times that many. Set http.Server.HTTP2 for listens:
//
//	srv.HTTP2 = &http.HTTP2Config{
//		MaxConcurrentStreams: 250,              // listens (and other requests) per connection; net/http's default
//		WriteByteTimeout:     10 * time.Second, // close a connection whose client stopped reading (WriteTimeout cuts one stream)
//		SendPingTimeout:      30 * time.Second, // ping a silent connection,
//		PingTimeout:          15 * time.Second, // and close it if unanswered
//	}
//
// and bound one client's listens across its connections with
// listen.Options.MaxStreamsPerKey. (golang.org/x/net/http2.Server has the
// same fields.)
// The other HTTP2Config defaults fit listens: a listen's body is at most
// MaxBodyBytes, and net/http's receive windows bound what a connection
// buffers.
type Options struct {
	// MaxBodyBytes bounds the request body. A larger body is refused with 413
	// and -32600 "Request body too large". Zero means defaultMaxBodyBytes
	// (256 KiB); a negative value is an error.
	MaxBodyBytes int64

	// ReadTimeout bounds the time to read a request: from the moment
	// ServeHTTP starts (the headers have been read) to the end of its body.
	// It is set with http.ResponseController.SetReadDeadline and cleared
	// once the body has been read, so it never touches an open stream. A
	// body that has not fully arrived by then (sent slowly, one byte short of
	// its Content-Length, or chunked without end) is refused with 408 and
	// -32600 "Request timeout: the request body was not received in time"
	// (on HTTP/1.x its connection is then closed; on HTTP/2 its stream
	// ends). On HTTP/1.x a request refused before its body is read (405,
	// 403, 401) keeps the deadline, which also bounds net/http's discarding
	// of the unread body. Zero means
	// defaultReadTimeout (10 s); a negative value is an error. It has no
	// effect on a ResponseWriter that does not support read deadlines (see
	// http.ResponseController). Unlike http.Server.ReadTimeout, which would
	// also cut every stream served inside net/http, it ends with the read.
	// The headers are the http.Server's to bound (ReadHeaderTimeout,
	// MaxHeaderBytes).
	ReadTimeout time.Duration

	// KeepAlive is how long a stream may stay idle before the Handler writes
	// an SSE comment (": keep-alive") to keep proxies from closing it. Zero
	// means defaultKeepAlive (15 s); a negative value is an error.
	KeepAlive time.Duration

	// WriteTimeout bounds every write to a stream (one SSE event or
	// keep-alive, including its flush), through
	// http.ResponseController.SetWriteDeadline (or the connection's, once
	// taken over). A client that stops reading is cut off when it expires:
	// its subscription is closed as Disconnected and nothing else waits for
	// it. Idle streams are not affected: on HTTP/2 each write sets and clears
	// its deadline; on HTTP/1.x, to save work on busy streams, the deadline
	// is refreshed only when less than half of it is left (so a write gets
	// between half and all of WriteTimeout) and is renewed before any write
	// once expired. Zero means defaultWriteTimeout (10 s); a negative value
	// is an error. It has no effect on a ResponseWriter that does not
	// support write deadlines (see http.ResponseController).
	WriteTimeout time.Duration

	// CheckOrigin validates the request's origin. A non-nil error refuses it
	// with 403 and a JSON-RPC error without id (-32600 "Forbidden: invalid
	// Origin or Host"). Nil means DefaultCheckOrigin's rules, with
	// AllowedHosts and AllowedOrigins applied: DNS-rebinding protection and
	// the cross-origin checks. Front applies the same check to every request
	// it routes (see Handler.CheckOrigin).
	CheckOrigin func(r *http.Request) error

	// AllowedHosts, if not empty, lists the Host header values the server
	// answers to, as "name" (any port, or none) or "name:port", IPv6
	// addresses in brackets ("[::1]:8080"); names are compared without
	// regard to case. A request naming another Host is refused with 403,
	// whatever its Origin: the protection against DNS rebinding for a server
	// that listens on a non-loopback address, where the default check
	// (which refuses only a non-loopback Host on a loopback address) cannot
	// tell a rebinding attack from a legitimate name. With AllowedHosts the
	// loopback rule is replaced by the list. It applies before CheckOrigin,
	// when that is set too. The TypeScript and Python SDKs have the same
	// option.
	AllowedHosts []string

	// AllowedOrigins lists the origins ("https://app.example", scheme, host
	// and port, no path) whose cross-origin browser requests are accepted;
	// a same-origin request is always accepted. Every other request with an
	// Origin, or with a Sec-Fetch-Site other than same-origin or none, is
	// refused with 403. It is part of the default check: setting it with
	// CheckOrigin is an error of New.
	AllowedOrigins []string

	// Authenticate, if set, authenticates every listen before its body is
	// read. Its result is handed to the Source as listen.Request.Auth. An
	// error refuses the request with 401 and -32600 "Unauthorized"; return
	// an *AuthError to choose the status (such as 403) and add headers
	// (such as WWW-Authenticate).
	Authenticate func(r *http.Request) (auth any, err error)

	// Expiry, if set, returns when the stream of a listen must end, given
	// what Authenticate returned for it (nil without Authenticate): the
	// expiry of the credential it was opened with, such as a bearer token's
	// exp. The zero time means never. It is called once per listen, right
	// after Authenticate, and must be safe for concurrent use. A listen
	// whose expiry has already passed is refused like a failed
	// Authenticate (401, -32600 "Unauthorized", cause listen.ErrExpired); an
	// admitted stream is ended when its expiry passes (its subscription's
	// listen.Request.Expiry): it is sent the early ending of an expired
	// credential (by default the completion result with the reason
	// "expired"; see listen.Options.EndWithError), then closed with reason
	// ErrExpired (listen.ErrExpired), so its client re-listens with a fresh
	// credential. Each such stream holds one runtime timer, and no
	// goroutine, until then.
	Expiry func(r *http.Request, auth any) time.Time

	// RequireHeaders makes the MCP-Protocol-Version and Mcp-Method headers
	// mandatory, as MCP 2026-07-28 requires of clients: a listen without one
	// of them is refused with 400 and -32020. By default a missing header is
	// accepted; a present one must always match the body.
	RequireHeaders bool

	// NoTakeover keeps HTTP/1.x streams inside net/http. By default, once a
	// listen is open, the Handler takes over its HTTP/1.x connection
	// (http.Hijacker) and writes the response itself: the status line and
	// headers, then raw SSE events, the body ending when the connection
	// closes (Connection: close, no chunked encoding). The request's
	// goroutine and net/http's per-connection buffers (about 12 KB) are then
	// freed for the life of the stream; the stream runs on the Handler's
	// goroutines (on Linux, a hub stream has none while idle: see the
	// Handler, "Goroutines and ownership"). HTTP/2 streams,
	// and ResponseWriters that cannot be hijacked, always stay inside
	// net/http.
	NoTakeover bool

	// OnKeepAlive, if set, is called after each keep-alive comment was
	// written to a stream (see KeepAlive), on the goroutine that serves the
	// stream: on Linux, for a taken-over hub stream, that is a writer loop
	// shared by many streams, so it must return quickly. A panic in it is
	// recovered and ignored.
	OnKeepAlive func(sub *listen.Subscription)
}

// AuthError lets Options.Authenticate choose how a refused request is
// answered.
type AuthError struct {
	// Status is the HTTP status; zero means 401 Unauthorized.
	Status int
	// Header holds headers to add to the response, such as
	// WWW-Authenticate.
	Header http.Header
	// Err is the underlying error, for OnRefuse and logs; it is not sent.
	Err error
}

// Error describes the refusal for logs; the client is sent only
// "Unauthorized".
func (e *AuthError) Error() string {
	if e.Err == nil {
		return "streamhttp: authentication failed"
	}
	return "streamhttp: authentication failed: " + e.Err.Error()
}

// Unwrap returns Err.
func (e *AuthError) Unwrap() error { return e.Err }

// ErrInvalidOptions matches every error New returns for invalid Options.
var ErrInvalidOptions = errors.New("streamhttp: invalid options")

// withDefaults returns a copy of o with defaults filled in and the mutable
// parts (capabilities, version list) copied, or an error matching
// ErrInvalidOptions that names the first invalid field.
func withDefaults(o Options) (Options, error) {
	for _, f := range []struct {
		name     string
		negative bool
		value    any
	}{
		{"MaxBodyBytes", o.MaxBodyBytes < 0, o.MaxBodyBytes},
		{"ReadTimeout", o.ReadTimeout < 0, o.ReadTimeout},
		{"KeepAlive", o.KeepAlive < 0, o.KeepAlive},
		{"WriteTimeout", o.WriteTimeout < 0, o.WriteTimeout},
	} {
		if f.negative {
			return Options{}, fmt.Errorf("%w: %s must not be negative (zero means the default), got %v", ErrInvalidOptions, f.name, f.value)
		}
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = defaultMaxBodyBytes
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = defaultReadTimeout
	}
	if o.KeepAlive == 0 {
		o.KeepAlive = defaultKeepAlive
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = defaultWriteTimeout
	}
	if o.CheckOrigin != nil && len(o.AllowedOrigins) > 0 {
		return Options{}, fmt.Errorf("%w: AllowedOrigins is part of the default origin check: it cannot be combined with CheckOrigin", ErrInvalidOptions)
	}
	o.AllowedHosts = slices.Clone(o.AllowedHosts)
	o.AllowedOrigins = slices.Clone(o.AllowedOrigins)
	return o, nil
}
