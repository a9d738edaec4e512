package cluster

import "errors"

var (
	// ErrInvalidOptions matches every error NewNode returns for invalid
	// Options.
	ErrInvalidOptions = errors.New("cluster: invalid options")
	// ErrTooLarge is returned by Publish (the hub's, through the node) for
	// an event whose envelope is larger than the node's limit
	// (Options.MaxMessageBytes, or the broker's when that is smaller).
	// Nothing was published.
	ErrTooLarge = errors.New("cluster: event envelope too large")
	// ErrEncode is returned by Publish for a valid event that cannot be put
	// on the wire: its Payload does not encode as JSON. Nothing was
	// published.
	ErrEncode = errors.New("cluster: event cannot be encoded")
	// ErrClosed is returned by Node.Resync after Close.
	ErrClosed = errors.New("cluster: node closed")
)
