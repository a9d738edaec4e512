//go:build !linux

package streamhttp

import "context"

// fanout is the fast path of taken-over streams, which needs epoll and raw
// non-blocking writes: Linux only. Elsewhere every taken-over stream keeps
// its own goroutine (takenOver.run).
type fanout struct{}

func newFanout(*Handler) *fanout { return nil }

func (f *fanout) start(*Handler, *takenOver) bool { return false }

func (f *fanout) wait(context.Context) error { return nil }

func (f *fanout) count() int { return 0 }

// fastStream is a stream on the fanout: never, here.
type fastStream struct{}

func (*fastStream) cancel(error) {}

func (*fastStream) ended() error { return nil }
