//go:build !linux

package fastpath

import (
	"context"
	"net"
)

// Fanout is the fast path, which needs epoll and raw non-blocking writes:
// Linux only. Elsewhere New returns nil, and every stream keeps a goroutine
// of its own.
type Fanout struct{}

// New returns nil: there is no fast path here.
func New(Options) *Fanout { return nil }

// Stream returns nil.
func (f *Fanout) Stream(net.Conn, any, *[]byte, any) *Stream { return nil }

// Wait returns nil.
func (f *Fanout) Wait(context.Context) error { return nil }

// Count returns 0.
func (f *Fanout) Count() int { return 0 }

// Trips returns 0, 0.
func (f *Fanout) Trips() (trips, files uint64) { return 0, 0 }

// Stream is a fast stream: never, here.
type Stream struct{}

// Run does nothing.
func (*Stream) Run() {}

// Cancel does nothing.
func (*Stream) Cancel(error) {}

// Cause returns nil.
func (*Stream) Cause() error { return nil }
