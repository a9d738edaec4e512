package streamhttp

import "net/http"

// Portable makes h serve every stream the portable way, as where the fast
// path is not available (a goroutine per taken-over stream), so that tests
// cover both paths.
func Portable(h *Handler) { h.fast = nil }

// FastStreams returns the number of streams h serves on its fast path.
func FastStreams(h *Handler) int {
	if h.fast == nil {
		return 0
	}
	return h.fast.count()
}

// HasFastPath reports whether h has a fast path (Linux).
func HasFastPath(h *Handler) bool { return h.fast != nil }

// SlowPathTrips returns how many times h's fast streams were handed to a
// slow path, and how many descriptors the slow path registered with Go's
// poller meanwhile (Linux; 0, 0 elsewhere).
func SlowPathTrips(h *Handler) (trips, registrations uint64) {
	if h.fast == nil {
		return 0, 0
	}
	return h.fast.Trips()
}

// The package's exact messages, header names and defaults, for the tests.
const (
	MsgMethodNotAllowed   = msgMethodNotAllowed
	MsgBodyTooLarge       = msgBodyTooLarge
	MsgBodyTimeout        = msgBodyTimeout
	HeaderProtocolVersion = headerProtocolVersion
	HeaderMethod          = headerMethod
	DefaultMaxBodyBytes   = defaultMaxBodyBytes
	DefaultReadTimeout    = defaultReadTimeout
	DefaultKeepAlive      = defaultKeepAlive
	DefaultWriteTimeout   = defaultWriteTimeout
)

// IsListen is isListen, for the tests.
func IsListen(r *http.Request) bool { return isListen(r) }
