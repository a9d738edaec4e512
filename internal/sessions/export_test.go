package sessions

// The exact messages and the header name, for the tests.
const (
	HeaderSessionID            = headerSessionID
	MsgSessionNotFound         = msgSessionNotFound
	MsgTooManyGetStreams       = msgTooManyGetStreams
	MsgTooManyClientGetStreams = msgTooManyClientGetStreams
)
