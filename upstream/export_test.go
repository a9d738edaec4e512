package upstream

import "github.com/mcplisten/listen"

// The errors the tests tell apart.
var (
	ErrSilent     = errSilent
	ErrTooLarge   = errTooLarge
	ErrAckTimeout = errAckTimeout
)

// Listener is what a Feed keeps each of its listens open with; the tests
// drive it directly.
type Listener = listener

// ListenerConfig configures NewListener.
type ListenerConfig struct {
	ListenerOptions
	Filter         listen.Filter
	OnNotification func(Notification)
	OnAck          func(Ack)
	OnLoss         func(error)
}

// NewListener starts a listener on t.
func NewListener(t Transport, c ListenerConfig) *Listener {
	return newListener(t, listenerConfig{ListenerOptions: c.ListenerOptions, filter: c.Filter,
		onNotification: c.OnNotification, onAck: c.OnAck, onLoss: c.OnLoss})
}
