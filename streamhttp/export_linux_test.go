package streamhttp

// SlowPathTrips returns how many times h's fast streams were handed to a
// slow path, and how many descriptors the slow path registered with Go's
// poller meanwhile (Linux; 0, 0 elsewhere).
func SlowPathTrips(h *Handler) (trips, registrations uint64) {
	if h.fast == nil {
		return 0, 0
	}
	return h.fast.trips.Load(), h.fast.files.Load()
}
