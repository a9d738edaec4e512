//go:build !linux

package streamhttp

import "context"

// fanout is the fast path of taken-over streams, which needs epoll and raw
// non-blocking writes: Linux only. Elsewhere every taken-over stream keeps
// its own goroutine (takenOver.run).
type fanout struct{}

func newFanout(Options) *fanout { return nil }

func (f *fanout) start(*Handler, *takenOver) bool { return false }

func (f *fanout) wait(context.Context) error { return nil }

func (f *fanout) count() int { return 0 }
