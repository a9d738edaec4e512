package upstream

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcplisten/listen/jsonrpc"
)

// Transport opens listens on one upstream server. HTTP (Streamable HTTP)
// and Stdio (a process's standard input and output, or any pair of
// streams) are the two of MCP; implement it to reach an upstream some
// other way.
type Transport interface {
	// Listen sends request, one JSON-RPC subscriptions/listen request
	// whose id is id, and returns the messages the upstream answers to it,
	// in order. It returns once the request is sent (HTTP: once the
	// response's headers arrived), or with an error: a *jsonrpc.Error the
	// upstream answered instead of a stream, or an error wrapping
	// ErrDropped when it could not be reached. ctx bounds only the
	// sending; the Messages live until their Close.
	Listen(ctx context.Context, id jsonrpc.ID, request []byte) (Messages, error)
}

// Messages are the messages of one listen on its transport.
type Messages interface {
	// Next returns the next JSON-RPC message of the listen (its bytes are
	// the caller's). It returns an error wrapping ErrDropped when the
	// connection ended or failed before the listen's terminal message
	// (ErrSilent when nothing came for the transport's idle timeout),
	// ErrTooLarge for a message over the transport's bound, and ErrClosed
	// after Close. One goroutine calls Next at a time.
	Next() ([]byte, error)
	// Close ends the listen (HTTP: closes the response, which cancels it;
	// stdio: sends notifications/cancelled) and releases a blocked Next.
	// It is idempotent and safe to call concurrently with Next.
	Close()
}

var (
	// ErrDropped: the connection to the upstream was lost, or could not
	// be made, before the listen's terminal message (no completion, no
	// error): a re-listen is due.
	ErrDropped = errors.New("upstream: connection dropped")
	// ErrSilent: nothing, not even a keep-alive, came from the upstream
	// for the transport's idle timeout; the connection is taken for lost.
	// It wraps ErrDropped.
	ErrSilent = fmt.Errorf("%w: no message or keep-alive within the idle timeout", ErrDropped)
	// ErrCompleted: the upstream ended the listen gracefully, with its
	// completion result (or, on stdio, notifications/cancelled).
	ErrCompleted = errors.New("upstream: listen completed by the upstream")
	// ErrProtocol: the upstream broke the listen protocol (a message that
	// is not JSON-RPC, an acknowledgement missing or not a subset of the
	// filter asked for, a message of another subscription). The
	// listen is closed.
	ErrProtocol = errors.New("upstream: protocol error")
	// ErrTooLarge: a message was larger than the transport's bound. It
	// wraps ErrProtocol.
	ErrTooLarge = fmt.Errorf("%w: message too large", ErrProtocol)
	// ErrClosed: the listen (or the Listener) was closed by its owner.
	ErrClosed = errors.New("upstream: closed")
	// ErrAckTimeout: the acknowledgement did not come within the ack
	// timeout. It wraps ErrDropped.
	ErrAckTimeout = fmt.Errorf("%w: no acknowledgement in time", ErrDropped)
)

// dropped wraps err (from a connection) as ErrDropped, keeping it.
func dropped(err error) error {
	if err == nil || errors.Is(err, ErrDropped) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrDropped, err)
}
