package upstream

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcplisten/listen/jsonrpc"
)

// Transport reaches one upstream server: HTTP (Streamable HTTP) or Stdio
// (a process's standard input and output, or any pair of streams), the two
// transports of MCP.
type Transport interface {
	// open sends request, one JSON-RPC subscriptions/listen request whose
	// id is id, and returns the messages the upstream answers to it, in
	// order. It returns once the request is sent (HTTP: once the
	// response's headers arrived), or with an error: a *jsonrpc.Error the
	// upstream answered instead of a stream, or an error wrapping
	// ErrDropped when it could not be reached. ctx bounds only the
	// sending; the messages live until their Close.
	open(ctx context.Context, id jsonrpc.ID, request []byte) (messages, error)
}

// messages are the messages of one listen on its transport.
type messages interface {
	// Next returns the next JSON-RPC message of the listen (its bytes are
	// the caller's). It returns an error wrapping ErrDropped when the
	// connection ended or failed before the listen's terminal message
	// (errSilent when nothing came for the transport's idle timeout),
	// errTooLarge for a message over the transport's bound, and ErrClosed
	// after Close. One goroutine calls Next at a time.
	Next() ([]byte, error)
	// Close ends the listen (HTTP: closes the response, which cancels it;
	// stdio: sends notifications/cancelled) and releases a blocked Next.
	// It is idempotent and safe to call concurrently with Next.
	Close()
}

// How a listen ends, besides the upstream's *jsonrpc.Error; match them
// with errors.Is.
var (
	// ErrDropped: the connection to the upstream was lost, or could not
	// be made, before the listen's terminal message (no completion, no
	// error): a re-listen is due. The error's text says when it was a
	// silence (nothing, not even a keep-alive, within the idle timeout)
	// or an acknowledgement that did not come in time.
	ErrDropped = errors.New("upstream: connection dropped")
	// ErrCompleted: the upstream ended the listen gracefully, with its
	// completion result (or, on stdio, notifications/cancelled).
	ErrCompleted = errors.New("upstream: listen completed by the upstream")
	// ErrProtocol: the upstream broke the listen protocol (a message that
	// is not JSON-RPC or larger than the transport's bound, an
	// acknowledgement missing or not a subset of the filter asked for, a
	// message of another subscription). The listen is closed.
	ErrProtocol = errors.New("upstream: protocol error")
	// ErrClosed: the listen (or the Feed) was closed by its owner.
	ErrClosed = errors.New("upstream: closed")
)

var (
	// errSilent: nothing, not even a keep-alive, came from the upstream
	// for the transport's idle timeout; the connection is taken for lost.
	errSilent = fmt.Errorf("%w: no message or keep-alive within the idle timeout", ErrDropped)
	// errTooLarge: a message was larger than the transport's bound.
	errTooLarge = fmt.Errorf("%w: message too large", ErrProtocol)
	// errAckTimeout: the acknowledgement did not come within the ack
	// timeout.
	errAckTimeout = fmt.Errorf("%w: no acknowledgement in time", ErrDropped)
)

// dropped wraps err (from a connection) as ErrDropped, keeping it.
func dropped(err error) error {
	if err == nil || errors.Is(err, ErrDropped) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrDropped, err)
}
