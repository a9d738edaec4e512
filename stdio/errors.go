package stdio

import "errors"

// Errors returned by Serve and Shutdown. Match them with errors.Is.
var (
	// ErrServerClosed is returned by Serve after Shutdown drained its
	// connection, and at once by Serve calls made after Shutdown.
	ErrServerClosed = errors.New("stdio: server closed")
	// ErrWriteTimeout is matched by the error Serve returns when a write did
	// not complete within Options.WriteTimeout. The connection is then gone:
	// every subscription was closed as listen.Disconnected with this cause.
	ErrWriteTimeout = errors.New("stdio: write timed out")
	// ErrConnClosed is returned by a Conn's ReadMessage and WriteMessage
	// after its Close.
	ErrConnClosed = errors.New("stdio: connection closed")
	// ErrInvalidOptions is matched by the error New returns for invalid
	// options; its text names the field.
	ErrInvalidOptions = errors.New("stdio: invalid options")
)

// Exact messages of the errors this transport writes itself. The listen
// core's messages ("Duplicate in-flight request id", "Server subscription capacity exhausted",
// "Method not found: subscriptions/listen" and the -32602 messages of
// the listen params checks) are used as they are.
const (
	// msgLineTooLong is the message of the -32600 error (without an id)
	// that answers an input line longer than Options.MaxLineBytes.
	msgLineTooLong = "Invalid request: message exceeds the maximum line length"
	// msgInternalError is the message of the -32603 error that answers a
	// request whose handler panicked or returned a result that is not JSON.
	msgInternalError = "Internal error"
	// shutdownReason is the reason of the notifications/cancelled that
	// precedes the completion result of each listen during a drain (see
	// Options.OmitShutdownCancelled).
	shutdownReason = "Server shutdown"
)
