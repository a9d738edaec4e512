// Package valid lets a stream of this module tell the core that every event
// it hands out was validated (listen.Event.Validate) when it was published,
// so that a subscription does not validate it again for each listener: the
// hub validates once per Publish. Only the module's packages can import it,
// so no other stream can claim it.
package valid

// Stream is implemented by such a stream. EventsValidated reports whether
// its events are validated. (The core looks through its own stream
// wrappers itself; otel's wrapper passes on the word of the stream it
// wraps.)
type Stream interface{ EventsValidated() bool }

// Validated reports whether the events of stream, which may be any value,
// were validated when they were published.
func Validated(stream any) bool {
	v, ok := stream.(Stream)
	return ok && v.EventsValidated()
}
