package gosdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/stdio"
)

// StdioOptions configure Serve and Run.
type StdioOptions struct {
	// Options configure the Bridge: the hub, listen.Options (Extensions,
	// CanRead), the logger.
	Options
	// Stdio configures the listen multiplexer and the connection (limits,
	// write timeout, hooks; see stdio.Options). Serve sets its Listen to
	// Bridge.ListenOptions (built from Options.Listen), its
	// SupportedVersions to the go-sdk server's and ForwardOtherVersions to
	// true; Handler is not used (every message that is not a listen goes to
	// the go-sdk). Its bounds hold for the go-sdk's traffic too: MaxLineBytes
	// bounds every input line (a longer one is never buffered past the limit
	// and is answered with the multiplexer's -32600 error; the connection
	// goes on), and MaxInFlight the requests the go-sdk is handling and the
	// messages waiting for it.
	Stdio stdio.Options
	// ShutdownTimeout bounds the drain when ctx ends: every open listen is
	// sent notifications/cancelled and its completion result (see the stdio
	// package) within it. Zero means 5 s.
	ShutdownTimeout time.Duration
}

// Run serves server over the process's standard input and output: Serve
// with os.Stdin and os.Stdout. Log to standard error only: anything else
// written to standard output corrupts the connection (and, while Run runs,
// a Write to os.Stdout may fail with EAGAIN: see stdio.Options.BlockingFiles).
func Run(ctx context.Context, server *mcp.Server, opts StdioOptions) error {
	return Serve(ctx, server, os.Stdin, os.Stdout, opts)
}

// Serve runs one MCP stdio connection for a go-sdk server over r and w
// (newline-delimited JSON-RPC): one call adds subscriptions/listen to a
// go-sdk server over stdio, with the go-sdk's own changes reaching every
// listen that asked for them (see Bridge).
//
// The connection is a stdio.Conn (see the stdio package) shared by this
// library's listen multiplexer and the go-sdk server. Every
// subscriptions/listen request naming protocol version 2026-07-28, and every
// notifications/cancelled naming one of those, is served by the multiplexer
// (a stdio.Server serving many listens at once from the Bridge's hub;
// cancelling one ends only that one). Every other message, including a
// listen naming another version or none (so that the -32022 answer is the
// go-sdk's own), goes to the go-sdk server, connected with Server.Connect
// over a transport on the Conn. Both write through the Conn's one writer,
// one whole line per message: messages never interleave within a line, and
// what the go-sdk sends on its own (logging and progress notifications,
// requests to the client) goes out as it is.
//
// The go-sdk answers a request with the id as it decoded it (an id -0 as 0,
// "\u0041" as "A", an integer beyond 2^53 rounded); Serve gives the answer
// the client's own id token back. A message the go-sdk cannot decode, or
// reads differently from the multiplexer (another method, or a request
// taken for a response, through keys that differ in case or repeat), does
// not reach it: a request is answered with -32600 "Invalid request: the
// server cannot decode it" (MsgUndecodable), anything else is dropped. A
// request whose id the go-sdk would read as that of a request it is still
// handling ("\u0041" beside "A") is answered with -32600 "Duplicate
// in-flight request id", as the multiplexer answers an id in flight. So,
// while the connection is up, the go-sdk answers every request it is
// handed, and its unit of stdio.Options.MaxInFlight comes back.
//
// Serve returns when r ends (EOF, then nil; or a read error, returned): open
// listens are closed without a terminal message, as the stdio package does,
// the go-sdk ends its session once its handlers returned (it writes no more
// answers once its input ended, as over its own stdio transport), and the
// Bridge is closed; or when ctx ends: every open listen is drained (see
// StdioOptions.ShutdownTimeout), the go-sdk session is closed, and Serve
// returns ctx's cause. It also returns when writing w failed or timed out,
// with that error (see stdio.Server.Serve).
//
// Goroutines: Serve runs the Conn's Serve on a goroutine of its own (with
// its reader and writer goroutines and one per listen; see the stdio
// package, including the Read or Write it may leave behind when it cannot
// interrupt it) and the go-sdk session, whose goroutines are the go-sdk's;
// all of them have returned when Serve returns.
func Serve(ctx context.Context, server *mcp.Server, r io.Reader, w io.Writer, opts StdioOptions) error {
	if opts.ShutdownTimeout < 0 {
		return errors.New("gosdk: negative ShutdownTimeout")
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
	so.ForwardOtherVersions = true
	so.Handler = nil
	mux, err := stdio.New(b.Source(), so)
	if err != nil {
		return fmt.Errorf("gosdk: %w", err)
	}
	conn := mux.NewConn(r, w)
	ss, err := server.Connect(ctx, newSDKConn(conn, b.log), nil)
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("gosdk: connecting the go-sdk server: %w", err)
	}

	served := make(chan error, 1)
	go func() { served <- conn.Serve(context.WithoutCancel(ctx)) }()
	var result error
	select {
	case result = <-served:
		// The input ended (the go-sdk read io.EOF and closed the Conn once
		// idle), or a write failed.
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.ShutdownTimeout)
		_ = mux.Shutdown(sctx)
		cancel()
		<-served
		result = context.Cause(ctx)
	}
	_ = ss.Close()
	_ = ss.Wait()
	return result
}

// MsgUndecodable is the message of the -32600 error Serve answers a request
// with when the go-sdk cannot decode it, or reads it differently from the
// multiplexer.
const MsgUndecodable = "Invalid request: the server cannot decode it"

// sdkConn is the go-sdk server's mcp.Transport and mcp.Connection on a
// stdio.Conn: Read decodes what the Conn hands its peer, Write encodes what
// the go-sdk sends, Close closes the Conn.
type sdkConn struct {
	c   *stdio.Conn
	log *slog.Logger

	mu sync.Mutex
	// pending holds the requests the go-sdk is handling: the id as the
	// go-sdk encodes it (echo) to the client's token for it. The two differ
	// when the go-sdk decodes an id its own way (-0 as 0, "\u0041" as "A",
	// an integer beyond 2^53 rounded). An entry lives until the go-sdk
	// answers; the Conn bounds the requests in flight
	// (stdio.Options.MaxInFlight).
	pending map[string]json.RawMessage
}

func newSDKConn(c *stdio.Conn, log *slog.Logger) *sdkConn {
	return &sdkConn{c: c, log: log, pending: make(map[string]json.RawMessage)}
}

// Connect implements mcp.Transport.
func (s *sdkConn) Connect(context.Context) (mcp.Connection, error) { return s, nil }

// Read implements mcp.Connection: the next message the go-sdk can take.
func (s *sdkConn) Read(ctx context.Context) (sdkjsonrpc.Message, error) {
	for {
		raw, err := s.c.ReadMessage(ctx)
		if err != nil {
			return nil, err
		}
		msg, err := sdkjsonrpc.DecodeMessage(raw)
		if err == nil {
			err = s.take(raw, msg)
		}
		if err != nil {
			s.refuse(ctx, raw, err)
			continue
		}
		return msg, nil
	}
}

// errDuplicate refuses a request whose id the go-sdk reads as the id of a
// request it is handling.
var errDuplicate = errors.New("the id of a request in flight, as the go-sdk reads it")

// take checks a message the go-sdk decoded against the multiplexer's
// reading of raw (stdio forwarded it having read it with jsonrpc.ParseMessage,
// which matches keys as encoding/json does; the go-sdk matches them
// exactly), so that every request the multiplexer holds in flight is a
// request the go-sdk answers, under its own id, and records the request.
func (s *sdkConn) take(raw json.RawMessage, msg sdkjsonrpc.Message) error {
	m, err := jsonrpc.ParseMessage(raw)
	req, isReq := msg.(*sdkjsonrpc.Request)
	switch {
	case !isReq && err == nil:
		return errors.New("a request the go-sdk reads as a response")
	case !isReq:
		return nil // a response to one of the go-sdk's requests
	case err != nil:
		return err
	case m.Method != req.Method || m.HasID != req.IsCall():
		return fmt.Errorf("read as %q by the go-sdk, %q by the multiplexer", req.Method, m.Method)
	case req.Method == spec.MethodListen && namesProtocolVersion(req.Params):
		// The multiplexer read another version: the go-sdk must not serve
		// a 2026-07-28 listen itself.
		return errors.New("a 2026-07-28 listen read differently")
	case !m.HasID:
		return nil
	}
	echo, err := encodeID(req.ID)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.pending[echo]; dup {
		return errDuplicate
	}
	s.pending[echo] = json.RawMessage(m.ID.Raw())
	return nil
}

// encodeID returns id as the go-sdk writes it.
func encodeID(id sdkjsonrpc.ID) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(id.Raw()); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// namesProtocolVersion reports whether params name protocol version
// 2026-07-28 in _meta, keys matched exactly (as the go-sdk matches them).
func namesProtocolVersion(params json.RawMessage) bool {
	var p, meta map[string]json.RawMessage
	var v string
	return json.Unmarshal(params, &p) == nil && json.Unmarshal(p["_meta"], &meta) == nil &&
		json.Unmarshal(meta[spec.MetaProtocolVersion], &v) == nil && v == spec.ProtocolVersion
}

// refuse answers a request the go-sdk cannot take, which frees its id on
// the Conn: -32600 "Duplicate in-flight request id" when the go-sdk would
// read its id as that of a request it is handling, -32600 MsgUndecodable
// otherwise. Anything else is dropped.
func (s *sdkConn) refuse(ctx context.Context, raw json.RawMessage, why error) {
	m, err := jsonrpc.ParseMessage(raw)
	if err != nil || !m.HasID {
		s.log.Debug("gosdk: a message the go-sdk cannot take dropped", "err", why)
		return
	}
	s.log.Debug("gosdk: a request the go-sdk cannot take refused", "id", m.ID.Raw(), "err", why)
	msg := MsgUndecodable
	if errors.Is(why, errDuplicate) {
		msg = spec.MsgDuplicateID
	}
	answer := jsonrpc.ErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, msg))
	if err := s.c.WriteMessage(context.WithoutCancel(ctx), answer); err != nil {
		s.log.Debug("gosdk: refusal not written", "err", err)
	}
}

// Write implements mcp.Connection: one message, written as one line by the
// Conn's writer. An answer carries the client's id token.
func (s *sdkConn) Write(ctx context.Context, msg sdkjsonrpc.Message) error {
	b, err := sdkjsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	if resp, ok := msg.(*sdkjsonrpc.Response); ok && resp.ID.IsValid() {
		if echo, err := encodeID(resp.ID); err == nil {
			s.mu.Lock()
			token, ok := s.pending[echo]
			delete(s.pending, echo)
			s.mu.Unlock()
			if ok && string(token) != echo {
				if b, err = withID(b, []byte(echo), token); err != nil {
					return err
				}
			}
		}
	}
	return s.c.WriteMessage(ctx, b)
}

// withID returns b, the go-sdk's encoding of a response whose id it encodes
// as echo, with the id token instead. The go-sdk writes the id second,
// after "jsonrpc": that is replaced in place, anything else is re-encoded.
func withID(b, echo []byte, token json.RawMessage) ([]byte, error) {
	const head = `{"jsonrpc":"2.0","id":`
	if rest, ok := bytes.CutPrefix(b, append([]byte(head), echo...)); ok && len(rest) > 0 && (rest[0] == ',' || rest[0] == '}') {
		out := make([]byte, 0, len(head)+len(token)+len(rest))
		return append(append(append(out, head...), token...), rest...), nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["id"] = token
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}

// Close implements mcp.Connection: it closes the Conn (see stdio.Conn.Close).
func (s *sdkConn) Close() error { return s.c.Close() }

// SessionID implements mcp.Connection.
func (s *sdkConn) SessionID() string { return "" }
