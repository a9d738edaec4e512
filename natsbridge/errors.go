package natsbridge

import "errors"

var (
	// ErrInvalidOptions matches every error New returns for invalid Options.
	ErrInvalidOptions = errors.New("natsbridge: invalid options")
	// ErrClosed is returned by Publish and its helpers after Close.
	ErrClosed = errors.New("natsbridge: bridge closed")
	// ErrTooLarge is returned by Publish for an event whose envelope is
	// larger than the bridge's limit (Options.MaxMessageBytes, or the NATS
	// server's max_payload when that is smaller). Nothing was published.
	ErrTooLarge = errors.New("natsbridge: event envelope too large")
	// ErrEncode is returned by Publish for a valid event that cannot be put
	// on the wire: its Payload does not encode as JSON. Nothing was
	// published.
	ErrEncode = errors.New("natsbridge: event cannot be encoded")
)
