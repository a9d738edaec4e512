package fastpath

// Idle reports whether fs waits for its next event with no loop or slow
// path on it (its Poller, and so its hub listener, armed).
func (fs *Stream) Idle() bool { return fs.state.Load() == stateIdle }
