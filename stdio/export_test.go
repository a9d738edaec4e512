package stdio

// The package's exact messages and defaults, for the tests.
const (
	MsgLineTooLong      = msgLineTooLong
	MsgInternalError    = msgInternalError
	ShutdownReason      = shutdownReason
	DefaultMaxInFlight  = defaultMaxInFlight
	DefaultMaxLineBytes = defaultMaxLineBytes
	DefaultWriteTimeout = defaultWriteTimeout
)
